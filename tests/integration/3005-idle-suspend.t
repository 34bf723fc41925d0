#!/bin/sh
# idle_action = "suspend" with the exec backend, on SQLite and PostgreSQL:
# an idle service is frozen, not stopped (its process stays, in state T,
# and its ticker stands still; "hk ps" and hk-scale say suspended; the
# gateway parks); the next request thaws the same process and is answered
# by it; a frozen process that is killed, one frozen for
# suspend_max_seconds, and a manual stop all end in a real stop; an
# hk-scale killed and started again adopts the frozen process still
# frozen.
# Three times, one for each way to freeze (hakopod.toml(5) freezer):
# cgroup2 and cgroup1, where every process of the instance's cgroup
# stands still, a daemon that made a session of its own too, and is
# killed with it; signal, SIGSTOP to the process group (state T).
# time_unit_ms = 10: idle_seconds = 30 lasts 300 ms.
# What a check looks at lasts until it is seen: fn/a, fn/dies and fn/stop
# stay frozen as long as the test needs (suspend_max_seconds = 604800);
# fn/max's 1.5 s frozen is seen after the fact, in hk-scale's log and
# its event; a ticker that runs again is waited for.  The grace period is
# 10 s, so that a stop's SIGTERM has that long before any kill.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

start_scale() {
	daemon scale hk-scale -v -g 10
}

# svc NAME [serverless lines]: idle-fn with suspend and a ticker; with
# a cgroup freezer, a daemon's ticker as well.
svc() {
	fn_svc "$1" "idle_action = \"suspend\"
${2:-}"
	printf '[services.%s.environment]\nIDLE_FN_TICK_FILE = "%s"\n' \
	    "$1" "$W/$1.tick"
	[ "$mode" = signal ] ||
	    printf 'IDLE_FN_DAEMON_TICK_FILE = "%s"\n' "$W/$1.dtick"
}

# cgdir PID: the directory of PID's cgroup in the hierarchy of $mode.
cgdir() {
	_m= _c=
	case $mode in
	cgroup2)
		_m=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
		_c=$(sed -n 's/^0:://p' "/proc/$1/cgroup") ;;
	cgroup1)
		_m=$(awk '$0 ~ / - cgroup / && $NF ~ /(^|,)freezer(,|$)/ { print $5; exit }' /proc/self/mountinfo)
		_c=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}freezer\(,[^:]*\)\{0,1\}://p' "/proc/$1/cgroup") ;;
	esac
	[ -n "$_c" ] && echo "$_m$_c"
}

# frozen PID: under signals, every process of its group is stopped
# (state T); with a cgroup, PID's cgroup is hk's own and says frozen.
frozen() {
	case $mode in
	signal)
		_n=0
		for _p in $(pgrep -g "$1"); do
			_st=$(sed 's/^.*) //' "/proc/$_p/stat" 2>/dev/null | cut -d' ' -f1)
			[ "$_st" = T ] || return 1
			_n=$((_n + 1))
		done
		[ "$_n" -ge 1 ] ;;
	cgroup2)
		_d=$(cgdir "$1") && case $_d in */hk.*) ;; *) return 1 ;; esac &&
		    grep -qx 'frozen 1' "$_d/cgroup.events" ;;
	cgroup1)
		_d=$(cgdir "$1") && case $_d in */hk.*) ;; *) return 1 ;; esac &&
		    [ "$(cat "$_d/freezer.state")" = FROZEN ] ;;
	esac
}

# by_hand PID freeze|thaw: what an earlier hk-scale did and did not record
by_hand() {
	case $mode:$2 in
	signal:freeze) kill -STOP "-$1" ;;
	signal:thaw) kill -CONT "-$1" ;;
	cgroup2:freeze) echo 1 >"$(cgdir "$1")/cgroup.freeze" ;;
	cgroup2:thaw) echo 0 >"$(cgdir "$1")/cgroup.freeze" ;;
	cgroup1:freeze) echo FROZEN >"$(cgdir "$1")/freezer.state" ;;
	cgroup1:thaw) echo THAWED >"$(cgdir "$1")/freezer.state" ;;
	esac
}

# dticks NAME: the count its daemon's ticker last wrote; dpid NAME its pid.
dticks() {
	cat "$W/$1.dtick" 2>/dev/null
}
dpid_of() {
	cat "$W/$1.dtick.pid" 2>/dev/null
}

# suspended SERVICE PID: frozen, and hk-scale says suspended.
suspended() {
	frozen "$2" && scale_is "$1" suspended
}

# ticks NAME: the count its ticker last wrote.
ticks() {
	cat "$W/$1.tick" 2>/dev/null
}

