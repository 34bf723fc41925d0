#!/bin/sh
# The command lines of every program: -h and --help print the usage on
# standard output and exit 0, and that usage is the SYNOPSIS of the
# program's man page (STYLE 2.12); each command of hk and each query of
# hk-events does the same with its own line of the SYNOPSIS.  A bad option
# exits 64 with one error in the shape of all others, "PROG: error: ...",
# whatever path the program was run by, then the usage on stderr.
. tests/integration/lib.sh

command -v mandoc >/dev/null
ok $? "mandoc is installed (the SYNOPSIS is read from the man pages)"

# entries PROG: a usage or SYNOPSIS text on stdin, one line per form of
# the command (a form starts with PROG; wrapped lines are joined), with
# "usage:" dropped and the words single-spaced.
entries() {
	sed 's/^usage://' | awk -v p="$1" '
		{ $1 = $1 }
		$0 == "" { next }
		$1 == p { if (e != "") print e; e = $0; next }
		{ e = e " " $0 }
		END { if (e != "") print e }'
}

# synopsis PAGE PROG: the SYNOPSIS of man/PAGE as entries
synopsis() {
	mandoc -Tascii -O width=1000 "$HK_TOP/man/$1" |
	    sed "s/.$(printf '\b')//g" |
	    awk '/^SYNOPSIS$/ { on = 1; next } /^[A-Z]/ { on = 0 } on' |
	    entries "$2"
}

for pair in hk:hk.1 hk-activate:hk-activate.8 hk-scale:hk-scale.8 \
    hk-idle:hk-idle.8 hk-events:hk-events.8 hk-jobs:hk-jobs.8 \
    hk-lease:hk-lease.1; do
	prog=${pair%%:*}
	syn=$(synopsis "${pair#*:}" "$prog")
	like "$syn" "^$prog " "$prog: ${pair#*:} has a SYNOPSIS"
	for args in --help -h "-v --help"; do
		run $prog $args
		is "$rc" 0 "$prog $args: exits 0"
		is "$(printf '%s\n' "$out" | entries "$prog")" "$syn" \
		    "$prog $args: prints the SYNOPSIS on standard output"
		is "$err" "" "$prog $args: and nothing on standard error"
	done
done

# A command's own usage is its line of the SYNOPSIS.
hk_syn=$(synopsis hk.1 hk)
for cmd in validate apply ps routes status history rollback stop start new \
    invoke runs; do
	for args in --help -h; do
		run hk $cmd $args
		is "$rc:$err" "0:" "hk $cmd $args: exits 0, nothing on stderr"
		line=$(printf '%s\n' "$out" | entries hk)
		printf '%s\n' "$hk_syn" | grep -qxF -- "$line"
		ok $? "hk $cmd $args: prints its line of hk(1)'s SYNOPSIS ($line)"
	done
done
ev_syn=$(synopsis hk-events.8 hk-events)
for cmd in list tail requests; do
	for args in --help -h; do
		run hk-events $cmd $args
		is "$rc:$err" "0:" "hk-events $cmd $args: exits 0, nothing on stderr"
		line=$(printf '%s\n' "$out" | entries hk-events)
		printf '%s\n' "$ev_syn" | grep -qxF -- "$line"
		ok $? "hk-events $cmd $args: prints its line of hk-events(8)'s SYNOPSIS ($line)"
	done
done

# bad PROG|CMD WANT ARGS...: run ARGS; exit 64, nothing on stdout, WANT as
# the first line of stderr, then the usage: the SYNOPSIS of PROG, or the
# line of the command CMD ("hk ps") in it.
bad() {
	_what=$1 _want=$2
	shift 2
	run "$@"
	is "$rc:$out" "64:" "$*: exits 64, nothing on stdout"
	is "$(printf '%s\n' "$err" | head -1)" "$_want" "$*: says '$_want'"
	_prog=${_what%% *}
	_got=$(printf '%s\n' "$err" | sed 1d | entries "$_prog")
	case $_what in
	*" "*)
		# hk new reads no operator config: no -f in its line
		printf '%s\n' "$_got" |
		    grep -Eq "^$_prog \[-v\] (\[-f config\] )?${_what#* } " ||
		    [ "$_got" = "$_prog [-v] [-f config] ${_what#* }" ]
		ok $? "$*: then the usage of $_what ($_got)"
		;;
	*)
		is "$_got" "$(synopsis "$_page" "$_prog")" "$*: then the usage"
		;;
	esac
}

