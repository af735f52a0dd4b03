#!/bin/bash
# Pause and resume through paddockd (docs/api.md "Pause and resume") and the CLI: a busy loop
# stops and goes on, a paused sandbox refuses what needs its processes with 409 naming the
# state, stays paused across kill -9 and restart of paddockd, its idle timeout waits, and
# on_timeout "pause" pauses rather than removes. Root: the cgroup freezer; rootless: SIGSTOP.
# run.sh checks that nothing is left behind (a paused sandbox deleted is thawed and killed).
. "$(dirname "$0")/lib.sh"

PADDOCKD=${PADDOCKD:?PADDOCKD must point at paddockd}
PY=/usr/bin/python3
SOCK=$T_TMP/sock
STATE=$T_TMP/st
export PADDOCK_SOCKET=$SOCK

# the counter the busy loop writes, read from outside (files work on a paused sandbox)
count() { body_of "$(api GET "/v1/sandboxes/$ID/files?path=/workspace/n")"; }
cpu() { j "$(body_of "$(api GET "/v1/sandboxes/$ID")")" 'd["usage"]["cpu_s"]'; }
state() { j "$(body_of "$(api GET "/v1/sandboxes/$1")")" 'd["state"]'; }

start_daemon || { not_ok "paddockd starts"; finish; }
ok "paddockd starts"

# ---- bad input changes nothing ----
r=$(api POST /v1/sandboxes -d '{"on_timeout":"sleep"}')
expect_eq "on_timeout: 400 naming it" "400 on_timeout" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api GET /v1/sandboxes)
expect_eq "nothing was created by a bad on_timeout" 0 "$(j "$(body_of "$r")" 'len(d["sandboxes"])')"
r=$(api POST /v1/sandboxes/sb_nonexistent1/pause)
expect_eq "pause an unknown sandbox: 404" 404 "$(status_of "$r")"
r=$(api POST /v1/sandboxes/sb_nonexistent1/resume)
expect_eq "resume an unknown sandbox: 404" 404 "$(status_of "$r")"

r=$(api POST /v1/sandboxes -d '{"ttl_s":600,"idle_timeout_s":2}')
ID=$(j "$(body_of "$r")" 'd["id"]')
expect_eq "create: on_timeout is kill by default" "201 kill" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["on_timeout"]')"
r=$(api POST "/v1/sandboxes/$ID/pause" -d '{"now":true}')
expect_eq "pause with a field: 400 naming it" "400 now" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api GET "/v1/sandboxes/$ID/pause")
expect_eq "GET .../pause: 405" 405 "$(status_of "$r")"
expect_eq "still running after the bad requests" running "$(state "$ID")"

# ---- a busy loop stops and goes on ----
api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"i=0; while :; do i=$((i+1)); echo $i >/workspace/n.tmp; mv /workspace/n.tmp /workspace/n; done","background":true,"tag":"spin"}' >/dev/null
sleep 0.5
c1=$(count)
sleep 0.3
c2=$(count)
expect_eq "the loop runs" 1 "$([ "${c2:-0}" -gt "${c1:-0}" ] && echo 1)"
r=$(api POST "/v1/sandboxes/$ID/pause")
expect_eq "pause: 200, paused" "200 paused" "$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
[ "$(status_of "$r")" = 200 ] || diag "$r"
r=$(api POST "/v1/sandboxes/$ID/pause")
expect_eq "pause again: 200, paused (idempotent)" "200 paused" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
c1=$(count)
u1=$(cpu)
sleep 1
c2=$(count)
u2=$(cpu)
expect_eq "paused: the loop does not advance" "$c1" "$c2"
if [ "$MODE" = root ]; then
	expect_eq "paused: its CPU time does not grow" "$u1" "$u2"
