#!/bin/bash
# run.sh: netns
# run.sh: stage mcp
# network.unlisted "ask" (docs/network.md, "Asking a person"), end to end in the test's own
# network (netns-wrap.sh): a connection to a host no rule names is held while a person
# decides. paddockd: the held connection goes on when allowed, is a 403 when denied or when
# nobody answers, allow_always adds the rule (GET .../network shows it), N decisions at once
# and no more, decisions are followed, recorded with who answered, counted, and changed
# by a new policy; the sandbox cannot answer for itself; nothing is left when it ends.
# paddock run --net ask: the terminal answers (a pty made here), never the sandbox's own;
# without a terminal, denied. paddock mcp: elicitation with the official MCP SDK client
# (mcp/ask.mjs), embedded and through paddockd.
. "$(dirname "$0")/lib.sh"

: "${EGRESS_DIR:?run.sh runs this test inside netns-wrap.sh}"
H=$EGRESS_DIR/hosts
PY=/usr/bin/python3
SOCK=$T_TMP/sock
STATE=$T_TMP/st
DAEMON_ARGS=(--resolve-hosts "$H")

# new_sandbox NETWORK_JSON: the id of a sandbox with that network section
new_sandbox() { j "$(body_of "$(api POST /v1/sandboxes -d "{\"network\":$1}")")" 'd["id"]'; }
# pending ID: the pending decisions' JSON
pending() { body_of "$(api GET "/v1/sandboxes/$1/network/pending")"; }
# wait_pending ID N: until N decisions are pending (5 s at most)
wait_pending() {
	for _ in $(seq 100); do
		[ "$(j "$(pending "$1")" 'len(d["pending"])')" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
# bg ID TAG COMMAND: a background command in the sandbox
bg() { api POST "/v1/sandboxes/$1/exec" -d "$($PY -c 'import json,sys; print(json.dumps({"cmd": sys.argv[2], "background": True, "tag": sys.argv[1]}))' "$2" "$3")" >/dev/null; }
# output ID TAG: its stdout once it ended (10 s at most)
output() {
	api POST "/v1/sandboxes/$1/processes/$2/wait?timeout_s=10" >/dev/null
	body_of "$(api GET "/v1/sandboxes/$1/processes/$2/output")" | $PY -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin if l.strip()]
print("".join(e.get("data", "") for e in lines if e.get("type") == "stdout"), end="")'
}
running() { j "$(body_of "$(api GET "/v1/sandboxes/$1/processes/$2")")" 'd["state"] == "running"'; }
# run_in ID COMMAND: a foreground command in the sandbox, its answer
run_in() { api POST "/v1/sandboxes/$1/exec" -d "$($PY -c 'import json,sys; print(json.dumps({"cmd": sys.argv[1]}))' "$2")"; }
answer() { api POST "/v1/sandboxes/$1/network/decisions" -d "{\"id\": $2, \"answer\": \"$3\", \"who\": \"tester\"}"; }
CURL='curl -sS -m 20 -o /dev/null -w %{http_code}'
ASK='{"mode":"allowlist","unlisted":"ask","allow":["allowed.test"],"ask_timeout_s":20,"ask_max_pending":2}'

start_daemon || { not_ok "paddockd starts"; finish; }

# ---- a held connection goes on when allowed once ----
ID=$(new_sandbox "$ASK")
expect_match "a sandbox that asks" '^sb_' "$ID"
bg "$ID" once "$CURL http://api.test/; echo; $CURL http://api.test/"
wait_pending "$ID" 1
P=$(pending "$ID")
expect_match "the decision is listed: host, port, the rule allow_always would add, its time" \
	'"host": *"api.test", *"port": *80, *"rule": *"api.test:80", *"via": *"proxy", *"connections": *1, *"asked_at": *"[0-9T:.-]+Z", *"expires_at"' "$P"
sleep 0.5
expect_eq "the connection is held while nobody answers" True "$(running "$ID" once)"
D=$(j "$P" 'd["pending"][0]["id"]')
r=$(answer "$ID" "$D" allow_once)
expect_eq "allow once: 200" 200 "$(status_of "$r")"
expect_match "...answering the decision, recorded with the tenant and who" \
	'"answer": *"allow_once", *"by": *"api:local", *"who": *"tester"' "$r"
wait_pending "$ID" 1
D2=$(j "$(pending "$ID")" 'd["pending"][0]["id"]')
expect_eq "...the next connection asks again, as a new decision" 1 "$([ -n "$D2" ] && [ "$D2" != "$D" ] && echo 1)"
answer "$ID" "$D2" allow_once >/dev/null
expect_eq "both connections went through" "$(printf '200\n200')" "$(output "$ID" once)"
r=$(answer "$ID" "$D" deny)
expect_eq "a decision answered already: 404 naming the id" "404 id" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"

# ---- deny: a 403 that says who said no ----
bg "$ID" deny "curl -sS -m 20 http://api.test/"
wait_pending "$ID" 1
answer "$ID" "$(j "$(pending "$ID")" 'd["pending"][0]["id"]')" deny >/dev/null
O=$(output "$ID" deny)
expect_match "deny: 403 saying it was answered deny, by whom" \
	"egress to api.test:80 is blocked .*answered deny \(by api:local: tester\)" "$O"

# ---- allow_always: the rule joins the policy; the next connection is not asked ----
bg "$ID" always "$CURL http://api.test/"
wait_pending "$ID" 1
answer "$ID" "$(j "$(pending "$ID")" 'd["pending"][0]["id"]')" allow_always >/dev/null
expect_eq "allow always: the held connection went through" 200 "$(output "$ID" always)"
r=$(api GET "/v1/sandboxes/$ID/network")
expect_eq "...GET .../network shows the rule" True "$(j "$(body_of "$r")" '"api.test:80" in d["network"]["allow"]')"
expect_match "...and what was asked" '"asks": *\{"pending": *0, *"asked": *4, *"allowed_once": *2, *"allowed_always": *1, *"denied": *1' "$(body_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/exec" -d "{\"cmd\": \"$CURL http://api.test/\"}")
expect_match "...the next connection goes through without asking" '"stdout": *"200"' "$r"
expect_eq "...nothing pending" 0 "$(j "$(pending "$ID")" 'len(d["pending"])')"
r=$(api GET "/v1/sandboxes/$ID/events")
expect_match "events: egress.asked and egress.answered, with who answered" \
	'"event": *"egress.asked".*"host": *"api.test".*"event": *"egress.answered".*"answer": *"allow_always", *"by": *"api:local", *"who": *"tester"' "$(tr -d '\n' <<<"$r")"