# ticks_past NAME N / dticks_past NAME N: its ticker (its daemon's) has
# written more than N (for wait_t: it runs)
ticks_past() {
	[ "$(ticks "$1")" -gt "$2" ]
}
dticks_past() {
	[ "$(dticks "$1")" -gt "$2" ]
}

# gw_subs: how many times the gateway has subscribed to hk-scale.  A
# request after hk-scale's restart waits for its next subscription: one
# sent before it is answered 503 once the gateway's grace (5 s) is over.
gw_subs() {
	count_in "$T/gw.log" 'scale.sock: subscribed'
}

# event_field KIND SERVICE FIELD: FIELD of the newest such event.
event_field() {
	hk-events list --json -n 1 --kind "$1" --service "$2" |
	    python3 -c 'import json, sys
e = json.load(sys.stdin)
print(json.dumps(e[0]["detail"].get(sys.argv[1])) if e else "none")' "$3"
}

run_engine() {
	e="$1 $2" mode=$2
	new_store "$1" "susp$2" || { ok 1 "$e: store"; return; }
	rm -f "$T"/*.log "$W"/*.tick "$W"/*.dtick "$W"/*.pid
	mport=$(free_port)
	idle_setup "$STORE" "max_concurrent_starts = 8
freezer = \"$mode\"
[metrics]
scale = \"127.0.0.1:$mport\""
	# fn/stop handles SIGTERM, as most functions do: frozen, its SIGTERM
	# waits for the thaw under every freezer (cgroup2 lets a fatal one,
	# unhandled, kill at once).
	forever='suspend_max_seconds = 604800'
	app="$(svc a "$forever")$(svc max 'suspend_max_seconds = 150')"
	app="$app$(svc dies "$forever")$(svc stop "$forever")
IDLE_FN_TERM_DELAY = \"0\""
	idle_apply "$app"
	ok $? "$e: the application is applied"
	start_all
	ok $? "$e: hk-events, hk-scale, hk-activate and hk-idle are ready"

	# Started for its readiness gate, then idle: suspended.
	wait_t 10 scale_is fn/a suspended
	pid=$(scale_pid fn/a)
	wait_t 5 suspended fn/a "$pid"
	ok $? "$e: idle, it is suspended: pid $pid is frozen, not gone"
	is "$(ps_state a)" suspended "$e: hk ps says suspended"
	wait_t 5 gw_is fn/a sleeping
	ok $? "$e: the gateway parks its requests"
	wait_t 5 events_reach 1 HTTPIdleSleep fn/a
	is "$(event_field HTTPIdleSleep fn/a action)" '"suspend"' \
	    "$e: HTTPIdleSleep says suspend"
	t1=$(ticks a)
	d1=$(dticks a)
	sleep 0.3
	is "$(ticks a)" "$t1" "$e: its ticker stands still while frozen ($t1)"
	if [ "$mode" != signal ]; then
		like "$d1" '^[0-9]+$' "$e: its daemon ticked before ($d1)"
		is "$(dticks a)" "$d1" \
		    "$e: so does its daemon's, in a session of its own ($d1)"
		acg=$(cgdir "$pid")
		like "$acg" "/hk\.[0-9a-f]{32}\.[0-9]+\.[0-9]+\$" \
		    "$e: it runs in a cgroup of its own, hk.INSTALLATION.PID.SEQ"
		is "$(cgdir "$(dpid_of a)")" "$(cgdir "$pid")" \
		    "$e: its daemon too"
		like "$(grep -h 'freezer:' "$T/scale.log" | head -1)" \
		    "instances in cgroups of their own under .* \\($mode\\)" \
		    "$e: hk-scale logs where, and which"
		is "$(grep -c 'clone3 is refused' "$T/scale.log")" 0 \
		    "$e: and does not say clone3 is refused (no filter here)"
	fi

	# Its HTTPIdleWake: the one after those there before the request.
	w=$(events_of HTTPIdleWake fn/a)
	is "$(get a.fn.localhost /)" 200 "$e: a request thaws it"
	is "$(cat "$T/body")" "idle-fn pid=$pid" \
	    "$e: the same process answers (no new start)"
	wait_t 5 events_reach $((w + 1)) HTTPIdleWake fn/a
	is "$(event_field HTTPIdleWake fn/a resumed)" true \
	    "$e: HTTPIdleWake says resumed"
	wait_t 2 ticks_past a "$t1"
	ok $? "$e: its ticker runs again"
	if [ "$mode" != signal ]; then
		wait_t 2 dticks_past a "$d1"
		ok $? "$e: so does its daemon's"
	fi
	like "$(hk status fn/a)" \
	    'last wake: +[-0-9T:.Z]+ \(request\): resumed after [0-9]+ ms frozen, ready [0-9]+ ms' \
	    "$e: hk status shows the last wake as a resume"
	like "$(hk status fn/a)" 'idle_action=suspend' \
	    "$e: hk status shows the policy's idle_action"
	curl -sS "http://127.0.0.1:$mport/metrics" >"$T/m.txt"
	like "$(cat "$T/m.txt")" 'hk_resumes_total\{service="fn/a"\} [1-9]' \
	    "$e: hk_resumes_total counts the thaw"
	like "$(cat "$T/m.txt")" 'hk_suspends_total\{service="fn/a"\} [1-9]' \
	    "$e: hk_suspends_total counts the freeze"
	like "$(cat "$T/m.txt")" 'hk_services\{state="suspended"\} [1-9]' \
	    "$e: hk_services counts suspended services"
	wait_t 5 suspended fn/a "$pid"
	ok $? "$e: idle again, suspended again"

	# Killed while frozen: it sleeps, and the next request starts anew.
	dpid=$(scale_pid fn/dies)
	wait_t 5 suspended fn/dies "$dpid"
	ok $? "$e: dies: suspended"
	ddpid=$(dpid_of dies)
	dcg=$(cgdir "$dpid" || true)
	kill -KILL "$dpid"
	if [ "$mode" = cgroup1 ]; then
		# cgroup v1 holds a frozen process's SIGKILL until it is
		# thawed (the OOM killer thaws its victims): it ends then
		sleep 0.2
		ok "$(frozen "$dpid"; echo $?)" "$e: dies: cgroup1 holds the SIGKILL while frozen"
		is "$(get dies.fn.localhost /)" 200 \
		    "$e: dies: the next request thaws it, and is answered"
		like "$(cat "$T/body")" "^idle-fn pid=" "$e: dies: by a new process"
		ok "$([ "$(scale_pid fn/dies)" != "$dpid" ]; echo $?)" "$e: dies: a new pid"
		wait_t 5 suspended fn/dies "$(scale_pid fn/dies)"
		ok $? "$e: dies: the new one suspended"
		dpid=$(scale_pid fn/dies)
		ddpid=$(dpid_of dies)
		dcg=$(cgdir "$dpid" || true)
		# as the OOM killer does: the kill, then the thaw
		kill -KILL "$dpid"
		echo THAWED >"$dcg/freezer.state"
	fi
	wait_t 5 scale_is fn/dies sleeping
	ok $? "$e: a frozen process that dies: the service sleeps"
	if [ "$mode" != signal ]; then
		like "$dcg" '/hk\.[0-9a-f.]+$' "$e: dies: in a cgroup of its own"
		wait_t 3 gone "$ddpid"
		ok $? "$e: dies: its frozen daemon (pid $ddpid) is killed with it"
		wait_t 3 sh -c "! test -d '$dcg'"
		ok $? "$e: dies: and its cgroup removed"
	fi
	is "$(ps_state dies)" sleeping "$e: dies: hk ps says sleeping"
	is "$(get dies.fn.localhost /)" 200 "$e: dies: the next request is answered"
	like "$(cat "$T/body")" "^idle-fn pid=" "$e: dies: by a new process"
	ok "$([ "$(scale_pid fn/dies)" != "$dpid" ]; echo $?)" "$e: dies: a new pid"

	# Frozen for suspend_max_seconds (150: 1.5 s): stopped for real.
	# Its 1.5 s frozen is not a window to catch it in: hk-scale's log
	# and the event say it after the fact (the event after those of its
	# earlier instances).
	x=$(events_of HTTPSuspendExpired fn/max)
	is "$(get max.fn.localhost /)" 200 "$e: max: woken"
	mpid=$(scale_pid fn/max)
	wait_t 5 grep -q "service=fn/max: suspended for 150 s: stopping pid $mpid\$" \
	    "$T/scale.log"
	ok $? "$e: max: suspended, then stopped after suspend_max_seconds (pid $mpid)"
	wait_t 5 asleep fn/max "$mpid"
	ok $? "$e: frozen for suspend_max_seconds: stopped (pid $mpid gone)"
	wait_t 5 events_reach $((x + 1)) HTTPSuspendExpired fn/max
	ok $? "$e: max: HTTPSuspendExpired recorded"
	sms=$(event_field HTTPSuspendExpired fn/max suspended_ms)
	ok "$([ "$sms" -ge 1500 ] 2>/dev/null; echo $?)" \
	    "$e: max: after it was frozen for 1.5 s: $sms ms, 1500 or more"
	is "$(ps_state max)" sleeping "$e: max: hk ps says sleeping"
	is "$(get max.fn.localhost /)" 200 "$e: max: the next request is answered"

	# hk stop of a suspended service ends its process at once.
	spid=$(scale_pid fn/stop)
	wait_t 5 suspended fn/stop "$spid"
	ok $? "$e: stop: suspended"
	hk stop fn/stop >/dev/null 2>&1
	ok $? "$e: hk stop of a suspended service"
	# Left frozen, its SIGTERM would wait for the kill at the end of the
	# grace period (10 s; a wait_t 3 gives up at 9 s).
	wait_t 3 gone "$spid" &&
	    ! grep -q "service=fn/stop: .* still there after" "$T/scale.log"
	ok $? "$e: stop: its frozen process ends on its SIGTERM, before the grace period's kill (10 s)"
	if [ "$mode" != signal ]; then
		wait_t 3 gone "$(dpid_of stop)"
		ok $? "$e: stop: so is its daemon"
	fi
	is "$(ps_state stop)" stopped "$e: stop: hk ps says stopped"
	is "$(get stop.fn.localhost /)" 503 "$e: stop: requests get 503"

	# hk-scale killed and started again adopts the frozen process,
	# still frozen (its SIGTERM stops every instance, as for stop).
	wait_t 5 suspended fn/a "$pid"
	subs=$(gw_subs)
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	ok "$(frozen "$pid"; echo $?)" "$e: hk-scale killed: pid $pid is still frozen"
	# as if that run had died between a thaw and its row (20 ms later)
	by_hand "$pid" thaw
	t2=$(ticks a)
	wait_t 2 ticks_past a "$t2"
	ok $? "$e: thawed by hand, it runs"
	start_scale
	ok $? "$e: hk-scale is ready again"
	wait_t 5 scale_is fn/a suspended
	ok $? "$e: it adopted pid $pid as suspended, as its row says"
	wait_t 2 frozen "$pid"
	ok $? "$e: and froze it again"
	wait_t 5 more_in "$T/gw.log" 'scale.sock: subscribed' "$subs"
	wait_t 5 gw_is fn/a sleeping
	is "$(get a.fn.localhost /)" 200 "$e: a request thaws the adopted process"
	is "$(cat "$T/body")" "idle-fn pid=$pid" "$e: the same process answers"

	# hk wake thaws it too, and --wait returns once it is ready.
	wait_t 5 suspended fn/a "$pid"
	ok $? "$e: suspended again"
	is "$(hk wake fn/a --wait --timeout 10 2>&1; echo "rc=$?")" \
	    "$(printf 'fn/a\tready\nrc=0')" "$e: hk wake --wait thaws it"
	is "$(scale_pid fn/a)" "$pid" "$e: the same instance, pid $pid"

	# A run that died between a freeze and its row: the row says
	# running, and the adopting run thaws the process.  hk-idle is
	# stopped first, so that nothing suspends it meanwhile (300 ms).
	stop_pid "$idle_pid"
	hk wake fn/a --wait --timeout 10 >/dev/null 2>&1
	a_running() { [ "$(ps_state a)" = running ]; }
	wait_t 5 a_running
	ok $? "$e: hk ps says running"
	subs=$(gw_subs)
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	by_hand "$pid" freeze
	# cgroup2 says frozen once every task has stopped, a moment later.
	wait_t 2 frozen "$pid"
	ok $? "$e: hk-scale killed, pid $pid frozen by hand"
	start_scale
	ok $? "$e: hk-scale is ready again"
	wait_t 5 scale_is fn/a running
	ok $? "$e: it adopted pid $pid as running, as its row says"
	t3=$(ticks a)
	wait_t 2 ticks_past a "$t3"
	ok $? "$e: and thawed it: its ticker runs"
	wait_t 5 more_in "$T/gw.log" 'scale.sock: subscribed' "$subs"
	is "$(get a.fn.localhost /)" 200 "$e: a request is answered"
	is "$(cat "$T/body")" "idle-fn pid=$pid" "$e: by the same process"

	stop_pid "$idle_pid"
	stop_pid "$gw_pid"
	stop_pid "$scale_pid"
	stop_pid "$events_pid"
	ok "$(gone "$pid"; echo $?)" "$e: hk-scale's stop ends its instances"
	if [ "$mode" != signal ]; then
		ok "$(gone "$(dpid_of a)"; echo $?)" "$e: ... their daemons too"
		is "$(ls -d "$(dirname "$acg")"/hk."$(basename "$acg" | cut -d. -f2)".* 2>/dev/null | wc -l)" 0 \
		    "$e: ... and no cgroup of the installation is left"
	fi
	is "$(grep -Ec 'Sanitizer|runtime error' "$T"/*.log | awk -F: '{ s += $2 } END { print s }')" 0 \
	    "$e: no sanitizer report"
}

run_engine sqlite cgroup2
run_engine postgres cgroup1
run_engine sqlite signal
done_testing
