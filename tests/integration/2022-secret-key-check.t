#!/bin/sh
# Every host that shares a store holds the same secret_key_file
# (hakopod.toml(5)), on SQLite and PostgreSQL: once the store holds a
# secret, hk-scale refuses to start (78) and hk secret set refuses to
# seal (78, nothing written, no key file made) with a key file that is
# missing or is not the one the secrets were sealed with, saying which;
# with the right one both go on.  A store without secrets needs no key.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

pg_missing_is_failure

# a key file as hk makes one: 64 hex digits and a newline, mode 0600
other_key() {
	(umask 077 && python3 -c 'import secrets; print(secrets.token_hex(32))' >"$1")
}

# scale_refuses: hk-scale with $HAKOPOD_CONFIG ends at once; rc and err
scale_refuses() {
	run timeout 60 hk-scale -v
	printf '%s\n' "$err" >>"$T/errs"
}

secret_names() {	# secret_names APP: its secrets' names, one line
	hk secret list "$1" 2>/dev/null | cut -f1 | tr '\n' ' '
}

for engine in $(engines); do
	new_store "$engine" key
	GW_STATE=$STORE
	A=$T/$engine-a.key
	B=$T/$engine-b.key
	M=$T/$engine-missing.key

	# No secret yet: no key is needed, and none is made.
	gw_config "secret_key_file = \"$M\""
	daemon scale hk-scale -v
	ok $? "$engine: no secret in the store: hk-scale starts without a key file"
	stop_pid "$scale_pid"
	[ ! -e "$M" ]
	ok $? "$engine: ... and makes none"

	gw_config "secret_key_file = \"$A\""
	run sh -c "printf 'hk-value-one' | hk secret set sec DB_PASSWORD"
	is "$rc" 0 "$engine: hk secret set with key A: exit 0"
	[ -f "$A" ]
	ok $? "$engine: ... key A made"
	daemon scale hk-scale -v
	ok $? "$engine: hk-scale starts with key A"
	stop_pid "$scale_pid"

	# Key B, another host's own: refused by both.
	other_key "$B"
	gw_config "secret_key_file = \"$B\""
	scale_refuses
	is "$rc" 78 "$engine: hk-scale with key B: exit 78"
	like "$err" "hk-scale: .*secret_key_file: $B is not the key the store's secrets were sealed with \\(it does not open sec/DB_PASSWORD, the one set last\\): copy the key file from a host that sealed them, mode 0600" \
	    "$engine: ... saying which secret it does not open and what to do"
	run sh -c "printf 'hk-value-two' | hk secret set sec API_TOKEN"
	is "$rc" 78 "$engine: hk secret set with key B: exit 78"
	printf '%s\n' "$err" >>"$T/errs"
	like "$err" "secret set: secret_key_file: $B is not the key" \
	    "$engine: ... saying so"
	is "$(secret_names sec)" "DB_PASSWORD " "$engine: ... and nothing is written"

	# No key file at all: refused, and none made.
	gw_config "secret_key_file = \"$M\""
	scale_refuses
	is "$rc" 78 "$engine: hk-scale without its key file: exit 78"
	like "$err" "secret_key_file: $M: no such file, and the store holds secrets sealed with a key" \
	    "$engine: ... saying so"
	run sh -c "printf 'hk-value-two' | hk secret set sec API_TOKEN"
	is "$rc" 78 "$engine: hk secret set without its key file: exit 78"
	[ ! -e "$M" ]
	ok $? "$engine: ... and it makes no key of its own"
	is "$(secret_names sec)" "DB_PASSWORD " "$engine: ... nor writes a secret"

	# Key A copied to where the new host reads it: both go on.
	install -m 0600 "$A" "$M"
	run sh -c "printf 'hk-value-two' | hk secret set sec API_TOKEN"
	is "$rc" 0 "$engine: key A copied: hk secret set: exit 0"
	is "$(secret_names sec)" "API_TOKEN DB_PASSWORD " "$engine: ... written"
	daemon scale hk-scale -v
	ok $? "$engine: ... and hk-scale starts"
	stop_pid "$scale_pid"

	# The value is named by neither refusal.
	! grep -q 'hk-value' "$T/scale.log" "$T/errs"
	ok $? "$engine: no value in hk-scale's log nor in what was refused"
	rm -f "$T/scale.log"
done
done_testing
