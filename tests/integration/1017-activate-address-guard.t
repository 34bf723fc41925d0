#!/bin/sh
# Moving the gateway, on SQLite and PostgreSQL.  While serverless
# services are deployed, a hakopod.toml that changes serverless_address
# is refused, naming them: by a reload (logged; the listener is kept and
# the rest of the reload, routes and limits, is applied), by
# "hk-activate -n" (78; the store read only: a store that is not there is
# not made, one of an older schema is not migrated), by a restart (78),
# and by hk apply of serverless services (78).  "hk-activate -m" moves it
# on purpose; once no serverless service is left, it moves freely.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

app() {	# app NAME SERVICE: an app of one serverless service
	cat <<APP
schema_version = 1
name = "$1"

[services.$2]
command = ["python3", "cold.py"]
port = 9
public = true
[services.$2.serverless]
startup_timeout_seconds = 5
APP
}

# sql ENGINE STORE SQL: one statement on the store, its rows on stdout.
sql() {
	case $1 in
	sqlite) python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute(sys.argv[2]):
    print("|".join(str(v) for v in r))
c.commit()
c.close()' "${2#sqlite://}" "$3" ;;
	postgres) psql "$2" -qAtc "$3" ;;
	esac
}

# state: what -n may not change: the SQLite file's bytes and the files
# beside it, or the PostgreSQL store's tables; then the schema version.
state() {
	case $1 in
	sqlite) sha256sum "${2#sqlite://}" | cut -d' ' -f1 ;;
	postgres) sql postgres "$2" "SELECT string_agg(tablename, ',' ORDER BY
	    tablename) FROM pg_tables WHERE schemaname = current_schema()" ;;
	esac
	sql "$1" "$2" 'SELECT max(version), count(*) FROM schema_migrations'
	sql "$1" "$2" 'SELECT key, value FROM settings ORDER BY key'
}