r=$(curl -s --unix-socket "$SOCK" http://x/metrics)
expect_match "metrics: answers counted per sandbox" \
	"paddock_egress_asks_total\\{sandbox=\"$ID\",answer=\"allow_once\"\\} 2" "$r"
expect_match "metrics: what is pending" "paddock_egress_asks_pending\\{sandbox=\"$ID\"\\} 0" "$r"
api DELETE "/v1/sandboxes/$ID" >/dev/null

# ---- nobody answers: a 403 that says so ----
ID=$(new_sandbox '{"mode":"allowlist","unlisted":"ask","ask_timeout_s":2}')
t0=$(date +%s%N)
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd": "curl -sS -m 20 http://api.test/"}')
t1=$(date +%s%N)
expect_match "timeout: 403 saying nobody answered" 'nobody answered within 2 s' "$r"
expect_eq "...after the ask timeout (2 s)" 1 "$([ $(((t1 - t0) / 1000000)) -ge 1900 ] && echo 1)"
expect_match "...the event says no answer came" '"by": *"timeout", *"who": *null, *"timed_out": *true' \
	"$(body_of "$(api GET "/v1/sandboxes/$ID/events")")"
api DELETE "/v1/sandboxes/$ID" >/dev/null

# ---- N pending at once, and no more; connections to one host wait for one decision ----
ID=$(new_sandbox "$ASK")
bg "$ID" a1 "$CURL http://api.test/"
bg "$ID" a2 "$CURL http://api.test/"
bg "$ID" g "$CURL http://git.test/"
wait_pending "$ID" 2
sleep 0.3
P=$(pending "$ID")
expect_eq "two decisions pending (ask_max_pending 2)" 2 "$(j "$P" 'len(d["pending"])')"
expect_eq "...the two connections to api.test wait for the same one" 2 \
	"$(j "$P" '[x["connections"] for x in d["pending"] if x["host"] == "api.test"][0]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd": "curl -sS -m 20 http://evil.test/"}')
