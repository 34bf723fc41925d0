#!/bin/sh
# hakopod.toml's freezer key, as an operator meets it: hk-scale -n -v
# shows it; a bad value is refused by name; a hierarchy named that the
# host cannot give stops hk-scale at start with the reason (exit 78),
# where "auto" goes on with signals and says so: checked in a mount
# namespace whose cgroup hierarchies are unmounted, and as an
# unprivileged user who may make no cgroup.  What each way does to a
# suspended instance is 3005-idle-suspend.t's.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

for tool in unshare setpriv; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done

mkdir -p "$T/db" "$T/run"
export HAKOPOD_CONFIG="$T/hakopod.toml"
conf() {	# conf VALUE: the operator config with freezer = VALUE
	scale_operator "$T/hakopod.toml" "sqlite://$T/db/state.db" \
	    "freezer = \"$1\""
}

scale_operator "$T/hakopod.toml" "sqlite://$T/db/state.db"
run hk-scale -n -v -f "$T/hakopod.toml"
is "$rc" 0 "hk-scale -n -v: exit 0"
like "$err" 'freezer = "signal" \(default\)' "it shows freezer = \"signal\" (default)"

conf cgroup3
run hk-scale -n -f "$T/hakopod.toml"
is "$rc" 78 "freezer = \"cgroup3\": exit 78"
like "$err" "hakopod.toml:5: server.freezer: must be auto, cgroup2, cgroup1 or signal" \
    "... file:line: key: must be auto, cgroup2, cgroup1 or signal"

# nocg CMD...: CMD in a mount namespace without the cgroup hierarchies
# (a script, which execs, so that CMD keeps its pid).
cat >"$T/nocg" <<'EOF'
#!/bin/sh
exec unshare -m sh -c 'for m in $(awk "\$9 ~ /^cgroup2?\$/ { print \$5 }" \
    /proc/self/mountinfo); do umount "$m" || exit 1; done; exec "$@"' nocg "$@"
EOF
chmod +x "$T/nocg"

for k in cgroup2 cgroup1; do
	conf $k
	run "$T/nocg" timeout 10 hk-scale -f "$T/hakopod.toml"
	is "$rc" 78 "$k without its hierarchy: hk-scale exits 78"
	like "$err" "hk-scale: fatal: freezer = \"$k\": no such hierarchy mounted, or our cgroup is outside it" \
	    "... saying which and why"
done

conf auto
rm -f "$T/scale.log"
daemon scale "$T/nocg" hk-scale -v
ok $? "auto without either: hk-scale starts"
like "$(cat "$T/scale.log")" "freezer: no cgroup freezer \(cgroup2: no such hierarchy mounted, or our cgroup is outside it; cgroup1: no such hierarchy mounted, or our cgroup is outside it\): a suspend stops the process group with SIGSTOP" \
    "... and says it freezes with signals, and why"
stop_pid "$scale_pid"

# As daemon, without the right to make a cgroup (root's directories).
chown -R daemon:daemon "$T/db" "$T/run"
DROP="setpriv --reuid daemon --regid daemon --init-groups"
if [ -n "$(awk '$9 == "cgroup2"' /proc/self/mountinfo)" ]; then
	conf cgroup2
	run $DROP timeout 10 hk-scale -f "$T/hakopod.toml"
	is "$rc" 78 "cgroup2 as an unprivileged user: exit 78"
	like "$err" 'hk-scale: fatal: freezer = "cgroup2": mkdir .*/hk\.[0-9a-f]{32}\.[0-9]+\.0: Permission denied' \
	    "... mkdir of its cgroup: Permission denied"
else
	ok 1 "this host mounts cgroup2 (the test needs it)"
fi
conf signal
rm -f "$T/scale.log"
# shellcheck disable=SC2086
daemon scale $DROP hk-scale -v
ok $? "signal as an unprivileged user: hk-scale starts"
is "$(grep -c 'freezer:' "$T/scale.log")" 0 \
    "... and says nothing of cgroups"
stop_pid "$scale_pid"

done_testing
