#!/bin/sh
# Volumes of an ordinary container service, on SQLite and PostgreSQL,
# against the podman API service (2116: Docker's engine) and the test
# image: the service's program appends a line ($GREETING) to /data/log in
# its named volume at each start and answers GET with the whole file.  The
# volume is made through the engine's volumes API, labelled with the
# installation, app, service and volume, and its root is the container
# user's (nobody; on Docker, the image's directory's: see VOL_AT).  The
# service is stopped and started (hk stop, hk start), replaced by a new
# revision (hk apply with another GREETING), its hk-scale killed with
# SIGKILL and started again (the container adopted, then a restart of
# the service): each time the file it reads back holds every line
# written before.  The volume outlives every container.  "hk volumes"
# lists it (and which container uses it); "hk volumes rm" is refused
# while a container uses it (the engine's reason) and removes it once the
# service is stopped: the engine's API no longer has it.  A bind mount of a directory under
# volume_dirs works (the file is on the host); one outside is refused at
# validate, and one whose symbolic link leads outside fails its start.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
# Where the named volume is mounted.  podman makes a new volume's root the
# container user's; Docker cannot (hk.toml(5)): a new volume takes the
# owner and mode of the image's directory at its path, so on Docker it is
# mounted at the image's /tmp (mode 1777), which nobody may write.
VOL_AT=/data
[ "$CT_ENGINE" = docker ] && VOL_AT=/tmp
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
WAIT_PAUSE=0.1

# The program: a line at each start, the file at each GET; SIGTERM is a
# clean exit.
PROG='"/usr/bin/python3", "-c", "import os, signal, sys\nfrom http.server import BaseHTTPRequestHandler, HTTPServer\nsignal.signal(signal.SIGTERM, lambda n, f: sys.exit(0))\nwith open(os.environ[\"DATA\"] + \"/log\", \"a\") as f:\n    f.write(os.environ[\"GREETING\"] + \"\\n\")\nclass H(BaseHTTPRequestHandler):\n    def do_GET(self):\n        b = open(os.environ[\"DATA\"] + \"/log\", \"rb\").read()\n        self.send_response(200)\n        self.send_header(\"Content-Length\", str(len(b)))\n        self.end_headers()\n        self.wfile.write(b)\n    def log_message(self, *a):\n        pass\nHTTPServer((\"0.0.0.0\", int(os.environ[\"PORT\"])), H).serve_forever()"'

app() {	# app GREETING [APP [SERVICE [VOLUME]]]
	_vol=${4:-data:$VOL_AT}
	cat <<APP
schema_version = 1
name = "${2:-vol}"

[services.${3:-db}]
image = "$IMAGE"
command = [$PROG]
port = $CT_PORT
volumes = ["$_vol"]
[services.${3:-db}.environment]
GREETING = "$1"
DATA = "${_vol#*:}"
APP
}

# db_ids: the IDs of vol/db's containers in $INST
db_ids() {
	ct_cli ps -aq --no-trunc --filter "label=hk.installation=$INST" \
	    --filter "label=hk.service=db" 2>/dev/null | sort
}
# db_rev_is REVISION: one container, of that revision
db_rev_is() {
	[ "$(db_ids | grep -c .)" -eq 1 ] &&
	    [ "$(ct_inspect "$(db_ids)" '{{index .Config.Labels "hk.revision"}}')" = "$1" ]
}
# reads: what the running service answers
reads() {
	get "http://$(status_of vol/db endpoint)/"
}
# reads_is TEXT (for wait_t): the service runs and answers TEXT
reads_is() {
	state_is vol/db running && [ "$(reads)" = "$1" ]
}
# vol_ids: the volumes of $INST, as the engine lists them
vol_ids() {
	ct_cli volume ls -q --filter "label=hk.installation=$INST" 2>/dev/null
}

for engine in $(engines); do
	new_store "$engine" ctvol || { ok 1 "$engine: store"; continue; }
	scale_operator "$T/hakopod.toml" "$STORE" "container_engine = \"$U\"
