#!/bin/sh
# Honest keys: a key of hk.toml(5) that hk cannot yet honour is refused by
# hk validate and hk apply with its reason, and nothing is applied; every
# key the pages hk.toml(5) and hakopod.toml(5) document is either refused
# or set in a file some integration test writes, so that a key cannot be
# added without the behaviour a test sees.
. tests/integration/lib.sh

cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:8082"
state = "sqlite://$T/state.db"
runtime_dir = "$T/run"
CONF
export HAKOPOD_CONFIG="$T/hakopod.toml"
mkdir -p "$T/run"

# (a) The operator's database of issue 34: validates no more, applies not.
cat >"$T/db.toml" <<'APP'
schema_version = 1
name = "db"

[services.db]
image = "docker.io/library/postgres:16"
replicas = 3
volumes = ["pgdata:/var/lib/postgresql/data"]
gpu = 1
ports = [5433]
APP
Y='not supported yet'
run hk validate "$T/db.toml"
is "$rc" 65 "the operator's database is refused (65)"
is "$err" "$T/db.toml:8: services.db.gpu: $Y: hk gives an instance no GPU
$T/db.toml:9: services.db.ports: $Y: hk gives a service one port, port" \
    "each key it cannot honour is named with its reason (volumes and replicas it can)"
printf '%s\n' "$err" | sed 's/^/# /'
run hk apply "$T/db.toml"
is "$rc" 65 "hk apply refuses it too (65)"
run hk ps
is "$rc $(printf '%s\n' "$out" | grep -c '^db/')" "0 0" \
    "hk ps shows nothing of the app db"

# replicas = 1 and backend_http2 = false are what runs: accepted (replicas
# above 1 run with exec: 2021-scale-replicas.t).
cat >"$T/one.toml" <<'APP'
schema_version = 1
name = "one"

[services.w]
command = ["sleep", "1000"]
replicas = 1
backend_http2 = false
APP
run hk validate "$T/one.toml"
is "$rc" 0 "replicas = 1 and backend_http2 = false validate"

# The refused keys of hk.toml(5), each alone on an ordinary service.
refuse_one() {	# refuse_one KEY 'KEY = VALUE'
	printf 'schema_version = 1\nname = "r"\n[services.s]\ncommand = ["x"]\n%s\n' \
	    "$2" >"$T/r.toml"
	run hk validate "$T/r.toml"
	case $err in
	"$T/r.toml:5: services.s.$1: "*"$Y"*)
		ok 0 "$1 is refused: ${err#*services.s.}"
		refused="$refused $1 "
		;;
	*)
		ok 1 "$1 is refused (rc $rc: $err)"
		;;
	esac
}
refused=
refuse_one ports 'ports = [9000]'
refuse_one tcp_ports 'tcp_ports = [5432]'
refuse_one backend_certificate 'backend_certificate = "/c.pem"'
refuse_one gpu 'gpu = 1'
refuse_one autoscale 'autoscale = { min = 1, max = 4 }'
refuse_one jobs 'jobs = [{ command = ["migrate"] }]'
refuse_one backend_http2 'backend_http2 = true'
printf 'schema_version = 1\nname = "r"\n[services.s]\ncommand = ["x"]\nsize = "large"\n' \
    >"$T/r.toml"
run hk validate "$T/r.toml"
is "$rc $err" "65 $T/r.toml:5: services.s.size: \"large\" is not applied by backend \"exec\", which sets no memory or CPU limit: use container or systemd, or leave size unset" \
    "size = \"large\" is refused on exec"

# What the gateway would not route and exec would not run: refused too.
R='the gateway routes serverless services only: an ordinary service is reached at its own port (add [serverless], or remove it)'
for kv in 'public = true' 'hosts = ["s.r.localhost"]'; do
	printf 'schema_version = 1\nname = "r"\n[services.s]\ncommand = ["x"]\n%s\n' \
	    "$kv" >"$T/r.toml"
	run hk validate "$T/r.toml"
	is "$rc $err" "65 $T/r.toml:5: services.s.${kv%% *}: $R" \
	    "${kv%% *} on an ordinary service is refused"
done
printf 'schema_version = 1\nname = "r"\n[services.s]\ncommand = ["x"]\npublic = false\n' \
    >"$T/r.toml"
run hk validate "$T/r.toml"
is "$rc" 0 "public = false on an ordinary service is what runs: accepted"
printf 'schema_version = 1\nname = "r"\n[services.s]\ncommand = ["x"]\nimage = "y"\nbackend = "exec"\n' \
    >"$T/r.toml"
run hk validate "$T/r.toml"
is "$rc $err" "65 $T/r.toml:5: services.s.image: not used by backend \"exec\", which runs command on this host: use backend = \"container\", or remove it" \
    "an image beside backend = \"exec\" is refused"

# enabled, on a service (6014-hk-enabled.t runs it with every daemon):
# false is honoured by the apply, which stops the service; not a boolean
# is refused.
printf 'schema_version = 1\nname = "off"\n[services.w]\ncommand = ["sleep", "1000"]\nenabled = false\n' \
    >"$T/off.toml"
run hk apply "$T/off.toml"
is "$rc $(hk ps | cut -f1-4 | grep '^off	')" "0 off	w	disabled	1" \
    "enabled = false on a service: the apply stops it (hk ps: disabled)"
printf 'schema_version = 1\nname = "off"\n[services.w]\ncommand = ["sleep", "1000"]\nenabled = "no"\n' \
    >"$T/off.toml"
run hk validate "$T/off.toml"
is "$rc $err" "65 $T/off.toml:5: services.w.enabled: must be a boolean" \
    "enabled on a service must be a boolean"

# (b) Every documented key: refused above, or set by some test's file.
# KEY = in a heredoc or printf, or a dotted/table form ([a.KEY], KEY.x).
keys_of() {	# keys_of PAGE: the .It Ic KEY entries, one a line, and
		# the keys of [metrics], which its prose names
	{
	sed -n '/^\.Ss Metrics/,/^\.S[sh] [^M]/s/^\.Ic \([a-z_]*\)$/\1/p' "$1"
	sed -n 's/^\.It Ic //p' "$1" | awk '{
		want = 1
		for (i = 1; i <= NF; i++) {
			if ($i == "No") break
			if ($i == "Ic" || $i == ",") { want = 1; continue }
			if (want && $i ~ /^[a-z_][a-z0-9_]*$/) print $i
			want = 0
		}
	}'
	} | sort -u
}
walk() {	# walk PAGE
	for k in $(keys_of "$1"); do
		where=$(grep -lE "(^|[^A-Za-z0-9_.])$k = |\\\\n$k = |[.[]$k[].]|^$k\\." \
		    tests/integration/*.t 2>/dev/null |
		    grep -v '6011-keys-honest' | sed 's|.*/||; s|\.t$||' |
		    head -3 | tr '\n' ' ')
		case $refused in
		*" $k "*)
			diag "$k: refused${where:+; set in $where}"
			ok 0 "$1: $k: refused"
			continue
			;;
		esac
		if [ -n "$where" ]; then
			diag "$k: set in $where"
			ok 0 "$1: $k: exercised"
		else
			ok 1 "$1: $k: documented, neither refused nor set by a test"
		fi
	done
}
for page in man/hk.toml.5 man/hakopod.toml.5; do
	n=$(keys_of "$page" | wc -l)
	[ "$n" -ge 40 ]
	ok $? "$page: $n keys found (the page's parse holds)"
	walk "$page"
done

done_testing