expect_match "a third destination is refused at once" \
	"evil.test:80 is blocked .*2 destinations wait for a person's answer already \\(network.ask_max_pending\\)" "$r"
follow=$T_TMP/follow
curl -sN --unix-socket "$SOCK" "http://x/v1/sandboxes/$ID/network/pending?follow=1" >"$follow" &
FPID=$!
sleep 0.3
A=$(j "$P" '[x["id"] for x in d["pending"] if x["host"] == "api.test"][0]')
G=$(j "$P" '[x["id"] for x in d["pending"] if x["host"] == "git.test"][0]')
answer "$ID" "$A" allow_once >/dev/null
answer "$ID" "$G" deny >/dev/null
expect_eq "one answer lets both connections to api.test through" "200 200" "$(output "$ID" a1) $(output "$ID" a2)"
expect_eq "...the denied one: 403" 403 "$(output "$ID" g)"
sleep 0.2
expect_match "follow: the pending decisions first, then each answered" \
	"\"id\": *$A.*\"answer\": *null.*\"id\": *$A.*\"answer\": *\"allow_once\".*\"id\": *$G.*\"answer\": *\"deny\"" \
	"$(tr -d '\n' <"$follow" | sed 's/}{/} {/g')"

# ---- a new policy decides what it names; a PUT without "ask" refuses what waits ----
bg "$ID" p1 "$CURL http://api.test/"
wait_pending "$ID" 1
r=$(api PUT "/v1/sandboxes/$ID/network" -d '{"mode":"allowlist","unlisted":"ask","allow":["api.test:80"]}')
expect_eq "PUT naming the host: 200" 200 "$(status_of "$r")"
expect_eq "...the held connection goes through by the rule" 200 "$(output "$ID" p1)"
bg "$ID" p2 "curl -sS -m 20 http://git.test/"
wait_pending "$ID" 1
api PUT "/v1/sandboxes/$ID/network" -d '{"mode":"allowlist","allow":["api.test:80"]}' >/dev/null
expect_match "PUT without unlisted (deny): what waited is refused" 'git.test:80 is blocked .*no allow rule matches' "$(output "$ID" p2)"
expect_eq "...nothing pending" 0 "$(j "$(pending "$ID")" 'len(d["pending"])')"
kill "$FPID" 2>/dev/null
wait "$FPID" 2>/dev/null
api DELETE "/v1/sandboxes/$ID" >/dev/null

