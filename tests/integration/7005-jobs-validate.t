#!/bin/sh
# hk validate of [jobs.NAME] and [services.X.schedules.NAME]: good ones
# pass; every key's bad value is refused with "file:line: key: reason"
# and exit 65, and hk apply of such a file writes nothing.
. tests/integration/lib.sh

cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:8082"
state = "sqlite://$T/state.db"
runtime_dir = "$T/run"
CONF
export HAKOPOD_CONFIG="$T/hakopod.toml"

# app BODY: an app with the function fn/echo (serverless) and the
# ordinary service fn/web, then BODY; lines 1-9 are ours.
app() {
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"
[services.echo]
command = ["python3", "x.py"]
public = true
serverless = { idle_seconds = 30 }
[services.web]
command = ["python3", "y.py"]
port = 8000
$1
APP
}

# bad BODY LINE KEY REASON: validate refuses with exactly that line
bad() {
	app "$1"
	run hk validate "$T/app.toml"
	is "$rc $err" "65 $T/app.toml:$2: $3: $4" "refused: $3: $4"
}

app '
[jobs.seed]
service = "echo"
run_id = 3
event = { table = { nested = [1, 2.5, true] }, when = 1979-05-27T07:32:00Z }
method = "PUT"
path = "/seed?x=1"
timeout_seconds = 600

[jobs.again]
service = "echo"
event = "[1, \"two\", null]"

[services.echo.schedules.nightly]
cron = "30 2 * * 1-5"
timezone = "Europe/Berlin"
event = { kind = "nightly" }
path = "/cron"
method = "POST"
enabled = false
concurrency = "allow"
catch_up = true
timeout_seconds = 1

[services.echo.schedules.tick]
cron = "@hourly"'
run hk validate "$T/app.toml"
is "$rc $out" "0 $T/app.toml: app fn: 2 services, 1 serverless: OK" \
    "jobs and schedules with every key validate"
test ! -e "$T/state.db"
ok $? "... and validate touches no store"
is "$err" "hk: warning: validate: job run_ids not checked: no store at sqlite://$T/state.db" \
    "... and says that the run_ids were not checked against it"

# [jobs]
bad '[jobs]
x = 1' 11 jobs.x "must be a table"
printf 'schema_version = 1\nname = "fn"\njobs = 3\n' >"$T/root.toml"
run hk validate "$T/root.toml"
is "$rc $err" "65 $T/root.toml:3: jobs: must be a table of [jobs.NAME]" \
    "refused: a root jobs that is no table"
