#!/bin/sh
# Secrets, on SQLite and PostgreSQL, exec backend: a missing secret is
# refused by hk apply and hk validate; hk secret set makes the key file
# 0600 and seals the value; through the gateway a woken function reads
# $CREDENTIALS_DIRECTORY/DB_PASSWORD (a directory 0500 of files 0400,
# the instance's user's) and answers its digest; with secrets_env it
# also has the variable, without it /proc/PID/environ does not hold the
# value; a new value is a new revision that answers with it; the
# directories go when their instances stop.  Then the value is searched
# for in the store (the SQLite files, a pg_dump), every daemon's log and
# every hk output, and not found.  The s6 backend, on SQLite, under a
# real s6-svscan: the same files; its run script names no value.  TAP lines name digests, never values.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh
. tests/integration/lib/s6.sh

SFN=$HK_TOP/tests/integration/fn/secret-http.py

write_app() {
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "sec"

[services.fn]
command = ["python3", "$SFN"]
public = true
secrets = ["DB_PASSWORD"]
[services.fn.serverless]
startup_timeout_seconds = 20

[services.envfn]
command = ["python3", "$SFN"]
public = true
secrets = ["DB_PASSWORD"]
secrets_env = true
[services.envfn.serverless]
startup_timeout_seconds = 20
APP
}

ps_field() {	# ps_field SERVICE FIELD: revision, or the instance's pid
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] + "/" + s["service"] == sys.argv[1]:
        if sys.argv[2] == "pid":
            print(s["instance"]["pid"] if s["instance"] else 0)
        else:
            print(s[sys.argv[2]])' "$1" "$2"
}

cred_dir() {	# cred_dir PID: its CREDENTIALS_DIRECTORY
	tr '\0' '\n' <"/proc/$1/environ" | sed -n 's/^CREDENTIALS_DIRECTORY=//p'
}

digest() {
	printf '%s' "$1" | sha256sum | cut -d' ' -f1
}

body_is() {	# body_is HOST PATH WANT (for wait_t)
	[ "$(gw_code "$1" "$2")" = 200 ] && [ "$(cat "$T/body")" = "$3" ]
}

nobody=$(id -un nobody 2>/dev/null || echo nobody)
pg_missing_is_failure