# ---- the sandbox cannot answer for itself ----
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TOKEN=tttttttttttttttttttttttttttt
printf 'local2 %s\n' "$TOKEN" >"$T_TMP/tokens"
stop_daemon
start_daemon --listen "127.0.0.1:$PORT" --tokens "$T_TMP/tokens" || not_ok "paddockd starts with TCP"
# what a first sandbox makes for good (the init image's memfd) is not what one leaves
# (?wait=1: the teardown's own fds are closed when the answer comes)
api DELETE "/v1/sandboxes/$(new_sandbox '{"mode":"allowlist"}')?wait=1" >/dev/null
# a client's connection is closed by paddockd when it reads the client's end, which can come
# after curl has exited: count once two reads 100 ms apart agree, and afterwards allow the
# teardown's last closes up to 5 s to land (a leak stays; a late close does not fail)
daemon_fds() { ls "/proc/$DPID/fd" | wc -l; }
settled_fds() {
	local n prev=-1 i
	for i in $(seq 50); do
		n=$(daemon_fds)
		[ "$n" = "$prev" ] && break
		prev=$n
		sleep 0.1
	done
	echo "$n"
}
fds_down_to() {
	local i
	for i in $(seq 50); do
		[ "$(daemon_fds)" -le "$1" ] && break
		sleep 0.1
	done
	daemon_fds
}
fds_before=$(settled_fds)
ID=$(new_sandbox '{"mode":"allowlist","unlisted":"ask","ask_timeout_s":20}')
bg "$ID" held "$CURL http://api.test/"
wait_pending "$ID" 1
D=$(j "$(pending "$ID")" 'd["pending"][0]["id"]')
BODY="{\"id\": $D, \"answer\": \"allow_always\"}"
PX="curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128 -X POST -d '$BODY'"
DEC="/v1/sandboxes/$ID/network/decisions"
r=$(run_in "$ID" "ls $SOCK 2>&1; curl -sS -m 5 --unix-socket $SOCK http://x/healthz 2>&1; echo;
curl -sS -m 5 -X POST -H 'Authorization: Bearer $TOKEN' -d '$BODY' http://127.0.0.1:$PORT$DEC 2>&1; echo;
$PX -H 'Authorization: Bearer $TOKEN' http://127.0.0.1:$PORT$DEC; echo;
$PX http://localhost:$PORT$DEC; echo;
getent hosts api.test || echo no-dns")
O=$(j "$(body_of "$r")" 'd["stdout"]')
expect_match "inside: paddockd's unix socket is not there" 'No such file or directory' "$O"
expect_match "inside: its TCP port on the sandbox's own loopback: nothing" "Failed to connect to 127.0.0.1 port $PORT" "$O"
expect_match "inside: through the proxy to the host's loopback: refused, not asked" \
	"egress to 127.0.0.1:$PORT is blocked .*the address is not public" "$O"
expect_match "inside: by the name localhost: refused, not asked" "egress to localhost:$PORT is blocked" "$O"
expect_match "inside: a host no rule names does not even resolve" 'no-dns' "$O"
P=$(pending "$ID")
expect_eq "...the one decision still pends, unanswered" "1 $D" "$(j "$P" 'len(d["pending"]), d["pending"][0]["id"]' | tr -d '(),')"
# a name that leads to loopback is asked about, and even a yes does not open it
bg "$ID" lb "curl -sS -m 20 -H 'Authorization: Bearer $TOKEN' http://loopback.test:$PORT/healthz"
wait_pending "$ID" 2
L=$(j "$(pending "$ID")" '[x["id"] for x in d["pending"] if x["host"] == "loopback.test"][0]')
answer "$ID" "$L" allow_always >/dev/null
expect_match "a yes for a name of the host's loopback: still refused (the SSRF wall)" \
	'loopback.test is allowed, but it resolves to 127.0.0.1, which is not public' "$(output "$ID" lb)"
# ---- a sandbox that ends leaves nothing: held connections, timers, fds ----
expect_eq "...and the first is still held" True "$(running "$ID" held)"
api DELETE "/v1/sandboxes/$ID?wait=1" >/dev/null
expect_eq "paddockd holds no more fds than before the sandbox" "$fds_before" "$(fds_down_to "$fds_before")"
expect_eq "...and no sandbox" 0 "$(j "$(body_of "$(api GET /v1/sandboxes)")" 'len(d["sandboxes"])')"

# ---- bad input names its field and changes nothing ----
ID=$(new_sandbox "$ASK")
r=$(api POST "/v1/sandboxes/$ID/network/decisions" -d '{"id": "x", "answer": "deny"}')
expect_eq "decisions: id not a number: 400 naming id" "400 id" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST "/v1/sandboxes/$ID/network/decisions" -d '{"id": 5, "answer": "perhaps"}')
expect_eq "decisions: an unknown answer: 400 naming answer" "400 answer" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST "/v1/sandboxes/$ID/network/decisions" -d '{"id": 5, "answer": "deny", "who": "a\u001bb"}')
expect_eq "decisions: who with a control character: 400 naming who" "400 who" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST "/v1/sandboxes/$ID/network/decisions" -d '{"id": 5, "answer": "deny", "extra": 1}')
expect_eq "decisions: an unknown field: 400" 400 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/network/decisions" -d '{"id": 5, "answer": "deny"}')
expect_eq "decisions: no such decision: 404 naming id" "404 id" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api GET "/v1/sandboxes/$ID/network/pending?follow=2")
expect_eq "pending: follow not 0 or 1: 400 naming it" "400 follow" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api DELETE "/v1/sandboxes/$ID/network/decisions")
expect_eq "decisions: DELETE: 405" 405 "$(status_of "$r")"
r=$(api POST /v1/sandboxes -d '{"network":{"mode":"open","unlisted":"ask"}}')
expect_eq "create: ask with mode open: 400 naming network.unlisted" "400 network.unlisted" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST /v1/sandboxes -d '{"network":{"mode":"allowlist","unlisted":"ask","ask_max_pending":0}}')
expect_eq "create: ask_max_pending 0: 400 naming it" "400 network.ask_max_pending" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
api DELETE "/v1/sandboxes/$ID" >/dev/null

