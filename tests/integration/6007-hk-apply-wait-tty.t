#!/bin/sh
# hk apply --wait on a terminal (script(1) gives it a pty): the services
# still waited for on one line, rewritten in place each second ("\r", then
# erase to the end of line), cleared before each final line; exit codes
# through script -e (0 ready, 75 failed).  Piped, no control sequence.
# The display does not depend on the store: SQLite only.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

command -v script >/dev/null
ok $? "script(1) is installed"
new_store sqlite tty
scale_operator "$T/hakopod.toml" "$STORE"
export HAKOPOD_CONFIG="$T/hakopod.toml" SHELL=/bin/sh
daemon scale hk-scale -g 1
ok $? "hk-scale starts"

# app TAG DELAY [extra]: slow, ordinary, ready after DELAY seconds
app() {
	{
		printf 'schema_version = 1\nname = "w"\n'
		fn_service slow "[services.slow.environment]
SCALE_TAG = \"$1\"
SCALE_DELAY = \"$2\""
		printf '%s\n' "${3:-}"
	} >"$T/a.toml"
}
# tty CMD: runs it on a pty; rc, and out with CR LF made LF, ESC as "^["
tty() {
	script -qec "$1" /dev/null >"$T/tty.raw" 2>&1 </dev/null
	rc=$?
	out=$(sed 's/\r$//; s/\x1b/^[/g' "$T/tty.raw")
}
CLR=$(printf '\r\033[K')

app one 2
tty "hk apply --wait $T/a.toml"
is "$rc" 0 "a deploy that becomes ready: exit 0 through the pty"
like "$out" '^w/slow	revision 1	created$' "apply's own line first"
like "$out" "$(printf '\r')\\^\\[\\[Kwaiting 0s for w/slow \\(revision 1\\)" \
    "then the services waited for, on a line of their own"
like "$out" "$(printf '\r')\\^\\[\\[Kwaiting 1s for w/slow \\(revision 1\\)$(printf '\r')" \
    "redrawn in place a second later"
is "$(tail -n 1 "$T/tty.raw" | sed 's/.*\x1b\[K//')" "w/slow revision 1 ready$(printf '\r')" \
    "cleared before the final line: the user sees w/slow revision 1 ready"
[ "$(grep -o -F "$CLR" "$T/tty.raw" | wc -l)" -ge 3 ]
ok $? "each redraw and the clearing: back to the line's start, erase it"

app two 0 '
[services.bad]
command = ["sh", "-c", "echo no database here; exit 3"]'
tty "hk apply --wait $T/a.toml"
is "$rc" 75 "a service that fails: exit 75 through the pty (script -e)"
like "$(tail -n 1 "$T/tty.raw" | sed 's/.*\x1b\[K//')" \
    '^w/bad revision 1 failed: .*no database here' \
    "the last line says which failed, and why"

app three 0
run hk apply --wait "$T/a.toml"
is "$rc:$(printf '%s' "$out" | grep -c "$(printf '\033')")" "0:0" \
    "piped: exit 0, no control sequence"
stop_pid "$scale_pid"
done_testing
