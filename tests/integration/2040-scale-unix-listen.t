#!/bin/sh
# listen = "unix" with the exec backend: an instance only the gateway
# reaches.  hk-scale binds a Unix socket in runtime_dir/listen (mode 0710,
# hk's own) and hands it over as fd 3 (LISTEN_FDS, no PORT); the gateway
# forwards over it.  Another local user (daemon) cannot connect to the
# socket, nor to the instance over TCP: it holds no TCP socket.  The
# instance's own user (nobody) cannot reach the socket's path either.  A
# stop removes the socket and the next request wakes a new instance on a
# new one; a suspended instance wakes on the same; a restarted hk-scale
# adopts a running one, socket and all.  The Python starter of hk new
# serves such a socket.  hk validate refuses what cannot
# work with it: readiness = "tcp", a port, backend s6 (which keeps TCP:
# hk.toml(5)), an ordinary service.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

command -v runuser >/dev/null || { ok 0 "runuser is installed"; done_testing; }

FN=$GW_FN/scale-http.py
gw_config "max_concurrent_starts = 4"

# try_connect USER PATH: what a connect to the Unix socket PATH does for
# USER: "connected", or the error's name.
try_connect() {
	runuser -u "$1" -- python3 -c 'import errno, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))' "$2"
}
# endpoint SERVICE / pid_of SERVICE: what hk-scale says of its instance
endpoint() { scale_ctl '{"op":"status"}' "services.$1.endpoint"; }
pid_of() { scale_ctl '{"op":"status"}' "services.$1.pid"; }
envof() {	# envof PID NAME: a variable of the process's environment
	tr '\0' '\n' <"/proc/$1/environ" | sed -n "s/^$2=//p"
}
# tcp_sockets PID: how many of PID's open sockets are TCP ones (the
# inodes of /proc/net/tcp and tcp6, any state)
tcp_sockets() {
	_n=0
	for _i in $(ls -l "/proc/$1/fd" 2>/dev/null |
	    sed -n 's/.*socket:\[\([0-9]*\)\]$/\1/p'); do
		awk -v i="$_i" 'NR > 1 && $10 == i { f = 1 } END { exit !f }' \
		    /proc/net/tcp /proc/net/tcp6 && _n=$((_n + 1))
	done
	echo "$_n"
}
svc() {	# svc NAME [serverless lines]
	cat <<APP

[services.$1]
command = ["python3", "$FN"]
public = true
listen = "unix"
[services.$1.environment]
SCALE_TAG = "$1"
[services.$1.serverless]
${2:-}
APP
}

