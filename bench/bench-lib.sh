# bench-lib.sh - what the bench scripts share.  Sourced, never run:
#
#	prog=bench-NAME
#	. "$top/bench/bench-lib.sh"
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
# bench_listening PORT: a listener on 127.0.0.1:PORT (or on its IPv4-mapped
# IPv6 spelling, as bench-gateway's gateway), seen without
# connecting (a connection would count as a request to some servers).
bench_listening() {
	awk -v p=":$(printf '%04X' "$1")" '
	    $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
	    END { exit !f }' /proc/net/tcp /proc/net/tcp6
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

# bench_wrk_scripts: $dir/report.lua, wrk's summary as one line
# ("RESULT requests microseconds p99-us errors", as proxy-bench.sh's
# report.lua gives it), and $dir/spread.lua, the same with one Host a
# thread (a.bench, b.bench).
bench_wrk_scripts() {
	cat >"$dir/report.lua" <<'LUA'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %.0f %.0f %.0f %d\n", summary.requests,
    summary.duration, latency:percentile(99),
    e.status + e.connect + e.read + e.write + e.timeout))
end
LUA
	{
		cat <<'LUA'
local n = 0
setup = function(thread)
  thread:set("host", n % 2 == 0 and "a.bench" or "b.bench")
  n = n + 1
end
init = function(args)
  wrk.headers["Host"] = host
end
LUA
		cat "$dir/report.lua"
	} >"$dir/spread.lua"
}

# bench_wrk CASE PORT SECONDS: wrk's output for one run of CASE through
# 127.0.0.1:PORT, stopped should it hang.  The cases, as proxy-bench.sh
# has them (wrk -t1 -c16 unless said): small:16 GET / (6 bytes),
# keep-alive; 64k:16 GET /64k; close:16 GET / with "Connection: close";
# spread:128 GET /, -t2 -c128, one Host a thread (spread.lua).
bench_wrk() {
	_case=$1 _url=http://127.0.0.1:$2/
	set -- timeout -k 2 $(($3 + 15)) wrk --timeout 2s -d "$3s"
	case $_case in
	small:16) "$@" -t1 -c16 -s "$dir/report.lua" "$_url" ;;
	64k:16) "$@" -t1 -c16 -s "$dir/report.lua" "${_url}64k" ;;
	close:16) "$@" -t1 -c16 -s "$dir/report.lua" \
	    -H "Connection: close" "$_url" ;;
	spread:128) "$@" -t2 -c128 -s "$dir/spread.lua" "$_url" ;;
	esac
}

# bench_run CASE ROUND TARGET PORT PGID WARMUP SECONDS FILE: one measured
# run of CASE through PORT after WARMUP seconds of the same load
# unrecorded (0: none); appends to FILE "case round target req/s p99-us
# errors ticks requests steal all-ticks", ticks being the CPU of the
# process group PGID during the run, steal and all-ticks the host's.
bench_run() {
	[ "$6" -eq 0 ] || bench_wrk "$1" "$4" "$6" >/dev/null 2>&1 || :
	_before="$(bench_steal) $(bench_ticks "$5")"
	bench_wrk "$1" "$4" "$7" >"$dir/wrk.out" 2>&1 || :
	# $9 steal, ${10} all ticks, ${11} the group's ticks before;
	# ${12}-${14} after
	set -- "$@" $_before $(bench_steal) $(bench_ticks "$5")
	awk -v c="$1" -v r="$2" -v t="$3" -v cpu=$((${14} - ${11})) \
	    -v st=$((${12} - $9)) -v all=$((${13} - ${10})) '
	    /^RESULT / { req = $2; us = $3; p99 = $4; err = $5; ok = 1 }
	    END {
		if (!ok) exit 1
		printf "%s %s %s %.1f %d %d %d %d %d %d\n", c, r, t,
		    req / (us / 1e6), p99, err, cpu, req, st, all
	    }' "$dir/wrk.out" >>"$8" || {
		echo "$prog: wrk gave no result for $3 at $1:" >&2
		cat "$dir/wrk.out" >&2
		exit 70
	}
}
