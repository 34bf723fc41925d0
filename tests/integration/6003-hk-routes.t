#!/bin/sh
# hk routes against SQLite and PostgreSQL: one line per serverless service
# (ordinary services are not routed) with its hosts, its /fn/ path, the
# gateway's address and the endpoint of its running instance, as TSV and
# as JSON, diffed with expected files; a stopped service has no endpoint.
# The default hosts are SERVICE.APP.base_domain.
. tests/integration/lib.sh

EXP=$HK_TOP/tests/integration/expected

# sql ENGINE STATEMENT: one statement on the test's store.
sql() {
	case $1 in
	sqlite) sqlite3 "$T/routes.db" "$2" ;;
	postgres) psql "$STORE" -qAtc "$2" >/dev/null ;;
	esac
}

run hk routes --nope
is "$rc" 64 "an unknown flag exits 64"
like "$err" '^usage: hk \[-v\] \[-f config\] routes \[--json\]$' \
    "and prints the usage line"

for engine in $(engines); do
	new_store "$engine" routes
	cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:8082"
state = "$STORE"
runtime_dir = "$T/run"
base_domain = "apps.test"
CONF
	export HAKOPOD_CONFIG=$T/hakopod.toml
	cat >"$T/fn.toml" <<APP
schema_version = 1
name = "fn"

[services.py]
command = ["python3", "hello.py"]
public = true
[services.py.serverless]

[services.api]
command = ["python3", "api.py"]
public = true
hosts = ["api.example.com", "www.example.com"]
[services.api.serverless]

[services.db]
command = ["sleep", "1000"]
APP
	cat >"$T/shop.toml" <<APP
schema_version = 1
name = "shop"

[services.cart]
command = ["python3", "cart.py"]
public = true
[services.cart.serverless]
APP
	hk apply "$T/fn.toml" "$T/shop.toml" >/dev/null
	ok $? "$engine: two apps applied"
	now=$(date +%s000)
	sql "$engine" "INSERT INTO instances (app, service, revision, state,
	    endpoint, node, pid, started_at, ready_at, updated_at) VALUES
	    ('fn', 'py', 1, 'running', '127.0.0.1:9999', 'n1', 1, $now, $now,
	    $now), ('fn', 'api', 1, 'starting', '127.0.0.1:9998', 'n1', 2,
	    $now, 0, $now), ('fn', 'db', 1, 'running', '127.0.0.1:9997', 'n1',
	    3, $now, $now, $now)"
	ok $? "$engine: instances written"
	hk routes >"$T/routes.tsv"
	diff_ok "$T/routes.tsv" "$EXP/6003-routes.tsv" \
	    "$engine: hk routes (TSV)"
	hk routes --json >"$T/routes.json"
	diff_ok "$T/routes.json" "$EXP/6003-routes.json" \
	    "$engine: hk routes --json"
	hk stop fn/py >/dev/null
	is "$(hk routes | grep '	py	' | cut -f6)" - \
	    "$engine: a stopped service has no endpoint"
done
pg_missing_is_failure
done_testing
