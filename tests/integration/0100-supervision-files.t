#!/bin/sh
# The supervision files in etc/: every systemd unit passes
# systemd-analyze verify (which exits 0 on an unknown key, so any output
# is a failure) and drops privileges (hk-scale keeps three capabilities,
# the others none), and every s6 service directory is complete and drops
# privileges in the same way.
. tests/integration/lib.sh

units=$(ls etc/systemd/*.service)
dirs=$(ls -d etc/s6/*/)

command -v systemd-analyze >/dev/null
ok $? "systemd-analyze is installed"
if command -v systemd-analyze >/dev/null; then
	for u in $units; do
		sed "s|@BINDIR@|$HK_BUILD/bin|g" "$u" >"$T/$(basename "$u")"
	done
	for u in $units; do
		name=$(basename "$u")
		out=$(cd "$T" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify \
		    --man=no "$T/$name" 2>&1)
		is "$out" "" "systemd-analyze verify $name prints nothing"
		# The pages it names are ours (verify --man=no skips them).
		missing=
		for m in $(sed -n 's/^Documentation=//p' "$T/$name"); do
			m=${m#man:}
			page=${m%(*}
			sec=${m#*(}
			[ -f "man/$page.${sec%)}" ] || missing="$missing $m"
		done
		is "$missing" "" "$name: its Documentation= pages exist in man/"
	done
fi

# key UNIT KEY: the values of KEY in the unit, one line
key() { sed -n "s/^$2=//p" "$1" | tr '\n' ' ' | sed 's/ $//'; }
SCALE_CAPS="CAP_SETUID CAP_SETGID CAP_KILL CAP_CHOWN"
for u in $units; do
	name=$(basename "$u" .service)
	is "$(key "$u" User) $(key "$u" Group)" "hakopod hakopod" \
	    "$name.service runs as hakopod"
	is "$(key "$u" NoNewPrivileges)" yes "$name.service: NoNewPrivileges"
	if [ "$name" = hk-scale ]; then
		is "$(key "$u" AmbientCapabilities) / $(key "$u" CapabilityBoundingSet)" \
		    "$SCALE_CAPS / $SCALE_CAPS" \
		    "hk-scale.service: exactly its four capabilities, ambient"
		key "$u" MemoryDenyWriteExecute | grep -q yes
		is "$?" 1 "hk-scale.service: no MemoryDenyWriteExecute (JIT children)"
	else
		is "$(key "$u" AmbientCapabilities)/$(key "$u" CapabilityBoundingSet)/$(key "$u" MemoryDenyWriteExecute)" \
		    "//yes" "$name.service: no capability, no W+X memory"
	fi
done

for d in $dirs; do
	p=$(basename "$d")
	test -x "$d/run" && sh -n "$d/run"
	ok $? "s6 $p: run is an executable shell script"
	is "$(cat "$d/notification-fd" 2>/dev/null)" 3 "s6 $p: notification-fd is 3"
	grep -q -- "-d 3" "$d/run"
	ok $? "s6 $p: run passes -d 3 to the daemon"
	test -x "$d/log/run" && grep -q '^exec s6-log' "$d/log/run"
	ok $? "s6 $p: a log service runs s6-log"
	sh "$d/finish" 78
	is "$?" 125 "s6 $p: finish turns 78 (bad config) into 125 (no restart)"
	sh "$d/finish" 1
	is "$?" 0 "s6 $p: finish lets other exits restart"
	test -f "etc/systemd/$p.service"
	ok $? "s6 $p has a systemd unit too"
	if [ "$p" = hk-scale ]; then
		grep -q -- '--reuid hakopod --regid hakopod --init-groups' \
		    "$d/run" &&
		    grep -q -- '--ambient-caps +setuid,+setgid,+kill,+chown' "$d/run" &&
		    grep -q -- '--bounding-set -all,+setuid,+setgid,+kill,+chown' "$d/run"
	else
		grep -q '^exec s6-setuidgid hakopod ' "$d/run"
	fi
	ok $? "s6 $p: run drops to hakopod"
done

done_testing
