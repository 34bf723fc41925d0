#!/bin/sh
# hk apply, ps, status, stop, start against SQLite and PostgreSQL: apply
# writes in one transaction and bumps a revision only when its spec changed;
# rejected input of every kind leaves the store exactly as it was.
. tests/integration/lib.sh

write_app() {	# write_app FILE IDLE [extra service text]
	cat >"$1" <<APP
schema_version = 1
name = "fn"

[services.py]
command = ["python3", "hello.py"]
port = 8081
public = true

[services.py.serverless]
idle_seconds = $2

[services.db]
command = ["sleep", "1000"]
${3:-}
APP
}

operator() {	# operator FILE STORE [extra [server] lines]
	cat >"$1" <<CONF
[server]
serverless_address = "127.0.0.1:8082"
state = "$2"
runtime_dir = "$T/run"
${3:-}
CONF
}

# Applies broken input and checks that the store did not move.
refused() {	# refused FILE WHAT CODE
	hk ps --json >"$T/before.json"
	run hk apply "$1"
	is "$rc" "$3" "$engine: $2 is refused with $3"
	hk ps --json >"$T/after.json"
	diff_ok "$T/after.json" "$T/before.json" "$engine: $2 leaves the store as it was"
}

mkdir -p "$T/run"
for engine in $(engines); do
	new_store "$engine" apply
	operator "$T/hakopod.toml" "$STORE"
	export HAKOPOD_CONFIG="$T/hakopod.toml"

	write_app "$T/app.toml" 300
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: apply succeeds"
	is "$out" "fn/py	revision 1	created
fn/db	revision 1	created" "$engine: apply reports each service"

	run hk ps
	printf '%s\n' "$out" >"$T/ps.tsv"
	diff_ok "$T/ps.tsv" tests/integration/expected/6002-ps.tsv \
	    "$engine: ps prints one tab-separated line per service"

	run hk apply "$T/app.toml"
	is "$out" "fn/py	revision 1	unchanged
fn/db	revision 1	unchanged" "$engine: applying the same file changes no revision"

	write_app "$T/app.toml" 600
	run hk apply "$T/app.toml"
	is "$out" "fn/py	revision 2	updated
fn/db	revision 1	unchanged" "$engine: a changed spec bumps only its own revision"

	run hk status fn/py
	is "$rc" 0 "$engine: status exits 0"
	like "$out" '^revision: +2 \(since ' "$engine: status shows the revision"
	like "$out" '^policy: +min=0 idle=600s start=60s request=60s concurrency=16$' \
	    "$engine: status shows the serverless policy"
	like "$out" '^hosts: +py\.fn\.localhost$' "$engine: status shows the default host"
	like "$out" '^instance: +none$' "$engine: a sleeping service has no instance"
	like "$out" '^backend: +exec$' "$engine: status shows the backend, exec for a command"
	like "$out" '^placement: +default node \(this host\)$' "$engine: and the placement asked for: none, the default node"
	like "$out" '^runs on: +-$' "$engine: and that it runs nowhere while it sleeps"
	run hk status --json fn/py
	like "$out" '"backend": "exec"' "$engine: status --json has the backend"

	run hk stop py
	is "$out" "fn/py	stopped" "$engine: stop by unique service name"
	run hk ps
	like "$out" '^fn	py	stopped	2	' "$engine: ps shows the manual stop"
	run hk apply "$T/app.toml"
	run hk status --json fn/py
	like "$out" '"desired": "stopped"' "$engine: a manual stop survives apply"
	run hk start fn/py
	is "$out" "fn/py	started" "$engine: start"
	run hk ps
	like "$out" '^fn	py	sleeping	2	' "$engine: a started serverless service sleeps until a request"
	run hk stop fn/nope
	is "$rc" 65 "$engine: stopping an unknown service exits 65"
	is "$err" "hk: error: fn/nope: no such service" "$engine: and says so"

	# Bad input of every kind.
	printf 'schema_version = 1\nname = "fn"\n[services.py]\ncommand = [' \
	    >"$T/trunc.toml"
	refused "$T/trunc.toml" "a truncated file" 65
	printf 'schema_version = 1\nname = "fn"\nname = "fn"\n' >"$T/dup.toml"
	refused "$T/dup.toml" "a repeated key" 65
	printf 'schema_version = 1\nname = "fn"\n[services.a]\ncommand = ["x"]\n[services.a]\n' \
	    >"$T/redef.toml"
	refused "$T/redef.toml" "a redefined table" 65
	printf 'schema_version = 1\nname = "\300\200"\n' >"$T/utf8.toml"
	refused "$T/utf8.toml" "invalid UTF-8" 65
	head -c 10485760 /dev/zero | tr '\0' ' ' >"$T/big.toml"
	refused "$T/big.toml" "a 10 MB file" 65
	refused "$T/none.toml" "a missing file" 66

	# A second app may not take a host that another app serves.
	cat >"$T/other.toml" <<'APP'