container_network = \"$CT_NETWORK\"
volume_dirs = [\"$T/vd\"]"
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	app one >"$T/app.toml"
	run hk validate "$T/app.toml"
	is "$rc $out" "0 $T/app.toml: app vol: 1 services, 0 serverless: OK" \
	    "$engine: an ordinary container service with a named volume validates"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: and applies"
	rm -f "$T/scale.log"
	daemon scale hk-scale -v -g 2
	ok $? "$engine: hk-scale starts"
	INST=$(ct_install "$STORE")
	wait_t 60 reads_is "one"
	ok $? "$engine: it starts and reads back its first line"
	V=hk_${INST}_vol_db_data
	is "$(vol_ids)" "$V" "$engine: one volume, named $V"
	is "$(ct_cli volume inspect --format '{{index .Labels "hk.installation"}} {{index .Labels "hk.app"}} {{index .Labels "hk.service"}} {{index .Labels "hk.volume"}}' "$V")" \
	    "$INST vol db data" "$engine: labelled with installation, app, service and volume"
	mp=$(ct_cli volume inspect --format '{{.Mountpoint}}' "$V")
	if [ "$CT_ENGINE" = docker ]; then
		is "$(stat -c '%u:%g %a' "$mp")" "0:0 1777" \
		    "$engine: its root has the owner and mode of the image's $VOL_AT"
	else
		is "$(stat -c '%u:%g' "$mp")" "65534:65534" \
		    "$engine: its root is the container user's (nobody)"
	fi
	ID=$(db_ids)
	is "$(ct_inspect "$ID" '{{range .Mounts}}{{.Name}}:{{.Destination}}:{{.RW}} {{end}}')" \
	    "$V:$VOL_AT:true " "$engine: the container mounts it at $VOL_AT"

	# Stopped and started: the container goes, the volume stays.
	run hk stop vol/db
	is "$out" "vol/db	stopped" "$engine: hk stop"
	wait_t 20 ct_count_is 0 "$INST"
	ok $? "$engine: its container is removed"
	is "$(vol_ids)" "$V" "$engine: the volume is kept"
	run hk start vol/db
	wait_t 60 reads_is "one
one"
	ok $? "$engine: hk start: it reads back the line of its first start, and its own"

	# A new revision.
	app two >"$T/app2.toml"
	run hk apply "$T/app2.toml"
	ctl '{"op":"reload"}' >/dev/null
	wait_t 60 reads_is "one
one
two"
	ok $? "$engine: a new revision reads back everything written before"
	wait_t 20 db_rev_is 2
	ok $? "$engine: (its one container is revision 2's, the old one gone)"

	# hk-scale killed: the container is adopted, its data where it was.
	ID=$(db_ids)
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	daemon scale hk-scale -v -g 2
	ok $? "$engine: hk-scale, killed, starts again"
	wait_t 20 grep -q "service=vol/db: adopted container $(echo "$ID" | cut -c1-12)" \
	    "$T/scale.log"
	ok $? "$engine: the container is adopted"
	wait_t 20 reads_is "one
one
two"
	ok $? "$engine: and reads back the same"
	run hk stop vol/db
	wait_t 20 ct_count_is 0 "$INST"
	run hk start vol/db
	wait_t 60 reads_is "one
one
two
two"
	ok $? "$engine: restarted by the new hk-scale: everything written before, and its line"
	is "$(vol_ids)" "$V" "$engine: still the one volume"

	# hk volumes: listed, in use; not removed while it is.
	ID=$(db_ids)
	run hk volumes
	like "$rc $out" "^0 vol	db	data	$(hostname)	$V	[0-9T:.Z+ -]+	$(echo "$ID" | cut -c1-12)\$" \
	    "$engine: hk volumes lists it: name, node, engine volume, created, in use by its container"
	is "$(hk volumes vol/db)" "$out" "$engine: hk volumes vol/db: the same"
	is "$(hk volumes vol)" "$out" "$engine: hk volumes vol: the same"
	is "$(hk volumes vol/other)" "" "$engine: hk volumes vol/other: nothing"
	is "$(hk volumes --json vol/db | python3 -c 'import json, sys; v = json.load(sys.stdin)[0]; print(v["app"], v["service"], v["name"], v["volume"], v["in_use"])')" \
	    "vol db data $V $(echo "$ID" | cut -c1-12)" "$engine: hk volumes --json"
	run hk volumes rm vol/db data
	like "$rc $err" "^75 hk: error: volumes rm: vol/db: data \\($V on node $(hostname)\\): .*(being used|in use)" \
	    "$engine: hk volumes rm: refused while its container uses it (75), with the engine's reason"
	is "$(vol_ids)" "$V" "$engine: (it is still there)"
	wait_t 10 reads_is "one
one
two
two"
	ok $? "$engine: and the service still reads it"

	# Bind mounts: under volume_dirs, the host's directory.
	rm -rf "$T/vd" "$T/outside"
	mkdir -p "$T/vd/files" "$T/outside"
	chmod 777 "$T/vd/files" "$T/outside"
	app b1 bind files "$T/vd/files:/data" >"$T/bind.toml"
	run hk apply "$T/bind.toml"
	is "$rc" 0 "$engine: a bind mount under volume_dirs applies"
	ctl '{"op":"reload"}' >/dev/null
	wait_t 60 eval '[ "$(get "http://$(status_of bind/files endpoint)/")" = b1 ]'
	ok $? "$engine: its container writes and reads the host's directory"
	is "$(cat "$T/vd/files/log")" b1 "$engine: (the file is on the host)"
	app b2 out files "$T/outside:/data" >"$T/out.toml"
	run hk validate "$T/out.toml"
	is "$rc $err" "65 $T/out.toml:8: services.files.volumes: $T/outside: not under server.volume_dirs ($T/vd)" \
	    "$engine: one outside volume_dirs is refused at validate"
	app b3 out files "$T/vd/../outside:/data" >"$T/out.toml"
	run hk validate "$T/out.toml"
	is "$rc $err" "65 $T/out.toml:8: services.files.volumes: \"$T/vd/../outside\": \"..\" is not allowed" \
	    "$engine: so is one that climbs out with .."
	ln -s "$T/outside" "$T/vd/link"
	app b4 link files "$T/vd/link:/data" >"$T/link.toml"
	run hk apply "$T/link.toml"
	is "$rc" 0 "$engine: a symbolic link under volume_dirs applies (validate reads no link)"
	ctl '{"op":"reload"}' >/dev/null
	wait_t 30 grep -q "service=link/files: .*volumes: $T/vd/link ($T/outside): not under server.volume_dirs" \
	    "$T/scale.log"
	ok $? "$engine: its start is refused: the link leads out of volume_dirs"
	is "$(ls "$T/outside")" "" "$engine: nothing was written there"

	stop_pid "$scale_pid" 120
	wait_t 20 ct_count_is 0 "$INST"
	ok $? "$engine: SIGTERM: no container is left"
	is "$(vol_ids)" "$V" "$engine: the volume is kept across hk-scale's stop"
	grep -Eq 'Sanitizer|runtime error' "$T/scale.log"
	ok $((!$?)) "$engine: no sanitizer report" ||
	    grep -E -A40 'Sanitizer|runtime error' "$T/scale.log" | sed 's/^/#   /'

	# Stopped: removed by the operator, and only then.
	like "$(hk volumes vol/db)" "	no\$" "$engine: hk volumes: in use by none now"
	run hk volumes rm vol/db data
	is "$rc $out" "0 vol/db	data	removed" "$engine: hk volumes rm removes it"
	is "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "${U#unix://}" "http://d/v1.41/volumes/$V")" \
	    404 "$engine: the engine's API has it no more"
	run hk volumes rm vol/db data
	is "$rc $err" "66 hk: error: volumes rm: vol/db: no volume data" \
	    "$engine: a second hk volumes rm: no such volume (66)"
	is "$(hk volumes)" "" "$engine: hk volumes lists nothing"
done
pg_missing_is_failure
done_testing
