#!/bin/sh
# The code vetting gate of hk apply and hk vet ([vet], hakopod.toml(5)),
# on both stores, against tests/integration/fn/vet-model.py: a stand-in
# for a language model (none can run here), over HTTP and over HTTPS
# with a test CA.  Off by default; a safe verdict lets the apply through
# and is not asked again; an unsafe one refuses it with nothing applied;
# every soft failure (prose, an empty choice list, not JSON, 500, 401, a
# reply past the timeout, no endpoint, sources over max_bytes, a CA that
# does not match) lets it through with a warning and a VetSkipped event.
# Only allowed files are sent, the key only in the Authorization header.
. tests/integration/lib.sh

for t in openssl python3; do
	command -v "$t" >/dev/null
	ok $? "$t is installed"
done

KEY=sk-test-0123456789-NEVER-SHOWN
echo "$KEY" >"$T/key"
chmod 600 "$T/key"
cp etc/vet/vet-prompt.txt "$T/prompt"
LOG=$T/model.jsonl
: >"$LOG"

# A CA and a certificate for 127.0.0.1; another CA that signed nothing.
P=$T/pki
mkdir "$P"
{
	for ca in ca other; do
		openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		    -nodes -days 1 -subj "/CN=hk-test $ca" -keyout "$P/$ca.key" \
		    -out "$P/$ca.pem" -addext basicConstraints=critical,CA:TRUE \
		    -addext keyUsage=critical,keyCertSign,cRLSign || exit 1
	done
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj "/CN=hk-test server" -keyout "$P/server.key" \
	    -out "$P/server.csr" &&
	    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' \
	    >"$P/server.ext" &&
	    openssl x509 -req -in "$P/server.csr" -CA "$P/ca.pem" \
	    -CAkey "$P/ca.key" -set_serial 1 -days 1 -extfile "$P/server.ext" \
	    -out "$P/server.pem"
} >"$T/openssl.log" 2>&1
ok $? "openssl: a test CA and a certificate for 127.0.0.1"

# The stand-in, over HTTP and over HTTPS; each prints its port.
python3 tests/integration/fn/vet-model.py "$LOG" >"$T/http.port" &
_pids="$_pids $!"
python3 tests/integration/fn/vet-model.py "$LOG" "$P/server.pem" \
    "$P/server.key" >"$T/https.port" &
_pids="$_pids $!"
for f in http https; do
	i=0
	while [ ! -s "$T/$f.port" ] && [ $i -lt 250 ]; do
		sleep 0.02; i=$((i + 1))
	done
done
HTTP=http://127.0.0.1:$(cat "$T/http.port")/v1/chat/completions
HTTPS=https://127.0.0.1:$(cat "$T/https.port")/v1/chat/completions
CLOSED=http://127.0.0.1:$(free_port)/v1/chat/completions

# The function's source: what goes and what never does.
S=$T/src
mkdir -p "$S/node_modules/dep" "$S/__pycache__" "$S/lib"
printf 'print("hello")\n' >"$S/app.py"
printf 'module.exports = 1;\n' >"$S/lib/util.js"
printf '{"k": 1}\n' >"$S/data.json"
printf '# notes\n' >"$S/notes.md"
printf 'module.exports = 2;\n' >"$S/node_modules/dep/index.js"
printf 'pyc' >"$S/__pycache__/app.cpython-311.pyc"
printf 'ELF' >"$S/lib.so"
printf 'x = 1\000binary\n' >"$S/blob.py"
chmod -R a+rX "$S"

cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.api]
command = ["python3", "app.py"]
source = "$S"
public = true
[services.api.serverless]
idle_seconds = 30
APP

# conf STORE [VET...]: the operator config, with a [vet] table if given
conf() {
	_st=$1
	shift
	{
		printf '[server]\nserverless_address = "127.0.0.1:8082"\n'
		printf 'state = "%s"\nruntime_dir = "%s"\n' "$_st" "$T/run"
		if [ $# -gt 0 ]; then
			printf '[vet]\nenabled = true\napi_key_file = "%s"\n' "$T/key"
			case "$*" in
			*prompt_file*) ;;
			*) printf 'prompt_file = "%s"\n' "$T/prompt" ;;
			esac
			printf '%s\n' "$@"
		fi
	} >"$T/hakopod.toml"
}
export HAKOPOD_CONFIG="$T/hakopod.toml"