for pair in hk:hk.1 hk-activate:hk-activate.8 hk-scale:hk-scale.8 \
    hk-idle:hk-idle.8 hk-events:hk-events.8 hk-jobs:hk-jobs.8 \
    hk-lease:hk-lease.1; do
	prog=${pair%%:*}
	_page=${pair#*:}
	bad "$prog" "$prog: error: invalid option -- 'Z'" $prog -Z
	bad "$prog" "$prog: error: unrecognized option '--bogus'" $prog --bogus
	bad "$prog" "$prog: error: invalid option -- 'Z'" "$HK_BUILD/bin/$prog" -Z
	bad "$prog" "$prog: error: option requires an argument -- 'f'" $prog -f
done

# hk-listen, which s6 replicas' run scripts exec (hk-listen(8)): no -v,
# no -f, and the same usage and errors.
_page=hk-listen.8
syn=$(synopsis hk-listen.8 hk-listen)
like "$syn" "^hk-listen " "hk-listen: hk-listen.8 has a SYNOPSIS"
for args in --help -h; do
	run hk-listen $args
	is "$rc:$err" "0:" "hk-listen $args: exits 0, nothing on stderr"
	is "$(printf '%s\n' "$out" | entries hk-listen)" "$syn" \
	    "hk-listen $args: prints the SYNOPSIS on standard output"
done
bad hk-listen "hk-listen: error: invalid option -- 'Z'" hk-listen -Z
bad hk-listen "hk-listen: error: unrecognized option '--bogus'" \
    hk-listen --bogus
bad hk-listen "hk-listen: error: no command" hk-listen "$T/none"

# hk-hold, a container's entrypoint while its secrets come (hk-hold(8)):
# the same usage and errors.
_page=hk-hold.8
syn=$(synopsis hk-hold.8 hk-hold)
like "$syn" "^hk-hold " "hk-hold: hk-hold.8 has a SYNOPSIS"
for args in --help -h; do
	run hk-hold $args
	is "$rc:$err" "0:" "hk-hold $args: exits 0, nothing on stderr"
	is "$(printf '%s\n' "$out" | entries hk-hold)" "$syn" \
	    "hk-hold $args: prints the SYNOPSIS on standard output"
done
bad hk-hold "hk-hold: error: invalid option -- 'Z'" hk-hold -Z
bad hk-hold "hk-hold: error: unrecognized option '--bogus'" hk-hold --bogus
bad hk-hold "hk-hold: error: -t 0: not 1 to 86400 seconds" hk-hold -t 0 d c
bad hk-hold "hk-hold: error: no command" hk-hold -t 5 "$T"

for cmd in validate apply ps routes status history rollback stop start new \
    invoke runs; do
	bad "hk $cmd" "hk: error: unrecognized option '--bogus'" hk $cmd --bogus
	bad "hk $cmd" "hk: error: invalid option -- 'Z'" hk $cmd -Z
done
bad "hk status" "hk: error: option '--json' doesn't allow an argument" \
    hk status --json=yes fn/api
for cmd in list tail requests; do
	bad "hk-events $cmd" "hk-events: error: unrecognized option '--bogus'" \
	    hk-events $cmd --bogus
	bad "hk-events $cmd" "hk-events: error: option requires an argument -- 'n'" \
	    hk events $cmd -n
done

# A wrong number of operands is a usage error too, never a silent 64.
for args in "ps extra" "routes extra" "status" "status a b" "stop" \
    "start a b" "validate" "apply" "history" "history a b" "rollback" \
    "rollback a 1 2"; do
	run hk $args
	is "$rc:$out" "64:" "hk $args: exits 64"
	like "$err" "^usage: hk \[-v\] \[-f config\] ${args%% *}( |\$)" \
	    "hk $args: the usage of ${args%% *} on stderr"
done

# The pages themselves: what mandoc warns of, and the quotes it does not
# (scripts/mdoc-quotes), as make lint checks them.
out=$(mandoc -Tlint -Wwarning "$HK_TOP"/man/*.[0-9] 2>&1)
is "$?:$out" "0:" "mandoc -Tlint: no warning in man/"
out=$("$HK_TOP/scripts/mdoc-quotes" "$HK_TOP"/man/*.[0-9])
is "$?:$out" "0:" "no quoting macro nested in another in man/"

done_testing