# hk validate: what listen = "unix" cannot do is refused by name.
bad() {	# bad WHAT LINES EXPECTED
	printf 'schema_version = 1\nname = "fn"\n\n[services.b]\ncommand = ["true"]\npublic = true\n%s\n' \
	    "$2" >"$T/bad.toml"
	run hk validate "$T/bad.toml"
	is "$rc $err" "65 $T/bad.toml:$3" "hk validate refuses $1"
}
bad 'listen = "udp"' 'listen = "udp"
[services.b.serverless]' '7: services.b.listen: must be unix or tcp'
bad 'readiness = "tcp" with it' 'listen = "unix"
readiness = "tcp"
[services.b.serverless]' '8: services.b.readiness: tcp says nothing with listen = "unix" (hk'"'"'s socket takes a connect before the command runs): use socket, http:/PATH or notify'
bad 'a port with it' 'listen = "unix"
port = 8080
[services.b.serverless]' '8: services.b.port: not with listen = "unix", which gives the command a socket, not a port'
cp "$T/hakopod.toml" "$T/s6.toml"
echo "s6_scandir = \"$T/scan\"" >>"$T/s6.toml"
printf 'schema_version = 1\nname = "fn"\n\n[services.b]\ncommand = ["true"]\npublic = true\nlisten = "unix"\nbackend = "s6"\n[services.b.serverless]\n' \
    >"$T/bad.toml"
run hk -f "$T/s6.toml" validate "$T/bad.toml"
is "$rc $err" "65 $T/bad.toml:7: services.b.listen: \"unix\" needs backend \"exec\" or \"systemd\", which hand their command the socket: use tcp with \"s6\"" \
    "hk validate refuses it with backend s6"
printf 'schema_version = 1\nname = "fn"\n\n[services.b]\ncommand = ["true"]\nlisten = "unix"\n' \
    >"$T/bad.toml"
run hk validate "$T/bad.toml"
is "$rc $err" "65 $T/bad.toml:6: services.b.listen: \"unix\" needs [serverless]: only the gateway reaches a unix instance, and it routes serverless services alone" \
    "hk validate refuses it on an ordinary service"

{
	printf 'schema_version = 1\nname = "fn"\n'
	svc web
	svc sus 'idle_action = "suspend"'
	svc chk '' | sed 's/^listen = "unix"$/listen = "unix"\nreadiness = "http:\/health"/'
} >"$T/app.toml"
run hk validate "$T/app.toml"
is "$rc" 0 "listen = \"unix\" on serverless exec services is valid"
hk apply "$T/app.toml" >/dev/null
# The starter of "hk new python" says listen = "unix".
(cd "$T" && hk new python st >/dev/null)
grep -qx 'listen = "unix"' "$T/st/hk.toml"
ok $? "hk new python writes listen = \"unix\""
hk apply "$T/st/hk.toml" >/dev/null

e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
wait_t 20 state_is fn/web running && wait_t 20 state_is fn/sus running &&
    wait_t 20 state_is fn/chk running
ok $? "each passed its readiness gate (socket, and http:/health over the socket)"

ep=$(endpoint fn/web)
like "$ep" "^unix:$T/run/listen/[0-9a-f]{16}\$" \
    "its endpoint is a socket in runtime_dir/listen"
sock=${ep#unix:}
is "$(stat -c '%a %U' "$T/run/listen") $(stat -c '%F %a' "$sock")" \
    "710 root socket 660" "the directory is hk's, mode 0710; the socket 0660"
is "$(gw_code web.fn.localhost /)" 200 "a request through the gateway"
like "$(cat "$T/body")" '^web pid=[0-9]+$' "is answered by the instance"
p=$(pid_of fn/web)
is "$(envof "$p" LISTEN_FDS) $(envof "$p" LISTEN_PID) [$(envof "$p" PORT)]" \
    "1 $p []" "the instance is handed fd 3 (LISTEN_FDS), and no PORT"
is "$(stat -c %U "/proc/$p")" nobody "it runs as nobody"
is "$(tcp_sockets "$p")" 0 "it holds no TCP socket: no port to reach it on"
is "$(try_connect daemon "$sock")" EACCES \
    "another local user cannot connect to its socket"
is "$(try_connect nobody "$sock")" EACCES \
    "nor can its own user, which accepts on the fd it was handed"
is "$(try_connect root "$sock")" connected \
    "the gateway's user (root here) can"

# A stop removes the socket; the next request wakes a new instance.
put_to_sleep fn/web
ok $? "fn/web is put to sleep"
wait_t 5 sh -c "[ ! -e '$sock' ]"
ok $? "its socket is gone with it"
is "$(gw_code web.fn.localhost /)" 200 "a request wakes it"
ep2=$(endpoint fn/web)
like "$ep2" "^unix:$T/run/listen/[0-9a-f]{16}\$" "on a socket again"
isnt_same=$([ "$ep2" != "$ep" ] && echo new)
is "$isnt_same" new "a new one"

# Suspended: frozen, woken on the same socket by the same process.
sp=$(pid_of fn/sus)
sep=$(endpoint fn/sus)
put_to_sleep fn/sus
ok $? "fn/sus is suspended"
is "$(scale_ctl '{"op":"status"}' services.fn/sus.state)" suspended \
    "hk-scale says suspended"
ok "$([ -S "${sep#unix:}" ] && echo 0 || echo 1)" "its socket stays"
is "$(gw_code sus.fn.localhost /)" 200 "a request thaws it"
is "$(cat "$T/body")" "sus pid=$sp" "the same process answers"
is "$(endpoint fn/sus)" "$sep" "on the same socket"

# A restarted hk-scale adopts the instance and its socket.
p=$(pid_of fn/web)
ep=$(endpoint fn/web)
kill -KILL "$scale_pid"
wait "$scale_pid" 2>/dev/null
daemon scale hk-scale -v -g 2
ok $? "hk-scale starts again"
wait_t 20 sh -c "[ \"\$(python3 '$GW_FN/gw-ctl.py' '$T/run/scale.sock' \
    '{\"op\":\"status\"}' services.fn/web.pid)\" = $p ]"
ok $? "it adopts the running instance"
ok "$([ -S "${ep#unix:}" ] && echo 0 || echo 1)" "whose socket stays"
is "$(gw_code web.fn.localhost /)" 200 "requests go on through the gateway"
is "$(cat "$T/body")" "web pid=$p" "to the same process"

# The service whose readiness is an HTTP check over the socket.
is "$(gw_code chk.fn.localhost /)" 200 "fn/chk answers through the gateway"

# The Python starter, forked from the template, on a socket of its own.
is "$(gw_code st.st.localhost /x)" 200 "the starter answers through the gateway"
is "$(cat "$T/body")" "hello from st: GET /x, 0 bytes received" "with its greeting"
like "$(endpoint st/st)" "^unix:$T/run/listen/[0-9a-f]{16}\$" \
    "on a socket in runtime_dir/listen"
done_testing