requests() { wc -l <"$LOG" | tr -d ' '; }
# vrun: run, keeping every output for the check that the key is in none
vrun() {
	run "$@"
	printf '%s\n%s\n' "$out" "$err" >>"$T/all.out"
}
# touch_code WORD: new code, so a new hash to vet
touch_code() { printf '# %s\n' "$1" >>"$S/app.py"; }
# last_event KIND FIELD: a field of the newest such event's detail
last_event() {
	hk-events list --json -n 0 --kind "$1" --service fn/api |
	    python3 -c "import json,sys
e = json.load(sys.stdin)
print(e[-1]['detail']['$2'] if e else '')" 2>/dev/null
}
skipped_events() {
	hk-events list --json -n 0 --kind VetSkipped --service fn/api |
	    python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'
}
revision() {
	hk ps --json | python3 -c 'import json,sys
print([s["revision"] for s in json.load(sys.stdin) if s["service"] == "api"][0])'
}
# soft CASE VET...: the gate with those keys answers no verdict: apply
# goes on with a warning naming CAUSE and records VetSkipped
soft() {
	_case=$1
	_cause=$2
	shift 2
	conf "$STORE" "$@"
	touch_code "$_case"
	_rev=$(revision)
	_n=$(skipped_events)
	vrun hk apply "$T/app.toml"
	is "$rc" 0 "$e: $_case: the apply goes on"
	like "$err" "^hk: warning: services.api: code vetting skipped: $_cause; applying anyway\$" \
	    "$e: $_case: ... warning: $_cause"
	is "$(revision) $(skipped_events)" "$((_rev + 1)) $((_n + 1))" \
	    "$e: $_case: ... a new revision, and a VetSkipped event"
	like "$(last_event VetSkipped cause)" "^$_cause\$" "$e: $_case: ... with the cause"
}

one() {
	e=$1
	new_store "$e" vet || { ok 1 "$e: store"; return; }
	: >"$LOG"

	# off by default: nothing is sent
	conf "$STORE"
	vrun hk apply "$T/app.toml"
	is "$rc $(requests)" "0 0" "$e: the gate is off by default: applied, nothing sent"
	vrun hk vet "$T/app.toml"
	is "$rc" 0 "$e: hk vet with the gate off: exit 0"
	like "$out" "^fn/api	code [0-9a-f]{12}	skipped: the gate is off\$" "$e: ... saying so"

	# hk vet: a safe verdict, what was sent, and how
	conf "$STORE" "endpoint = \"$HTTP\"" 'model = "safe"'
	vrun hk vet "$T/app.toml"
	is "$rc" 0 "$e: hk vet, safe: exit 0"
	like "$out" "^fn/api	code [0-9a-f]{12}	safe\$" "$e: ... prints the verdict"
	is "$(requests)" 1 "$e: ... one request"
	python3 - "$LOG" "$KEY" >"$T/sent.txt" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readlines()[-1])
key = sys.argv[2]
h = {k.lower(): v for k, v in r["headers"].items()}
body = json.loads(r["body"])
user = body["messages"][1]["content"]
files = sorted(l[4:-4] for l in user.splitlines() if l.startswith("=== "))
print("auth", h.get("authorization") == "Bearer " + key)
print("key elsewhere", any(key in v for k, v in h.items()
      if k != "authorization") or key in r["body"])
print("files", " ".join(files))
print("runtime", "python3" in body["messages"][0]["content"])
print("roles", body["messages"][0]["role"], body["messages"][1]["role"])
print("model", body["model"], "type", h.get("content-type"))
PY
	is "$(cat "$T/sent.txt")" "auth True