# ---- paddock run --net ask: the terminal answers ----
cat >"$T_TMP/term.py" <<'PYEOF'
# term.py ANSWER CMD...: runs CMD on a new pty (its controlling terminal); types ANSWER
# ("-": nothing) once the question is on it; prints what the terminal showed, then the status.
import os, pty, select, sys, time
answer, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out, sent, end = b"", False, time.time() + 40
while time.time() < end:
    if select.select([fd], [], [], 0.1)[0]:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        out += d
    if not sent and b"allow it?" in out and answer != "-":
        time.sleep(0.3)
        os.write(fd, answer.encode() + b"\n")
        sent = True
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
print("status=%d" % os.waitstatus_to_exitcode(st))
PYEOF
RUN=("$PADDOCK" run --net ask --resolve-hosts "$H" --ask-timeout 10)
O=$($PY "$T_TMP/term.py" a "${RUN[@]}" -- sh -c "$CURL http://api.test/; echo; $CURL http://api.test/; echo")
expect_match "terminal: the question names the destination and the time" \
	'the sandbox wants to reach api.test:80, which no rule allows.*allow it\? o = once, a = always \(this sandbox\), d = deny \[denied in (9|10) s\]' "$(tr -d '\n' <<<"$O")"
expect_match "terminal: always: both connections through, asked once" \
	'allowed for this sandbox: api.test:80.200.200.status=0' "$(tr '\n' . <<<"$O")"
expect_eq "...asked once" 1 "$(grep -c 'allow it?' <<<"$O")"
O=$($PY "$T_TMP/term.py" d "${RUN[@]}" -- sh -c "curl -sS -m 20 http://api.test/")
expect_match "terminal: deny: 403, answered on the terminal" 'answered deny \(by terminal: uid [0-9]+ on /dev/pts/[0-9]+\)' "$O"
# the sandbox types an answer into its own terminal, before and while the question is on ours
cat >"$T_TMP/self.sh" <<'SHEOF'
answer() {
	printf 'a\n' >/dev/tty; printf 'o\n' >&2
	python3 -c 'import fcntl, termios; [fcntl.ioctl(0, termios.TIOCSTI, bytes([c])) for c in b"a\n"]' 2>/dev/null
}
answer
(sleep 0.7; answer) &
curl -sS -m 20 http://api.test/
SHEOF
O=$($PY "$T_TMP/term.py" - "$PADDOCK" run --net ask --resolve-hosts "$H" --ask-timeout 2 \
	--ro-bind "$T_TMP/self.sh:/self.sh" -- sh /self.sh)
expect_match "terminal: the sandbox's own tty cannot answer: nobody answered, 403" \
	'no answer in time: api.test:80 denied.*nobody answered within 2 s' "$(tr -d '\n' <<<"$O")"
O=$(setsid "$PADDOCK" run --net ask --resolve-hosts "$H" -- sh -c 'curl -sS -m 20 http://api.test/' </dev/null 2>&1)
expect_match "no terminal: denied at once, saying why" 'answered deny \(by terminal: no terminal to ask on\)' "$O"
O=$($PY "$T_TMP/term.py" - "${RUN[@]}" -- sh -c "$CURL --noproxy '' -x http://127.0.0.1:3128 http://169.254.169.254/")
expect_match "terminal: the metadata address is refused without a question" '^403status=0$' "$(tr -d '\n' <<<"$O")"

# ---- paddock mcp: elicitation with the official MCP SDK client ----
if ! command -v node >/dev/null; then
	unavailable "node is not installed"
fi
need_npm_package "$(dirname "$0")/mcp" @modelcontextprotocol/sdk
export PADDOCK SOCK EGRESS_DIR T_TMP
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "mcp: ${line#ok - }" ;;
	"not ok - "*) not_ok "mcp: ${line#not ok - }" ;;
	"# "*) echo "$line" ;;
	esac
done < <(cd "$(dirname "$0")/mcp" && timeout 240 node ask.mjs 2>&1)

stop_daemon
finish