bad '[jobs.Bad_Name]
service = "echo"' 10 jobs.Bad_Name "must be 1 to 63 of a-z, 0-9 and '-', starting and ending with a letter or digit"
bad '[jobs.j]
event = {}' 10 jobs.j.service "missing: the serverless service of this app that the run is sent to"
bad '[jobs.j]
service = "nosuch"' 11 jobs.j.service 'no service "nosuch" in this file'
bad '[jobs.j]
service = "web"' 11 jobs.j.service 'service "web" has no [serverless] table: a run is sent through the gateway'"'"'s /fn/ route'
bad '[jobs.j]
service = 7' 11 jobs.j.service "must be a string"
bad '[jobs.j]
service = "echo"
run_id = -1' 12 jobs.j.run_id "must be between 0 and 9223372036854775807"
bad '[jobs.j]
service = "echo"
run_id = "2"' 12 jobs.j.run_id "must be an integer"
bad '[jobs.j]
service = "echo"
event = "{bad"' 12 jobs.j.event "not JSON: string or '}' expected near 'bad' (column 4)"
bad '[jobs.j]
service = "echo"
event = [1, 2]' 12 jobs.j.event "must be a table, or a string holding JSON"
bad '[jobs.j]
service = "echo"
event = "{\"a\": 1, \"a\": 2}"' 12 jobs.j.event "not JSON: duplicate object key near '\"a\"' (column 12)"
big=$(head -c 70000 /dev/zero | tr '\0' x)
bad "[jobs.j]
service = \"echo\"
event = { big = \"$big\" }" 12 jobs.j.event "70010 bytes as JSON, more than 65536"
bad '[jobs.j]
service = "echo"
method = "post"' 12 jobs.j.method "must be an upper-case method of at most 15 letters, as POST"
bad '[jobs.j]
service = "echo"
method = ""' 12 jobs.j.method "must not be empty"
bad '[jobs.j]
service = "echo"
path = "run"' 12 jobs.j.path "must start with '/' and hold visible ASCII only"
bad '[jobs.j]
service = "echo"
path = "/a b"' 12 jobs.j.path "must start with '/' and hold visible ASCII only"
bad '[jobs.j]
service = "echo"
timeout_seconds = 0' 12 jobs.j.timeout_seconds "must be between 1 and 600"
bad '[jobs.j]
service = "echo"
timeout_seconds = 601' 12 jobs.j.timeout_seconds "must be between 1 and 600"
bad '[jobs.j]
service = "echo"
cron = "* * * * *"' 12 jobs.j.cron "unknown key"

# [services.X.schedules]
bad '[services.echo.schedules]
s = 1' 11 services.echo.schedules.s "must be a table"
bad '[services.web.schedules.s]
cron = "@daily"' 10 services.web.schedules \
    "needs [serverless]: a schedule's run is sent through the gateway's /fn/ route"
bad '[services.echo.schedules.s]
event = {}' 10 services.echo.schedules.s.cron 'missing: when it fires, as "*/5 * * * *" or "@daily"'
bad '[services.echo.schedules.s]
cron = 5' 11 services.echo.schedules.s.cron "must be a string"
bad '[services.echo.schedules.S]
cron = "@daily"' 10 services.echo.schedules.S "must be 1 to 63 of a-z, 0-9 and '-', starting and ending with a letter or digit"
bad '[services.echo.schedules.s]
cron = "@daily"
service = "echo"' 12 services.echo.schedules.s.service "unknown key"
bad '[services.echo.schedules.s]
cron = "@daily"
run_id = 1' 12 services.echo.schedules.s.run_id "unknown key"
bad '[services.echo.schedules.s]
cron = "@daily"
timezone = "Mars/Olympus_Mons"' 12 services.echo.schedules.s.timezone 'Mars/Olympus_Mons: no such zone in /usr/share/zoneinfo'
bad '[services.echo.schedules.s]
cron = "@daily"
timezone = "../../etc/passwd"' 12 services.echo.schedules.s.timezone '../../etc/passwd: ".." in a zone name'
bad '[services.echo.schedules.s]
cron = "@daily"
timezone = "Europe//Berlin"' 12 services.echo.schedules.s.timezone 'Europe//Berlin: an empty part in a zone name'
bad '[services.echo.schedules.s]
cron = "@daily"
timezone = "posix/Europe/Berlin"' 12 services.echo.schedules.s.timezone 'posix/Europe/Berlin: posix/ is a copy of the zones: name the zone as Europe/Berlin'
bad '[services.echo.schedules.s]
cron = "@daily"
concurrency = "replace"' 12 services.echo.schedules.s.concurrency 'must be "forbid" or "allow"'
bad '[services.echo.schedules.s]
cron = "@daily"
enabled = "no"' 12 services.echo.schedules.s.enabled "must be a boolean"
bad '[services.echo.schedules.s]
cron = "@daily"
catch_up = 1' 12 services.echo.schedules.s.catch_up "must be a boolean"
bad '[services.echo.schedules.s]
cron = "@daily"
event = "nope"' 12 services.echo.schedules.s.event "not JSON: invalid token near 'nope' (column 4)"
bad '[services.echo.schedules.s]
cron = "@daily"
timeout_seconds = 0' 12 services.echo.schedules.s.timeout_seconds "must be between 1 and 600"

# cron expressions: the reason is cron_parse's (7004 checks the parser)
for c in '* * * *' '* * * * * *' '60 * * * *' '* 24 * * *' '* * 0 * *' \
    '* * * 13 *' '* * * * 8' '*/0 * * * *' '5-1 * * * *' '@reboot' \
    'a * * * *' '1,,2 * * * *' ''; do
	app "[services.echo.schedules.s]
cron = \"$c\""
	run hk validate "$T/app.toml"
	like "$rc $err" "^65 $T/app.toml:11: services.echo.schedules.s.cron: .+" \
	    "cron \"$c\" is refused, with its reason"
done

bad '[services.echo.schedules.s]
cron = "0 0 30 2 *"' 11 services.echo.schedules.s.cron "never fires (no such day in any month it names)"
bad '[services.echo.schedules.s]
cron = "0 0 31 4,6 *"' 11 services.echo.schedules.s.cron "never fires (no such day in any month it names)"

# apply writes nothing of a refused file
bad '[jobs.j]
service = "echo"
run_id = 1
[services.echo.schedules.s]
cron = "61 * * * *"' 14 services.echo.schedules.s.cron "field 1 (minute): 61 is out of range 0-59"
run hk apply "$T/app.toml"
is "$rc" 65 "apply of a refused file: exit 65"
test ! -e "$T/state.db"
ok $? "... and no store was even made"

done_testing