for engine in $(engines); do
	new_store "$engine" sec
	rm -f "$T"/*.log
	GW_STATE=$STORE
	gw_config "secret_key_file = \"$T/$engine.key\""
	V1=$(python3 -c 'import secrets; print("hk-v1-" + secrets.token_hex(20))')
	V2=$(python3 -c 'import secrets; print("hk-v2-" + secrets.token_hex(20))')
	write_app

	run hk apply "$T/app.toml"
	is "$rc" 65 "$engine: hk apply of a missing secret exits 65"
	like "$err" "^$T/app.toml:7: services.fn.secrets: no secret \"DB_PASSWORD\" in app sec" \
	    "$engine: file:line: key: reason"
	is "$(hk ps | grep -c sec/)" 0 "$engine: nothing applied"
	run hk validate "$T/app.toml"
	is "$rc" 65 "$engine: hk validate refuses it too (the store is there)"
	test ! -e "$T/$engine.key"
	ok $? "$engine: no key file before the first secret"

	printf '%s' "$V1" | hk secret set sec DB_PASSWORD >"$T/out.set1" 2>&1
	ok $? "$engine: hk secret set, the value on standard input"
	is "$(stat -c %a "$T/$engine.key")" 600 "$engine: the key file is made 0600"
	run hk validate "$T/app.toml"
	is "$rc" 0 "$engine: hk validate: the secret is there"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: hk apply"

	e2e_start
	ok $? "$engine: hk-events, hk-scale and hk-activate are up"
	wait_t 20 body_is fn.sec.localhost /file "$(digest "$V1")"
	ok $? "$engine: woken through the gateway, reads its secret's file (digest $(digest "$V1" | cut -c1-12))"
	pid=$(ps_field sec/fn pid)
	dir=$(cred_dir "$pid")
	like "$dir" "^$T/run/cred/sec\\.fn\\.[0-9]+\$" \
	    "$engine: CREDENTIALS_DIRECTORY under runtime_dir/cred"
	is "$(stat -c '%a %U' "$dir")" "500 $nobody" \
	    "$engine: the directory is 0500, the instance's user's"
	is "$(stat -c '%a %U %s' "$dir/DB_PASSWORD")" "400 $nobody ${#V1}" \
	    "$engine: the file is 0400, the instance's user's, the value's size"
	runuser -u daemon -- cat "$dir/DB_PASSWORD" >/dev/null 2>&1
	ok $((! $?)) "$engine: another user cannot read it"
	grep -qaF -- "$V1" "/proc/$pid/environ"
	ok $((! $?)) "$engine: the value is not in /proc/PID/environ"

	wait_t 20 body_is envfn.sec.localhost /env "$(digest "$V1")"
	ok $? "$engine: with secrets_env, the variable too"
	epid=$(ps_field sec/envfn pid)
	grep -qaF -- "$V1" "/proc/$epid/environ"
	ok $? "$engine: which /proc/PID/environ then holds (asked for)"

	# A new value: a new revision of both, which answers with it.
	rev=$(ps_field sec/fn revision)
	printf '%s\n' "$V2" | hk secret set sec DB_PASSWORD >"$T/out.set2" 2>&1
	ok $? "$engine: hk secret set of a new value"
	like "$(cat "$T/out.set2")" "sec/fn	revision $((rev + 1))	updated" \
	    "$engine: is a new revision of the services that use it"
	wait_t 20 body_is fn.sec.localhost /file "$(digest "$V2")"
	ok $? "$engine: which answers with the new value (digest $(digest "$V2" | cut -c1-12))"
	wait_t 10 test ! -e "$dir"
	ok $? "$engine: the old instance's directory is removed with it"
	run hk apply "$T/app.toml"
	like "$out" "sec/fn	revision $((rev + 1))	unchanged" \
	    "$engine: hk apply after it: no other revision"

	pid=$(ps_field sec/fn pid)
	dir=$(cred_dir "$pid")
	put_to_sleep sec/fn
	ok $? "$engine: put to sleep"
	wait_t 10 test ! -e "$dir"
	ok $? "$engine: its directory is removed when it stops"

	run hk secret rm sec DB_PASSWORD
	is "$rc" 65 "$engine: hk secret rm of a secret in use exits 65"

	# Where the values must not be.
	{
		hk ps; hk ps --json; hk status sec/fn; hk status --json sec/fn
		hk status sec/envfn; hk status --json sec/envfn
		hk secret list sec; hk routes --json
		hk-events list --json -n 0; hk-events requests --json -n 0
		cat "$T/out.set1" "$T/out.set2"
	} >"$T/outputs" 2>&1
	like "$(hk secret list sec)" "^DB_PASSWORD	[0-9a-f]{12}	" \
	    "$engine: hk secret list: name and a short digest"
	for v in "$V1" "$V2"; do
		grep -qaF -- "$v" "$T/outputs"
		ok $((! $?)) "$engine: a value is in no hk output"
		grep -qaF -- "$v" "$T"/*.log
		ok $((! $?)) "$engine: nor in a daemon's log"
		# found: 0 when the value is there, or the store was not read
		case $engine in
		sqlite)
			grep -qa 'CREATE TABLE secrets' "$T/sec.db" &&
			    ! grep -qaF -- "$v" "$T"/sec.db*
			;;
		postgres)
			/usr/lib/postgresql/*/bin/pg_dump -d "$STORE" \
			    >"$T/dump.sql" 2>"$T/dump.err"
			grep -q 'CREATE TABLE public.secrets' "$T/dump.sql" &&
			    grep -q '^COPY public.secrets' "$T/dump.sql" &&
			    ! grep -qaF -- "$v" "$T/dump.sql"
			;;
		esac
		ok $? "$engine: nor in the store (the SQLite files, a pg_dump)"
	done
	stop_pid "$gw_pid"
	stop_pid "$scale_pid"
	stop_pid "$events_pid"
done

# The s6 backend: files through CREDENTIALS_DIRECTORY, no value on disk.
new_store sqlite s6sec
GW_STATE=$STORE
SCAN=$T/scan
gw_config "secret_key_file = \"$T/s6.key\"" "s6_scandir = \"$SCAN\""
s6_scan_start "$SCAN"
ok $? "s6: an s6-svscan runs on the scan directory"
V3=$(python3 -c 'import secrets; print("hk-v3-" + secrets.token_hex(20))')
printf '%s' "$V3" | hk secret set sec DB_PASSWORD >/dev/null 2>&1
cat >"$T/app.toml" <<APP
schema_version = 1
name = "sec"

[services.s6fn]
command = ["python3", "$SFN"]
backend = "s6"
public = true
secrets = ["DB_PASSWORD"]
[services.s6fn.serverless]
startup_timeout_seconds = 20
APP
run hk apply "$T/app.toml"
is "$rc" 0 "s6: hk apply"
e2e_start
ok $? "s6: hk-events, hk-scale and hk-activate are up"
wait_t 20 body_is s6fn.sec.localhost /file "$(digest "$V3")"
ok $? "s6: woken through the gateway, reads its secret's file (digest $(digest "$V3" | cut -c1-12))"
pid=$(ps_field sec/s6fn pid)
dir=$(cred_dir "$pid")
is "$(stat -c '%a %U' "$dir" "$dir/DB_PASSWORD" | tr '\n' ' ')" \
    "500 $nobody 400 $nobody " "s6: directory 0500, file 0400, the user's"
grep -rqaF -- "$V3" "$SCAN/" "$SCAN/.hk/" "/proc/$pid/environ" "$T"/*.log
ok $((! $?)) "s6: the value is in no file of the scan directory, no log, not in environ"
put_to_sleep sec/s6fn
ok $? "s6: put to sleep"
wait_t 10 test ! -e "$dir"
ok $? "s6: its directory is removed when it stops"
stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"
s6_scan_stop "$SCAN"
done_testing