for e in $(engines); do
	new_store "$e" gw
	GW_STATE=$STORE gw_config
	gw_store=$STORE
	OLD=127.0.0.1:$GW_PORT
	NEW=127.0.0.1:$(free_port)
	app fn cold >"$T/fn.toml"
	app more late >"$T/more.toml"
	printf 'schema_version = 1\nname = "fn"\n' >"$T/fn-none.toml"
	printf 'schema_version = 1\nname = "more"\n' >"$T/more-none.toml"
	# hk as it was before the move, telling no gateway (a reload does)
	sed "s|^runtime_dir = .*|runtime_dir = \"$T/elsewhere\"|" \
	    "$T/hakopod.toml" >"$T/hk-old.toml"

	hk apply "$T/fn.toml" >/dev/null
	ok $? "$e: a serverless service is applied behind $OLD"
	rm -f "$T/gw.log"
	gw_start
	ok $? "$e: hk-activate starts on $OLD"

	# A reload: the move refused, the rest applied.
	sed -i "s/$OLD/$NEW/" "$T/hakopod.toml"
	echo 'max_body_bytes = 10' >>"$T/hakopod.toml"
	HAKOPOD_CONFIG=$T/hk-old.toml hk apply "$T/more.toml" >/dev/null
	ok $? "$e: a second one, with the address it had"
	is "$(gw_code late.more.localhost /)" 404 "$e: not routed before the reload"
	kill -HUP "$gw_pid"
	why="server.serverless_address: \"$OLD\" becomes \"$NEW\": refused: serverless services are deployed behind the gateway"
	wait_t 5 grep -q "^hk-activate: error: reload: $why, which stays on $OLD (hk-activate(8), MOVING THE GATEWAY): services: fn/cold, more/late\$" \
	    "$T/gw.log"
	ok $? "$e: SIGHUP with a new address: refused, the services named"
	wait_t 5 test "$(gw_code late.more.localhost /)" = 503
	ok $? "$e: the routes of the same reload are applied"
	is "$(gw_code cold.fn.localhost / -d 'more than ten bytes')" 413 \
	    "$e: and its limits (max_body_bytes)"
	is "$(gw_code nope /)" 404 "$e: the old address still answers"
	is "$(gw_ctl '{"op":"reload"}')" '{"ok":true}' \
	    "$e: a reload of the routes over activate.sock is not refused"

	run hk-activate -n
	is "$rc" 78 "$e: -n with the new address: exit 78"
	is "$err" "hk-activate: error: $why at $OLD; review them, then move it with hk-activate -m (hk-activate(8), MOVING THE GATEWAY): services: fn/cold, more/late" \
	    "$e: -n names the services"

	run hk apply "$T/fn.toml"
	is "$rc" 78 "$e: hk apply of a serverless service behind the new address: 78"
	is "$err" "hk: error: apply: $T/fn.toml: $why's recorded address; put it back, or move the gateway first (hk-activate(8), MOVING THE GATEWAY): services: fn/cold, more/late" \
	    "$e: hk apply names the services"
	run hk apply --dry-run "$T/fn.toml"
	is "$rc" 78 "$e: hk apply --dry-run says the apply would be refused: 78"
	is "$err" "hk: error: apply: $T/fn.toml: $why's recorded address; put it back, or move the gateway first (hk-activate(8), MOVING THE GATEWAY): services: fn/cold, more/late" \
	    "$e: ... with the same reason"
	run env HAKOPOD_CONFIG="$T/hk-old.toml" hk apply "$T/fn.toml"
	is "$rc" 0 "$e: hk apply with the address kept: accepted"

	# A restart is refused as well, before it listens.
	stop_pid "$gw_pid"
	run hk-activate
	is "$rc" 78 "$e: a restart on the new address: exit 78"
	like "$err" "^hk-activate: fatal: $why's recorded address; review them, then move it with hk-activate -m \\(hk-activate\\(8\\), MOVING THE GATEWAY\\): services: fn/cold, more/late\$" \
	    "$e: naming the services"
	curl -s -o /dev/null --max-time 5 "http://$NEW/"
	is "$?" 7 "$e: nothing listens on $NEW"

	# -n writes nothing: a store not there is not made ...
	if [ "$e" = sqlite ]; then
		run env HAKOPOD_STATE="sqlite://$T/missing/nope.db" hk-activate -n
		is "$rc/$err" "0/configuration OK" \
		    "$e: -n against a store not there: OK"
		test ! -e "$T/missing"
		ok $? "$e: and nothing is made"
		run env HAKOPOD_STATE="sqlite://$T/nope.db" hk-activate -n
		test "$rc" = 0 && test ! -e "$T/nope.db"
		ok $? "$e: not even in a directory that is there"
	else
		new_store postgres empty
		run env HAKOPOD_STATE="$STORE" hk-activate -n
		is "$rc/$err" "0/configuration OK" \
		    "$e: -n against a database without a store: OK"
		is "$(sql postgres "$STORE" "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()")" \
		    0 "$e: and no table is made"
		STORE=$gw_store
	fi
	# ... and one of an older schema version is not migrated.
	v=$(sql "$e" "$STORE" 'SELECT max(version) FROM schema_migrations')
	at=$(sql "$e" "$STORE" "SELECT applied_at FROM schema_migrations WHERE version = $v")
	sql "$e" "$STORE" "DELETE FROM schema_migrations WHERE version = $v"
	before=$(state "$e" "$STORE")
	files=$(ls "$T")
	run hk-activate -n
	# (SQLite makes the -wal and -shm a reader of a WAL database needs)
	is "$(ls "$T" | grep -v -e '-wal$' -e '-shm$')" "$files" \
	    "$e: no file made beside it"
	is "$rc" 78 "$e: -n against a store of schema version $((v - 1)): read, 78"
	is "$(state "$e" "$STORE")" "$before" "$e: and not changed"
	sql "$e" "$STORE" "INSERT INTO schema_migrations VALUES ($v, $at)"

	# -m moves the gateway on purpose.
	run hk-activate -m
	is "$rc/$err" "0/hk-activate: server.serverless_address: \"$OLD\" becomes \"$NEW\": moved: the serverless services are served there from the gateway's next start: fn/cold, more/late" \
	    "$e: -m moves it, naming the services"
	run hk-activate -n
	is "$rc/$err" "0/configuration OK" "$e: -n accepts the new address then"
	other=127.0.0.1:$(free_port)
	sed "/^\[server\]/a serverless_listen = \"$other\"" "$T/hakopod.toml" \
	    >"$T/listen.toml"
	run hk-activate -n -f "$T/listen.toml"
	is "$rc" 78 "$e: -n with serverless_listen alone changed: 78"
	like "$err" "^hk-activate: error: server.serverless_listen: \"$NEW\" becomes \"$other\": refused: .*: services: fn/cold, more/late\$" \
	    "$e: naming it"
	GW_PORT=${NEW#*:}
	GW_URL=http://$NEW
	gw_start
	ok $? "$e: hk-activate starts on $NEW"
	is "$(gw_code cold.fn.localhost /)" 503 "$e: which routes the services"
	run hk apply "$T/fn.toml"
	is "$rc" 0 "$e: hk apply behind the new address: accepted"
	run env HAKOPOD_CONFIG="$T/hk-old.toml" hk apply "$T/fn.toml"
	is "$rc" 78 "$e: and refused behind the old one"

	# Once none is left, the gateway moves freely.
	hk apply "$T/fn-none.toml" "$T/more-none.toml" >/dev/null
	ok $? "$e: every serverless service removed"
	stop_pid "$gw_pid"
	sed -i "s/$NEW/$OLD/" "$T/hakopod.toml"
	GW_PORT=${OLD#*:}
	GW_URL=http://$OLD
	run hk-activate -n
	is "$rc/$err" "0/configuration OK" "$e: -n: the old address is accepted"
	gw_start
	ok $? "$e: hk-activate starts on $OLD again without -m"
	run hk apply "$T/fn.toml"
	is "$rc" 0 "$e: and serverless services are applied behind it"
	is "$(gw_code cold.fn.localhost /)" 503 "$e: which it routes"
	stop_pid "$gw_pid"
	grep -Eq 'Sanitizer|runtime error' "$T/gw.log"
	ok $((!$?)) "$e: no sanitizer report"
done
pg_missing_is_failure

# Usage: -m and -n are one or the other.
run hk-activate -m -n
is "$rc" 64 "-m with -n: usage"
done_testing
