#!/bin/sh
# lib/cron.c's firings, through tests/tools/cronnext: first at chosen
# daylight-saving changes, where lib/cron.h promises cron(8)'s rules (a
# fixed time in a skipped hour fires at the first minute after the jump,
# in a repeated hour once; wildcards follow the clock, both passes of a
# repeated hour and nothing in a skipped one); then thousands of seeded
# random cases against Debian's python3-croniter 1.3.5 and against a
# reference of cron(8)'s rules over Python's zoneinfo (tests/cron/
# compare.py, which prints the figures and why croniter's differences are
# excused).  A missing cronnext or croniter is a failure, not a skip.
. tests/integration/lib.sh

tool=$HK_BUILD/tests/tools/cronnext
# Debian's python3, which has croniter; not whatever python3 is on PATH.
py=/usr/bin/python3

missing=
[ -x "$tool" ] || missing="$tool (make tests)"
"$py" -c 'import croniter' 2>/dev/null ||
    missing="${missing:+$missing, }python3-croniter for $py (scripts/deps)"
if [ -n "$missing" ]; then
	plan 1
	ok 1 "cron test prerequisites"
	diag "missing: $missing"
	done_testing
fi

# fires EXPR ZONE START N: the N firings after START (a date(1) time),
# as ZONE's local times with their offsets, on one line
fires() {
	_s=$(date -d "$3" +%s)
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$_s" "$4" | "$tool" |
	    tr ' ' '\n' | while read -r _t; do
		if [ "$_t" = -1 ]; then
			echo never
		else
			TZ=$2 date -d "@$_t" '+%F %H:%M%z'
		fi
	done | paste -sd ' ' -
}

B=Europe/Berlin
is "$(fires '30 2 * * *' $B '2026-03-28 12:00 UTC' 2)" \
    "2026-03-29 03:00+0200 2026-03-30 02:30+0200" \
    "Berlin spring forward: 02:30, skipped, fires at 03:00"
is "$(fires '0,30 2 * * *' $B '2026-03-29 01:00 +0100' 2)" \
    "2026-03-29 03:00+0200 2026-03-30 02:00+0200" \
    "Berlin: two skipped times fire once, at 03:00"
is "$(fires '0 3 * * *' $B '2026-03-29 01:00 +0100' 1)" \
    "2026-03-29 03:00+0200" "Berlin: 03:00 exists, fires at 03:00"
is "$(fires '*/15 * * * *' $B '2026-03-29 01:40 +0100' 3)" \
    "2026-03-29 01:45+0100 2026-03-29 03:00+0200 2026-03-29 03:15+0200" \
    "Berlin: */15 fires nothing in the skipped hour"
is "$(fires '30 2 * * *' $B '2026-10-24 12:00 UTC' 2)" \
    "2026-10-25 02:30+0200 2026-10-26 02:30+0100" \
    "Berlin fall back: 02:30 fires once, at its first occurrence"
is "$(fires '30 2 * * *' $B '2026-10-25 02:10 +0100' 1)" \
    "2026-10-26 02:30+0100" \
    "Berlin: from the repeated hour, 02:30 is not fired again"
d=2026-10-25
w="$d 02:00+0200 $d 02:15+0200 $d 02:30+0200 $d 02:45+0200"
w="$w $d 02:00+0100 $d 02:15+0100 $d 02:30+0100 $d 02:45+0100 $d 03:00+0100"
is "$(fires '*/15 * * * *' $B "$d 01:50 +0200" 9)" "$w" \
    "Berlin: */15 fires on both passes through 02:xx"
is "$(fires '@hourly' $B '2026-10-25 01:30 +0200' 3)" \
    "2026-10-25 02:00+0200 2026-10-25 02:00+0100 2026-10-25 03:00+0100" \
    "Berlin: @hourly fires on both passes"
is "$(fires '30 2 * * *' America/New_York '2026-03-07 12:00 UTC' 1)" \
    "2026-03-08 03:00-0400" "New York spring forward: 02:30 fires at 03:00"

# Lord Howe moves by 30 minutes: 02:00 -> 02:30, and 02:00 -> 01:30.
L=Australia/Lord_Howe
is "$(fires '15 2 * * *' $L '2026-10-03 12:00 +1030' 2)" \
    "2026-10-04 02:30+1100 2026-10-05 02:15+1100" \
    "Lord Howe: 02:15, skipped, fires at 02:30"
is "$(fires '45 1 * * *' $L '2026-04-04 12:00 +1100' 2)" \
    "2026-04-05 01:45+1100 2026-04-06 01:45+1030" \
    "Lord Howe: 01:45, repeated, fires once"
d=2026-04-05
w="$d 01:30+1100 $d 01:45+1100 $d 01:30+1030 $d 01:45+1030"
is "$(fires '*/15 1 * * *' $L "$d 01:20 +1100" 5)" \
    "$w 2026-04-06 01:00+1030" \
    "Lord Howe: */15 in hour 1 fires on both passes of 01:30-01:59"
# Chatham jumps from 02:45 to 03:45.
is "$(fires '0 3 * * *' Pacific/Chatham '2026-09-26 12:00 +1245' 2)" \
    "2026-09-27 03:45+1345 2026-09-28 03:00+1345" \
    "Chatham: 03:00, skipped, fires at 03:45"

is "$(fires '0 0 29 2 *' UTC '2026-01-01 00:00 UTC' 2)" \
    "2028-02-29 00:00+0000 2032-02-29 00:00+0000" "29 February: leap years"
is "$(fires '0 0 31 2 *' $B '2026-01-01 00:00 UTC' 1)" "never" \
    "31 February: never"
# 2100 is no leap year: from 2097, the next 29 February is 7 years on.
is "$(fires '0 0 29 2 *' UTC '2097-03-01 00:00 UTC' 1)" \
    "2104-02-29 00:00+0000" "29 February after 2096: 2104"

# Speed: a year of leap-day searches in a zone, by one process.
i=0
: >"$T/leap"
s=$(date -d '2020-01-01 UTC' +%s)
while [ $i -lt 200 ]; do
	printf '0 0 29 2 *\tAmerica/New_York\t%s\t5\n' $((s + i * 86400)) \
	    >>"$T/leap"
	i=$((i + 1))
done
t0=$(date +%s%N)
n=$("$tool" <"$T/leap" | wc -l)
ms=$((($(date +%s%N) - t0) / 1000000))
is "$n" 200 "1000 leap-day firings in New York"
# A figure, not a check: speed is make bench's to measure.
diag "1000 leap-day firings took $ms ms here"

# The random cases: compare.py's TAP, renumbered into ours.
"$py" "$HK_TOP/tests/cron/compare.py" "$tool" >"$T/compare.out" 2>&1
rc=$?
while IFS= read -r line; do
	case $line in
	"ok "*) ok 0 "${line#ok [0-9]* - }" ;;
	"not ok "*) ok 1 "${line#not ok [0-9]* - }" ;;
	"#"*) echo "$line" ;;
	1..*) ;;
	*) diag "$line" ;;
	esac
done <"$T/compare.out"
ok $rc "compare.py exited 0"
done_testing
