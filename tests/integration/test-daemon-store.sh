#!/bin/bash
# paddockd's records across failures and restarts: "created" means kept (a store that cannot
# write fails the request and ends the sandbox it would have lost), Idempotency-Key, a store
# damaged or missing at start (the live sandboxes come back from their own records), exec ids
# and foreground commands across kill -9, a teardown kill -9 interrupted, a stopped sandbox's
# socket, and the event log's rotation. run.sh checks that nothing is left behind.
. "$(dirname "$0")/lib.sh"

PADDOCKD=${PADDOCKD:?PADDOCKD must point at paddockd}
PY=/usr/bin/python3
SOCK=$T_TMP/sock
STATE=$T_TMP/st

create() { j "$(body_of "$(api POST /v1/sandboxes "$@")")" 'd["id"]'; }
list_ids() { j "$(body_of "$(api GET /v1/sandboxes)")" '" ".join(sorted(s["id"] for s in d["sandboxes"]))'; }
kill9() { kill -9 "$DPID"; wait "$DPID" 2>/dev/null; }
# corrupt_store: every page of the store but the first overwritten under a running paddockd,
# once a checkpoint has moved the WAL's pages into the file (what a disk or a stray write
# can do to it)
corrupt_store() {
	$PY - "$STATE/paddockd.db" <<'PY'
import os, sqlite3, sys
db = sys.argv[1]
c = sqlite3.connect(db, timeout=10)
c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
c.close()
with open(db, "rb") as f:
    hdr = f.read(100)
page = int.from_bytes(hdr[16:18], "big") or 65536
size = os.path.getsize(db)
with open(db, "r+b") as f:
    f.seek(page)
    f.write(b"\xa5" * (size - page))
PY
}
# the pids of this test's live inits (pid:start), one per line
init_keys() { daemon_inits >/dev/null; sort "$T_TMP/inits.known"; }

start_daemon || { not_ok "paddockd starts"; finish; }
ok "paddockd starts"

# ---- Idempotency-Key: a retry gets the same sandbox ----
r=$(api POST /v1/sandboxes -H 'Idempotency-Key: create-1' -d '{"metadata":{"n":"1"}}')
K1=$(j "$(body_of "$r")" 'd["id"]')
expect_eq "create with a key: 201" 201 "$(status_of "$r")"
r=$(curl -s -D "$T_TMP/hdr" --unix-socket "$SOCK" -X POST -w '\n%{http_code}' \
	-H 'Idempotency-Key: create-1' -d '{"metadata": {"n": "1"}}' http://x/v1/sandboxes)
expect_eq "the retry gets the same sandbox" "201 $K1" "$(status_of "$r") $(j "$(body_of "$r")" 'd["id"]')"
expect_match "...and says it is a replay" "Idempotent-Replayed: true" "$(cat "$T_TMP/hdr")"
r=$(api POST /v1/sandboxes -H 'Idempotency-Key: create-1' -d '{"metadata":{"n":"2"}}')
expect_eq "the key with another body: 409 naming it" "409 Idempotency-Key" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST /v1/sandboxes -H 'Idempotency-Key: has space' -d '{}')
expect_eq "a key with a space: 400" "400 Idempotency-Key" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
expect_eq "one sandbox for three requests" "$K1" "$(list_ids)"

# ---- exec ids and a foreground command across kill -9 ----
api POST "/v1/sandboxes/$K1/exec" -d '{"argv":["sleep","600"],"background":true,"tag":"bg"}' >/dev/null
curl -s --unix-socket "$SOCK" -X POST "http://x/v1/sandboxes/$K1/exec" \
	-d '{"argv":["sleep","600"],"tag":"fg"}' >/dev/null 2>&1 &
FG=$!
for _ in $(seq 100); do
	r=$(api GET "/v1/sandboxes/$K1/processes/fg")
	[ "$(j "$(body_of "$r")" 'd["state"]')" = running ] && break
	sleep 0.05
