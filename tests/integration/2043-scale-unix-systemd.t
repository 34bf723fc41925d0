#!/bin/sh
# listen = "unix" with the systemd backend, under systemd as PID 1 in a
# container (scripts/systemd-ct), on SQLite: hk-scale binds the Unix
# socket in runtime_dir/listen and hands it to the unit as its standard
# input, moved to fd 3 (LISTEN_FDS) before the command runs; the unit
# gets no PORT.  The gateway (a unit too) forwards over it; another local
# user cannot connect to it.  A stop removes the socket; the next request
# wakes a new unit on a new one.  hk-events, hk-scale and hk-activate
# run from the units of etc/systemd, renamed for this test, as root; the
# gateway is reached on the host's 127.0.0.1.
. tests/integration/lib.sh
. tests/integration/lib/systemd.sh

for tool in podman curl; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done
UNITS="events scale activate"
sd_container || done_testing
[ -z "$own_ct" ] ||
    trap '"$HK_TOP/scripts/systemd-ct" stop "$CT"; _cleanup' EXIT

N=hku$$
APP=su$$
FN=$CT_TOP/tests/integration/fn
PORT=$(free_port)
hkc() { ct env "HAKOPOD_CONFIG=/etc/$N/hakopod.toml" "PATH=$CT_BUILD/bin:/usr/bin:/bin" "$@"; }
status() {	# status FIELD: of fn's service in hk-scale's status
	hkc python3 "$FN/gw-ctl.py" "/run/$N/scale.sock" '{"op":"status"}' \
	    "services.$APP/web.$1"
}
code() {	# code PATH: the status, body in $T/body
	curl -sS -o "$T/body" -w '%{http_code}' --max-time 30 \
	    -H "Host: web.$APP.localhost" "http://127.0.0.1:$PORT$1"
}
envof() {	# envof PID NAME: in the container
	ct sh -c "tr '\\0' '\\n' </proc/$1/environ" | sed -n "s/^$2=//p"
}

ct systemctl start systemd-journald
ct mkdir -p "/etc/$N"
ct sh -c "cat >/etc/$N/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:$PORT"
state = "sqlite:///var/lib/$N/state.db"
runtime_dir = "/run/$N"
CONF
echo "HAKOPOD_CONFIG=/etc/$N/hakopod.toml" | ct sh -c "cat >/etc/$N/api.env"
sd_units "$N" root
ct sh -c "cat >/etc/$N/app.toml" <<APP
schema_version = 1
name = "$APP"

[services.web]
command = ["python3", "$FN/scale-http.py"]
backend = "systemd"
public = true
listen = "unix"
[services.web.environment]
SCALE_TAG = "web"
[services.web.serverless]
APP
run hkc hk validate "/etc/$N/app.toml"
is "$rc" 0 "hk validate accepts listen = \"unix\" with backend \"systemd\""
ct systemctl daemon-reload
# shellcheck disable=SC2046
run ct systemctl start $(for u in $UNITS; do echo "$N-$u"; done)
is "$rc" 0 "the units start" || {
	diag "$err"
	for u in $UNITS; do
		ct journalctl -u "$N-$u" -n 12 --no-pager 2>&1 | sed 's/^/#   /'
	done
}
run hkc hk apply "/etc/$N/app.toml"
is "$rc" 0 "applied"

is "$(code /one)" 200 "a request through the gateway"
like "$(cat "$T/body")" '^web pid=[0-9]+$' "is answered by the unit"
ep=$(status endpoint)
like "$ep" "^unix:/run/$N/listen/[0-9a-f]{16}\$" \
    "its endpoint is a socket in runtime_dir/listen"
sock=${ep#unix:}
p=$(status pid)
is "$(envof "$p" LISTEN_FDS) [$(envof "$p" PORT)]" "1 []" \
    "the unit's command has fd 3 (LISTEN_FDS), and no PORT"
is "$(ct stat -c '%a %F' "/run/$N/listen" "$sock" | tr '\n' ' ')" \
    "710 directory 660 socket " "the directory is hk's, mode 0710"
run ct runuser -u daemon -- python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])' "$sock"
like "$err" "PermissionError" "another local user cannot connect to it"

# A stop removes the socket; the next request starts a new unit on a new
# socket.
run hkc hk stop "$APP/web"
is "$rc" 0 "hk stop"
wait_t 30 sh -c "! podman exec '$CT' test -e '$sock'"
ok $? "its socket is gone with the unit"
run hkc hk start "$APP/web"
is "$(code /two)" 200 "after hk start, a request is answered"
ep2=$(status endpoint)
ok "$([ "$ep2" != "$ep" ] && ct test -S "${ep2#unix:}"; echo $?)" \
    "on a new socket"
# shellcheck disable=SC2046
ct systemctl stop $(for u in $UNITS; do echo "$N-$u"; done)
done_testing