fi
r=$(api GET /v1/sandboxes)
expect_eq "list: paused" paused "$(j "$(body_of "$r")" '[s["state"] for s in d["sandboxes"] if s["id"]=="'"$ID"'"][0]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["true"]}')
expect_eq "exec while paused: 409 naming the state" "409 state" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
expect_match "exec while paused: the message says paused" "is paused" \
	"$(j "$(body_of "$r")" 'd["error"]["message"]')"
r=$(api GET "/v1/sandboxes/$ID/ports/8000/")
expect_eq "ports while paused: 409 at once" 409 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/code/execute" -d '{"code":"1+1","language":"python"}')
expect_eq "code interpreter while paused: 409 naming the state" "409 state" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["sleep","1"],"background":true}')
expect_eq "background exec while paused: 409" 409 "$(status_of "$r")"
r=$(api PUT "/v1/sandboxes/$ID/files?path=/workspace/note" --data-binary 'hello')
expect_eq "files while paused: written" 201 "$(status_of "$r")"
r=$(api GET /metrics)
expect_match "metrics: one paused sandbox" "paddock_sandboxes_paused 1" "$r"
r=$(api GET "/v1/sandboxes/$ID/events")
expect_match "events: sandbox.paused" '"sandbox.paused"' "$r"
sleep 2
expect_eq "idle timeout waits while paused" paused "$(state "$ID")"

# ---- kill -9 and restart: still paused ----
inits() { daemon_inits; }
inits >/dev/null
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
start_daemon || not_ok "paddockd restarts"
expect_eq "restart: still paused" paused "$(state "$ID")"
c1=$(count)
sleep 0.5
c2=$(count)
expect_eq "restart: the loop still does not advance" "$c1" "$c2"
r=$(api GET /metrics)
expect_match "restart: metrics count it paused" "paddock_sandboxes_paused 1" "$r"

# ---- resume (through the CLI) ----
out=$("$PADDOCK" resume "$ID")
expect_eq "paddock resume: the id and the state" "$ID running" "$out"
sleep 0.3
c1=$(count)
sleep 0.3
c2=$(count)
expect_eq "resumed: the loop goes on" 1 "$([ "${c2:-0}" -gt "${c1:-0}" ] && echo 1)"
if [ "$MODE" = root ]; then
	# (an adoption restarts the counter: compared within this paddockd's life)
	u3=$(cpu)
	sleep 0.3
	u4=$(cpu)
	expect_eq "resumed: its CPU time grows" 1 "$($PY -c "print(1 if $u4 > $u3 else 0)")"
fi
r=$(api POST "/v1/sandboxes/$ID/resume")
expect_eq "resume again: 200, running (idempotent)" "200 running" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["cat","/workspace/note"]}')
expect_eq "resumed: exec works, the file written while paused is there" hello \
	"$(j "$(body_of "$r")" 'd["stdout"]')"
r=$(api GET "/v1/sandboxes/$ID/events")
expect_match "events: sandbox.resumed" '"sandbox.resumed"' "$r"

# ---- the CLI ----
out=$("$PADDOCK" pause "$ID")
expect_eq "paddock pause: the id and the state" "$ID paused" "$out"
expect_match "paddock ls: the state" "^$ID +paused " "$("$PADDOCK" ls | grep "^$ID")"
out=$("$PADDOCK" pause sb_nonexistent1 2>&1)
expect_eq "paddock pause of an unknown id: exit 1" 1 "$?"
expect_match "paddock pause of an unknown id: says so" "no such sandbox" "$out"
out=$("$PADDOCK" pause 2>&1)
expect_match "paddock pause without an id: says what it expects" "expected one sandbox id" "$out"
expect_match "paddock pause --help" "usage: paddock pause" "$("$PADDOCK" pause --help)"
expect_match "paddock resume --help" "usage: paddock resume" "$("$PADDOCK" resume --help)"
r=$(api DELETE "/v1/sandboxes/$ID?wait=1")
expect_eq "delete a paused sandbox: 204" 204 "$(status_of "$r")"