done
r=$(api POST "/v1/sandboxes/$K1/exec" -d '{"argv":["echo","last"]}')
LAST=$(j "$(body_of "$r")" 'int(d["exec"][3:])')
kill9
kill "$FG" 2>/dev/null
wait "$FG" 2>/dev/null
start_daemon || not_ok "paddockd restarts"
r=$(api POST "/v1/sandboxes/$K1/exec" -d '{"argv":["echo","next"]}')
NEXT=$(j "$(body_of "$r")" 'int(d["exec"][3:])')
[ -n "$NEXT" ] && [ "$NEXT" -gt "$LAST" ] && ok "after kill -9, exec ids go on above the stored ones ($LAST, then $NEXT)" ||
	not_ok "after kill -9, exec ids go on above the stored ones ($LAST, then '$NEXT')"
argv=$($PY -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute("select argv_json from execs where sandbox_id=? and exec_id=?", (sys.argv[2], int(sys.argv[3]))).fetchone()[0])' \
	"$STATE/paddockd.db" "$K1" "$LAST" 2>&1)
expect_eq "...and the earlier command's record is its own" '["echo","last"]' "$argv"
r=$(api POST "/v1/sandboxes/$K1/processes/fg/wait?timeout_s=20")
expect_eq "a foreground command whose client went with paddockd is killed, not kept" \
	"exited killed False" \
	"$(j "$(body_of "$r")" 'd["state"]+" "+d["result"]["reason"]+" "+str(d["background"])')"
r=$(api GET "/v1/sandboxes/$K1/processes/bg")
expect_eq "...a background one runs on" running "$(j "$(body_of "$r")" 'd["state"]')"
r=$(api POST /v1/sandboxes -H 'Idempotency-Key: create-1' -d '{"metadata":{"n":"1"}}')
expect_eq "after kill -9 the key still gives the same sandbox" "201 $K1" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["id"]')"

# ---- a store that cannot write: the create fails, nothing is left of it ----
K2=$(create -d '{"metadata":{"n":"2"}}')
corrupt_store
before=$(daemon_inits)
r=$(api POST /v1/sandboxes -H 'Idempotency-Key: create-3' -d '{"metadata":{"n":"3"}}')
expect_eq "damaged store: the create fails with 503, naming the store" "503 unavailable store" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["code"]+" "+d["error"]["field"]')"
expect_eq "...the sandbox it made is ended" "$before" "$(daemon_inits)"
expect_eq "...and not listed" "$(echo "$K1 $K2" | tr ' ' '\n' | sort | xargs)" "$(list_ids)"
r=$(api POST "/v1/sandboxes/$K2/ttl" -d '{"ttl_s":4000}')
expect_eq "damaged store: a TTL change fails with 503" 503 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$K2")
expect_eq "...and changes nothing" 1800 "$(j "$(body_of "$r")" 'd["ttl_s"]')"
r=$(api DELETE "/v1/sandboxes/$K2")
expect_eq "damaged store: a delete fails with 503" 503 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$K2")
expect_eq "...and the sandbox is still there" 200 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$K2/exec" -d '{"argv":["sleep","60"],"background":true}')
expect_eq "damaged store: a background command that cannot be recorded fails with 503" 503 \
	"$(status_of "$r")"

# ---- restart with the damaged store: it is kept, the sandboxes come back from their own ----
kill9
start_daemon || not_ok "paddockd starts with a damaged store"
expect_eq "a damaged store is kept for inspection" 1 "$(ls "$STATE" | grep -c '^paddockd\.db\.damaged-[0-9TZ]*$')"
expect_eq "every live sandbox is back" "$(echo "$K1 $K2" | tr ' ' '\n' | sort | xargs)" "$(list_ids)"
r=$(api GET "/v1/sandboxes/$K2")
expect_eq "...with its metadata" 2 "$(j "$(body_of "$r")" 'd["metadata"]["n"]')"
r=$(api GET "/v1/sandboxes/$K1/processes")
expect_eq "...and its running command (as a background one: its record is lost)" "running True" \
	"$(j "$(body_of "$r")" '" ".join(p["state"]+" "+str(p["background"]) for p in d["processes"] if p["state"] == "running")')"