key elsewhere False
files app.py data.json lib/util.js
runtime True
roles system user
model safe type application/json" \
	    "$e: only .py .js .json went (no notes.md, node_modules, __pycache__, .so, binary), the runtime named, the key only in Authorization"

	# hk apply: the code vetted by hk vet is not sent again
	touch_code first
	vrun hk vet "$T/app.toml"
	is "$rc $(requests)" "0 2" "$e: hk vet of new code: safe, sent"
	vrun hk apply "$T/app.toml"
	is "$rc $(requests)" "0 2" "$e: hk apply of that code: nothing sent, judged before"
	vrun hk vet "$T/app.toml"
	like "$out" "	safe \(judged before\)\$" "$e: hk vet says it was judged before"

	# hk apply of new code: vetted, recorded, then never asked again
	touch_code second
	vrun hk apply "$T/app.toml"
	is "$rc $(requests)" "0 3" "$e: new code: apply vets it (one request)"
	like "$err" "^hk: info: services.api: code [0-9a-f]{12} vetted safe by safe in [0-9.]+ s\$" \
	    "$e: ... and says so"
	is "$(last_event CodeVetted verdict) $(last_event CodeVetted model)" "safe safe" \
	    "$e: ... a CodeVetted event: verdict, model"
	like "$(last_event CodeVetted code)" '^[0-9a-f]{64}$' "$e: ... and the code hash"
	vrun hk apply "$T/app.toml"
	is "$rc $(requests)" "0 3" "$e: the same file again: nothing sent"

	# fenced is read too
	conf "$STORE" "endpoint = \"$HTTP\"" 'model = "fenced"'
	touch_code fenced
	vrun hk apply "$T/app.toml"
	like "$rc $err" "^0 .*vetted safe by fenced" "$e: a verdict in a json fence is read"

	# unsafe: refused, nothing of the file applied
	conf "$STORE" "endpoint = \"$HTTP\"" 'model = "unsafe"'
	touch_code unsafe
	hk ps --json >"$T/ps.before"
	vrun hk apply "$T/app.toml"
	is "$rc $err" "65 $T/app.toml:4: services.api: code vetting refused: opens a reverse shell to a remote host in app.py" \
	    "$e: unsafe: apply exits 65, file:line: services.api: code vetting refused: REASON"
	hk ps --json >"$T/ps.after"
	cmp -s "$T/ps.before" "$T/ps.after"
	ok $? "$e: ... and nothing was applied (hk ps --json byte-identical)"
	is "$(last_event CodeVetted verdict)" unsafe "$e: ... a CodeVetted event, unsafe"
	like "$(last_event CodeVetted reason)" "reverse shell" "$e: ... with the reason"
	vrun hk vet "$T/app.toml"
	is "$rc" 65 "$e: hk vet of unsafe code: exit 65"
	like "$out" "	unsafe: opens a reverse shell to a remote host in app.py\$" "$e: ... and the reason"
	vrun hk apply "$T/app.toml"
	is "$rc" 65 "$e: an unsafe verdict is asked again, never kept"

	# soft failures: applied with a warning and a VetSkipped event
	soft garbage "the verdict is not \{\"safe\": true\|false\}" \
	    "endpoint = \"$HTTP\"" 'model = "garbage"'
	soft empty "no choices in the reply" "endpoint = \"$HTTP\"" 'model = "empty"'
	soft notjson "the reply is not JSON" "endpoint = \"$HTTP\"" 'model = "notjson"'
	soft e500 "HTTP status 500" "endpoint = \"$HTTP\"" 'model = "e500"'
	soft e401 "HTTP status 401" "endpoint = \"$HTTP\"" 'model = "e401"'
	soft slow "no answer within 1 s" "endpoint = \"$HTTP\"" 'model = "slow"' \
	    'timeout_seconds = 1'
	soft closed "unable to reach the endpoint: .+" "endpoint = \"$CLOSED\"" \
	    'model = "safe"'
	head -c 3000 /dev/urandom | base64 >"$S/big.txt"
	soft over "sources over max_bytes: [0-9]+ bytes" "endpoint = \"$HTTP\"" \
	    'model = "safe"' 'max_bytes = 1024'
	rm "$S/big.txt"
	soft wrongca "unable to reach the endpoint: .+" "endpoint = \"$HTTPS\"" \
	    'model = "safe"' "ca_file = \"$P/other.pem\""
	soft systemca "unable to reach the endpoint: .+" "endpoint = \"$HTTPS\"" \
	    'model = "safe"'

	# HTTPS with the test CA: a verdict
	conf "$STORE" "endpoint = \"$HTTPS\"" 'model = "safe"' "ca_file = \"$P/ca.pem\""
	touch_code https
	n=$(requests)
	vrun hk apply "$T/app.toml"
	like "$rc $err" "^0 .*vetted safe by safe" "$e: over HTTPS with the test CA: safe"
	is "$(requests)" "$((n + 1))" "$e: ... one request"

	# the key is never shown
	hk-events list --json -n 0 >"$T/events.json"
	grep -qF "$KEY" "$T/events.json" "$T/all.out"
	is "$?" 1 "$e: the key is in no event and no output of hk"
	like "$(cat "$T/all.out")" "safe" "$e: ... (which were kept)"
}

for e in $(engines); do
	one "$e"
done
pg_missing_is_failure

# [vet] refused as the operator would want
conf "sqlite://$T/c.db" 'endpoint = "http://192.0.2.1/v1/chat/completions"' 'model = "m"'
run hk apply "$T/app.toml"
is "$rc" 78 "http:// to another host: refused (78), nothing sent"
like "$err" 'vet.endpoint: http:// only to a loopback address' "... saying why"
conf "sqlite://$T/c.db" 'endpoint = "ftp://127.0.0.1/x"' 'model = "m"'
run hk apply "$T/app.toml"
like "$rc $err" "^78 .*vet.endpoint: must start with https://" "another scheme: refused"
conf "sqlite://$T/c.db" "endpoint = \"$HTTP\""
run hk apply "$T/app.toml"
like "$rc $err" "^78 .*vet: enabled = true requires model" "enabled without a model: refused"
conf "sqlite://$T/c.db" "endpoint = \"$HTTP\"" 'model = "safe"' 'extensions = ["py"]'
run hk apply "$T/app.toml"
like "$rc $err" "^78 .*vet.extensions: each must be a dot" "an extension without its dot: refused"
conf "sqlite://$T/c.db" "endpoint = \"$HTTP\"" 'model = "safe"' 'timeout_seconds = 0'
run hk apply "$T/app.toml"
like "$rc $err" "^78 .*vet.timeout_seconds: must be an integer between 1 and 300" "timeout 0: refused"
conf "sqlite://$T/c.db" "endpoint = \"$HTTP\"" 'model = "safe"' 'colour = 1'
run hk apply "$T/app.toml"
like "$rc $err" "^78 .*vet.colour: unknown key" "an unknown key: refused"
conf "sqlite://$T/c.db" "endpoint = \"$HTTP\"" 'model = "safe"' "prompt_file = \"$T/nope\""
run hk apply "$T/app.toml"
like "$rc $err" "^78 hk: error: \[vet\] prompt_file $T/nope: No such file" \
    "a prompt file that is not there: 78"
is "$(hk-scale -n -v 2>&1 | grep -c -F "$KEY")" 0 "-n -v shows the key file's name, never the key"

done_testing
