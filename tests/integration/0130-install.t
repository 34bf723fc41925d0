#!/bin/sh
# make install into a DESTDIR: the operator config it installs in
# SYSCONFDIR/hakopod works (every daemon's -n, hk validate of the
# installed example app) and names every key at its default; a second
# install keeps the operator's file; the units get BINDIR; api.env ships
# among the examples; the user hakopod is named, not created, since a
# DESTDIR is another system's tree.  make refuses a checkout whose path
# has a space, with the reason.
. tests/integration/lib.sh

R=$T/root
mk() {
	env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s --no-print-directory \
	    -C "$HK_TOP" BUILD="$HK_BUILD" PREFIX=/usr DESTDIR="$R" "$@"
}
run mk install
is "$rc" 0 "make install DESTDIR=... PREFIX=/usr exits 0"
like "$out" '^install: DESTDIR is set: create the user hakopod on the target system: useradd --system .* hakopod$' \
    "it names the useradd line rather than running it"
conf=$R/etc/hakopod/hakopod.toml
cmp -s "$conf" "$HK_TOP/etc/examples/hakopod.toml"
ok $? "it installs the commented operator config in /etc/hakopod"
cmp -s "$R/etc/hakopod/vet-prompt.txt" "$HK_TOP/etc/vet/vet-prompt.txt"
ok $? "and the code vetting gate's prompt beside it"
cmp -s "$R/etc/hakopod/waiting.html" "$HK_TOP/etc/activate/waiting.html"
ok $? "and the gateway's waiting page"

for p in hk-activate hk-events hk-idle hk-jobs hk-scale; do
	run "$R/usr/bin/$p" -n -f "$conf"
	is "$rc $err" "0 configuration OK" "$p -n accepts it"
done
run "$R/usr/bin/hk" -f "$conf" validate \
    "$R/usr/share/hk/examples/http-functions.toml"
is "$rc" 0 "hk validate of the installed example app passes with it"
[ "$rc" = 0 ] || diag "$err"

# Every key the daemons know, at the default they print.
missing=$(HAKOPOD_CONFIG=/dev/null "$R/usr/bin/hk-scale" -n -v 2>&1 |
    python3 -c '
import re, sys
text = open(sys.argv[1]).read()
for line in sys.stdin:
    m = re.match(r"(\w+) = (.*) \(default\)$", line.rstrip("\n"))
    if not m:
        continue
    key, val = m.groups()
    f = re.search(r"^(# )?%s = (\S+)" % key, text, re.M)
    if f is None:
        print("%s: absent" % key)
    elif f.group(1) and f.group(2) != val:
        print("%s: %s, not the default %s" % (key, f.group(2), val))' "$conf")
is "$missing" "" "it has every key, each commented one at its default"

grep -l '@BINDIR@' "$R"/usr/lib/systemd/system/hk-*.service >/dev/null
is "$?" 1 "the units have BINDIR substituted"
is "$(sed -n 's/^ExecStart=//p' "$R/usr/lib/systemd/system/hk-scale.service")" \
    "/usr/bin/hk-lease -j gateway /usr/bin/hk-scale" \
    "hk-scale.service runs /usr/bin/hk-scale under /usr/bin/hk-lease -j"
cmp -s "$R/usr/share/hk/examples/api.env" "$HK_TOP/etc/examples/api.env"
ok $? "the commented api.env is among the examples"
is "$(grep -vc '^#\|^$' "$R/usr/share/hk/examples/api.env")" 0 \
    "and sets nothing"
cmp -s "$R/usr/share/hk/haproxy/haproxy.cfg" "$HK_TOP/etc/haproxy/haproxy.cfg"
ok $? "the HAProxy configuration is installed with the examples"

echo '# the operator was here' >>"$conf"
run mk install
is "$rc" 0 "a second make install exits 0"
like "$out" "^install: $conf exists: kept$" "it says so"
is "$(tail -1 "$conf")" "# the operator was here" \
    "and keeps the operator's file"

# A checkout whose path has a space: make refuses it, and says why.
mkdir "$T/a b"
cp "$HK_TOP/Makefile" "$T/a b/"
run env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -C "$T/a b" -n
like "$rc $err" "^2 Makefile:[0-9]+: \*\*\* the checkout's path has a space \($T/a b\): make cannot build there; clone hk into a path without one\.  Stop\.$" \
    "make in a path with a space: refused, with the reason"
done_testing