r=$(api POST /v1/sandboxes -H 'Idempotency-Key: create-1' -d '{"metadata":{"n":"1"}}')
expect_eq "...and its Idempotency-Key" "201 $K1" "$(status_of "$r") $(j "$(body_of "$r")" 'd["id"]')"
expect_match "the event log says the store was rebuilt" '"event":"store.rebuilt".*"recovered":2' \
	"$(grep store.rebuilt "$STATE/events.jsonl")"
r=$(api POST "/v1/sandboxes/$K2/exec" -d '{"argv":["echo","works"]}')
expect_eq "a recovered sandbox runs commands" works "$(j "$(body_of "$r")" 'd["stdout"].strip()')"

# ---- the store moved aside by hand (missing at start): the same ----
stop_daemon
mkdir "$T_TMP/aside"
mv "$STATE"/paddockd.db* "$T_TMP/aside/"
start_daemon || not_ok "paddockd starts without its store"
expect_eq "a missing store: every live sandbox is back" "$(echo "$K1 $K2" | tr ' ' '\n' | sort | xargs)" "$(list_ids)"

# ---- a sandbox that stopped before a restart: deleting it removes its socket ----
keys0=$(init_keys)
K3=$(create -d '{}')
keys1=$(init_keys)
init3=$(comm -13 <(echo "$keys0") <(echo "$keys1") | head -n1 | cut -d: -f1)
[ -n "$init3" ] && kill -9 "$init3"
for _ in $(seq 100); do
	[ "$(j "$(body_of "$(api GET "/v1/sandboxes/$K3")")" 'd["state"]')" = stopped ] && break
	sleep 0.05
done
expect_eq "a sandbox whose init died is stopped" stopped "$(j "$(body_of "$(api GET "/v1/sandboxes/$K3")")" 'd["state"]')"
stop_daemon
start_daemon || not_ok "paddockd restarts"
r=$(api DELETE "/v1/sandboxes/$K3")
expect_eq "deleting a sandbox that stopped before the restart: 204" 204 "$(status_of "$r")"
[ -e "$STATE/s/$K3" ] && not_ok "...its reconnect socket is removed" || ok "...its reconnect socket is removed"

# ---- a delete answered just before kill -9: the restart finishes its teardown ----
K4=$(create -d '{"limits":{"memory":"2G"}}')
api POST "/v1/sandboxes/$K4/exec" -d '{"cmd":"exec python3 -c \"b = b\u0027x\u0027 * (700 << 20); open(\u0027/tmp/ready\u0027, \u0027w\u0027).close(); import time; time.sleep(600)\"","background":true}' >/dev/null
for _ in $(seq 200); do
	[ "$(status_of "$(api GET "/v1/sandboxes/$K4/files/stat?path=/tmp/ready")")" = 200 ] && break
	sleep 0.05
done
# a large sandbox takes the kernel a while to tear down: paddockd dies within it
$PY - "$SOCK" "$K4" "$DPID" <<'PY'
import os, signal, socket, sys
c = socket.socket(socket.AF_UNIX)
c.connect(sys.argv[1])
c.sendall(("DELETE /v1/sandboxes/%s HTTP/1.1\r\nHost: x\r\n\r\n" % sys.argv[2]).encode())
head = c.recv(4096)
os.kill(int(sys.argv[3]), signal.SIGKILL)
print(head.split(b"\r\n")[0].decode())
PY
wait "$DPID" 2>/dev/null
start_daemon || not_ok "paddockd restarts"
for _ in $(seq 100); do
	grep -q "\"event\":\"sandbox.destroyed\",\"sandbox\":\"$K4\"" "$STATE/events.jsonl" && break
	sleep 0.1