# ---- on_timeout: "pause" ----
r=$(api POST /v1/sandboxes -d '{"ttl_s":1,"on_timeout":"pause"}')
ID=$(j "$(body_of "$r")" 'd["id"]')
expect_eq "create with on_timeout pause" "201 pause" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["on_timeout"]')"
sleep 2.5
r=$(api GET "/v1/sandboxes/$ID")
expect_eq "at its TTL it is paused, not removed" "200 paused" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
expect_eq "kept paused for a day" 1 "$(j "$(body_of "$r")" '1 if __import__("datetime").datetime.fromisoformat(d["expires_at"].replace("Z","+00:00")).timestamp() - __import__("time").time() > 86000 else 0')"
r=$(api POST "/v1/sandboxes/$ID/resume")
expect_eq "resumed after its timeout paused it" "200 running" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["echo","back"]}')
expect_eq "and it runs commands again" back "$(j "$(body_of "$r")" 'd["stdout"].strip()')"
api DELETE "/v1/sandboxes/$ID?wait=1" >/dev/null

# ---- the store lost: the record init keeps says paused ----
r=$(api POST /v1/sandboxes -d '{"ttl_s":600}')
ID=$(j "$(body_of "$r")" 'd["id"]')
api POST "/v1/sandboxes/$ID/pause" >/dev/null
inits >/dev/null
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
mkdir "$T_TMP/aside"
mv "$STATE"/paddockd.db* "$T_TMP/aside/"
start_daemon || not_ok "paddockd restarts without its store"
expect_eq "store lost: recovered from its own record, still paused" paused "$(state "$ID")"
r=$(api POST "/v1/sandboxes/$ID/resume")
expect_eq "store lost: and it resumes" "200 running" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
api DELETE "/v1/sandboxes/$ID?wait=1" >/dev/null

# ---- tenants: only their own sandboxes ----
stop_daemon
expect_eq "paddockd exits 0" 0 "$?"
PORT=$((20000 + RANDOM % 20000))
printf 'alice aaaaaaaaaaaaaaaaaaaaaaaa\nbob bbbbbbbbbbbbbbbbbbbbbbbb\n' >"$T_TMP/tokens"
start_daemon --listen "127.0.0.1:$PORT" --tokens "$T_TMP/tokens" --destroy-on-exit ||
	not_ok "paddockd starts with tenants"
tcp() { local m=$1 p=$2 who=$3; shift 3; curl -s -X "$m" -w '\n%{http_code}' -H "Authorization: Bearer $who" "http://127.0.0.1:$PORT$p" "$@"; }
ALICE=aaaaaaaaaaaaaaaaaaaaaaaa
BOB=bbbbbbbbbbbbbbbbbbbbbbbb
r=$(tcp POST /v1/sandboxes $ALICE -d '{}')
IDA=$(j "$(body_of "$r")" 'd["id"]')
r=$(tcp POST "/v1/sandboxes/$IDA/pause" $BOB)
expect_eq "tenants: bob cannot pause alice's sandbox (404)" 404 "$(status_of "$r")"
r=$(tcp POST "/v1/sandboxes/$IDA/pause" $ALICE)
expect_eq "tenants: alice pauses hers" "200 paused" "$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
r=$(tcp POST "/v1/sandboxes/$IDA/resume" $BOB)
expect_eq "tenants: bob cannot resume it (404)" 404 "$(status_of "$r")"
r=$(tcp GET "/v1/sandboxes/$IDA" $ALICE)
expect_eq "tenants: still paused" paused "$(j "$(body_of "$r")" 'd["state"]')"
stop_daemon
expect_eq "paddockd --destroy-on-exit ends a paused sandbox and exits 0" 0 "$?"
# a frozen init takes its SIGKILL only once thawed: one left would still listen here
sleep 0.2
expect_eq "no init of this test still listens (none left frozen)" "" \
	"$(ss -xl 2>/dev/null | grep -F "$T_TMP/")"
finish
