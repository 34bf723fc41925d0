# bench-lib.sh - what the bench scripts share.  Sourced, never run:
#
#	prog=bench-NAME
#	. "$top/scripts/bench-lib.sh"
#
# It defines functions and nothing else; bench_scratch sets the scratch
# directory ($dir) and the exit trap that stops what the script started.
# Everything listens on 127.0.0.1; processes are stopped by their pid or
# process group, never by name.

# bench_need TOOL...: each is on PATH, or the script exits 69.
bench_need() {
	for tool in "$@"; do
		command -v "$tool" >/dev/null || {
			echo "$prog: $tool not found (scripts/deps --bench)" >&2
			exit 69
		}
	done
}

# bench_scratch: a scratch directory in $dir that instances, which run as
# nobody, may enter; on exit, bench_stop stops $groups (process groups)
# and $pids, and removes it.  A script that leaves more behind defines
# bench_stop_more, which bench_stop calls before removing $dir.
bench_scratch() {
	dir=$(mktemp -d "/tmp/hk-${prog#bench-}.XXXXXX")
	chmod 755 "$dir"
	pids= groups=
	trap bench_stop EXIT
	trap 'exit 130' INT TERM
}
bench_stop() {
	for g in $groups; do kill -TERM "-$g" 2>/dev/null || :; done
	for p in $pids; do kill -TERM "$p" 2>/dev/null || :; done
	i=0
	while [ $i -lt 20 ]; do	# up to 2 s for the groups to go
		alive=
		for g in $groups; do
			kill -0 "-$g" 2>/dev/null && alive=1
		done
		[ -n "$alive" ] || break
		sleep 0.1
		i=$((i + 1))
	done
	for g in $groups; do kill -KILL "-$g" 2>/dev/null || :; done
	for p in $pids; do kill -KILL "$p" 2>/dev/null || :; done
	command -v bench_stop_more >/dev/null && bench_stop_more
	rm -rf "$dir"
}

# bench_port: a free TCP port of 127.0.0.1.
bench_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# bench_listening PORT: a listener on 127.0.0.1:PORT, seen without
# connecting (a connection would count as a request to some servers).
bench_listening() {
	awk -v p=":$(printf '%04X' "$1")" '
	    $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
	    END { exit !f }' /proc/net/tcp
}
# bench_wait_listen NAME PORT [LOG]: up to 20 s for NAME to listen on
# PORT; else the end of LOG and exit 69.
bench_wait_listen() {
	i=0
	until bench_listening "$2"; do
		i=$((i + 1))
		[ $i -lt 2000 ] || {
			echo "$prog: $1 did not listen on 127.0.0.1:$2" >&2
			[ -z "${3:-}" ] || tail -n 5 "$3" >&2
			exit 69
		}
		sleep 0.01
	done
}

# bench_nginx_backend PORT: $dir/backend.conf, an nginx that serves GET /
# ("hello\n") and GET /64k (65536 bytes) on 127.0.0.1:PORT, as
# proxy-bench.sh's backend does; run it with nginx -p "$dir" -c ...
bench_nginx_backend() {
	mkdir -p "$dir/tmp" "$dir/www"
	head -c 65536 /dev/zero | tr '\0' x >"$dir/www/64k"
	chmod -R a+rX "$dir/www"
	cat >"$dir/backend.conf" <<EOF
worker_processes 1;
daemon off;
pid $dir/backend.pid;
error_log $dir/backend.err warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  # no sendfile: a 64 KiB response's last bytes would wait on a delayed ACK
  sendfile off;
  tcp_nopush off;
  open_file_cache max=16 inactive=60s;
  open_file_cache_valid 60s;
  server {
    listen 127.0.0.1:$1;
    location = /    { default_type text/plain; return 200 "hello\n"; }
    location = /64k { root $dir/www; default_type application/octet-stream; }
  }
}
EOF
}

# bench_haproxy PORT BACKEND_PORT: $dir/haproxy.cfg, HAProxy as
# proxy-bench.sh sets it up (one thread, keep-alive to the server).
bench_haproxy() {
	cat >"$dir/haproxy.cfg" <<EOF
global
  nbthread 1
  maxconn 4096
defaults
  mode http
  option http-keep-alive
  http-reuse always
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
frontend fe
  bind 127.0.0.1:$1
  default_backend be
backend be
  server s1 127.0.0.1:$2
EOF
}

# bench_ticks PGID: CPU clock ticks used so far by the processes of the
# process group PGID.
bench_ticks() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v g="$1" '
	    { sub(/^.*\) /, ""); if ($3 == g) t += $12 + $13 }
	    END { print t + 0 }'
}
# bench_steal: the steal ticks and all ticks of every CPU since boot.
bench_steal() {
	awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i;
	    print $9, t }' /proc/stat
}