schema_version = 1
name = "other"

[services.web]
command = ["true"]
public = true
hosts = ["py.fn.localhost"]
[services.web.serverless]
APP
	refused "$T/other.toml" "a host used by another app" 65
	like "$err" 'other.toml:4: services.web.hosts: host "py.fn.localhost" is already used by fn/py' \
	    "$engine: the collision names the other service"

	# The installation-wide limit counts every app's serverless services.
	operator "$T/small.toml" "$STORE" "max_serverless_services = 2"
	cat >"$T/two.toml" <<'APP'
schema_version = 1
name = "two"

[services.a]
command = ["true"]
public = true
[services.a.serverless]

[services.b]
command = ["true"]
public = true
[services.b.serverless]
APP
	hk ps --json >"$T/before.json"
	run hk -f "$T/small.toml" apply "$T/two.toml"
	is "$rc" 65 "$engine: the installation limit is enforced across apps"
	is "$err" "$T/two.toml:9: services.b.serverless: the installation would have 3 serverless services, more than max_serverless_services (2)" \
	    "$engine: and the message says by how much"
	hk ps --json >"$T/after.json"
	diff_ok "$T/after.json" "$T/before.json" "$engine: the refused apply left the store as it was"

	# No serverless service may be applied without a gateway address.
	sed '/serverless_address/d' "$T/hakopod.toml" >"$T/noaddr.toml"
	run hk -f "$T/noaddr.toml" apply "$T/app.toml"
	is "$rc" 65 "$engine: serverless without serverless_address is refused"

	# Services left out of the file are removed.
	write_app "$T/app.toml" 600
	sed -i '/^\[services.db\]/,$d' "$T/app.toml"
	run hk apply "$T/app.toml"
	is "$out" "fn/py	revision 2	unchanged
fn/db	removed" "$engine: a service no longer in the file is removed"
	run hk ps
	is "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 1 "$engine: ps no longer lists it"
done
pg_missing_is_failure

# A running daemon hears "reload" after apply.  The daemons come in later
# work; until then this Python listener stands in for one on scale.sock.
new_store sqlite reload
operator "$T/hakopod.toml" "$STORE"
python3 - "$T/run/scale.sock" "$T/heard" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1]); s.listen(1)
open(sys.argv[2] + ".ready", "w").close()
s.settimeout(20)
c, _ = s.accept()
msg = c.recv(65536)
c.send(b'{"ok": true}')
open(sys.argv[2], "wb").write(msg)
PY
_pids="$_pids $!"
wait_for 10 test -e "$T/heard.ready"
write_app "$T/app.toml" 300
run hk apply "$T/app.toml"
wait_for 10 test -s "$T/heard"
is "$(cat "$T/heard" 2>/dev/null)" '{"op":"reload"}' "apply sends reload to a listening daemon"

# A terminal gets aligned columns under a header.
if command -v script >/dev/null; then
	script -qc "hk ps" /dev/null >"$T/tty.out" </dev/null
	like "$(head -1 "$T/tty.out" | tr -d '\r')" '^APP +SERVICE +STATE +REV +NODE +HOSTS +POLICY +REPLICAS$' \
	    "ps on a terminal prints a header and aligned columns"
else
	ok 1 "script(1) from util-linux is needed to test terminal output"
fi

done_testing