done
expect_match "a teardown kill -9 interrupted is finished and logged at the restart" \
	"sandbox.removed.*sandbox.exited.*sandbox.destroyed" \
	"$(grep "\"sandbox\":\"$K4\"" "$STATE/events.jsonl" | $PY -c 'import json,sys; print(" ".join(json.loads(l)["event"] for l in sys.stdin))')"
r=$(api GET "/v1/sandboxes/$K4")
expect_eq "...the deleted sandbox stays deleted" 404 "$(status_of "$r")"
[ -e "$STATE/s/$K4" ] && not_ok "...its reconnect socket is removed" || ok "...its reconnect socket is removed"
stop_daemon

# ---- the event log rotates by size, keeping a bounded number of files ----
start_daemon --event-log-max 8K --event-log-keep 2 || not_ok "paddockd starts with --event-log-max"
for _ in $(seq 14); do
	id=$(create -d '{}')
	api POST "/v1/sandboxes/$id/exec" -d '{"argv":["true"]}' >/dev/null
	api DELETE "/v1/sandboxes/$id?wait=1" >/dev/null
done
expect_eq "event log: the live file and 2 rotated ones, no more" \
	"events.jsonl events.jsonl.1 events.jsonl.2" "$(cd "$STATE" && ls events.jsonl* | xargs)"
big=$(find "$STATE" -name 'events.jsonl*' -size +12k | wc -l)
expect_eq "...each at most the bound and a line" 0 "$big"
expect_eq "...every line whole" 0 \
	"$(cat "$STATE"/events.jsonl* | $PY -c 'import json,sys
bad = 0
for l in sys.stdin:
    try: json.loads(l)
    except ValueError: bad += 1
print(bad)')"

# ---- as root: a state filesystem that is full ----
if [ "$MODE" = root ]; then
	stop_daemon
	mkdir -p "$T_TMP/small"
	mount -t tmpfs -o size=4m,mode=0700 tmpfs "$T_TMP/small"
	STATE=$T_TMP/small/st
	start_daemon || not_ok "paddockd starts on a small filesystem"
	F1=$(create -d '{}')
	dd if=/dev/zero of="$T_TMP/small/fill" bs=64k 2>/dev/null
	before=$(daemon_inits)
	fails=0
	for _ in 1 2 3; do
		r=$(api POST /v1/sandboxes -d '{}')
		[ "$(status_of "$r")" = 503 ] && fails=$((fails + 1))
	done
	expect_eq "full state filesystem: every create fails with 503" 3 "$fails"
	expect_eq "...and ends the sandbox it made" "$before" "$(daemon_inits)"
	rm -f "$T_TMP/small/fill"
	F2=$(create -d '{}')
	[ -n "$F2" ] && ok "with room again, creates work" || not_ok "with room again, creates work"
	kill9
	start_daemon || not_ok "paddockd restarts"
	expect_eq "after a restart: exactly the sandboxes that were acknowledged" \
		"$(echo "$F1 $F2" | tr ' ' '\n' | sort | xargs)" "$(list_ids)"
	for id in $F1 $F2; do api DELETE "/v1/sandboxes/$id?wait=1" >/dev/null; done
	stop_daemon
	umount "$T_TMP/small"
	STATE=$T_TMP/st
	start_daemon || not_ok "paddockd restarts"
else
	ok "# SKIP a full state filesystem: mounting a small one needs root (the damaged store covers rootless)"
fi

for id in $(list_ids); do api DELETE "/v1/sandboxes/$id?wait=1" >/dev/null; done
stop_daemon
expect_eq "no sandbox process is left" 0 "$(daemon_inits)"
expect_eq "no reconnect socket is left" "" "$(ls "$STATE/s")"
finish
