#!/bin/bash
# The web console (docs/console.md), served by paddockd at /ui on its TCP listener: its files
# (types, a strict Content-Security-Policy and the other headers, no token needed, nothing
# outside the compiled-in table: 404 for unknown names and every traversal), the routes it
# uses (GET /ui/session, GET /v1/events with its tenant filter), a foreign Origin refused,
# an events follower that reads too slowly closed instead of buffered; then the page itself
# in headless Chromium (console/drive.py): sign-in, live overview, a sandbox's processes,
# egress denials, chart, terminal, files, actions, events page, tenants kept apart.
# Nothing leaves 127.0.0.0/8: the denied name is refused by the sandbox's proxy itself.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
SOCK=$T_TMP/sock
STATE=$T_TMP/st
PORT=$((20000 + RANDOM % 20000))
A=aaaaaaaaaaaaaaaaaaaaaaaa
B=bbbbbbbbbbbbbbbbbbbbbbbb
printf 'alice %s\nbob %s\n' "$A" "$B" >"$T_TMP/tokens"
URL=http://127.0.0.1:$PORT

# hdr PATH NAME: the value of a response header of GET PATH (no token)
hdr() { curl -s -D - -o /dev/null "$URL$1" | tr -d '\r' | awk -v k="$2" 'tolower($0) ~ "^" tolower(k) ":" { sub(/^[^:]*: */, ""); print }'; }
code() { curl -s --path-as-is -o /dev/null -w '%{http_code}' "$@"; }

start_daemon --listen "127.0.0.1:$PORT" --tokens "$T_TMP/tokens" --stream-backlog-max 16K || finish

# ---- the files ----------------------------------------------------------------------------
expect_eq "GET /ui without a token: 200" 200 "$(code "$URL/ui")"
expect_eq "GET /ui/ too" 200 "$(code "$URL/ui/")"
expect_eq "HEAD /ui/console.js" 200 "$(code -I "$URL/ui/console.js")"
expect_eq "HEAD says GET's length" "$(curl -s "$URL/ui/console.js" | wc -c)" \
	"$(curl -sI "$URL/ui/console.js" | tr -d '\r' | awk 'tolower($1) == "content-length:" { print $2 }')"
expect_eq "index.html is HTML" "text/html; charset=utf-8" "$(hdr /ui Content-Type)"
expect_eq "console.js is JavaScript" "text/javascript; charset=utf-8" "$(hdr /ui/console.js Content-Type)"
expect_eq "console.css is CSS" "text/css; charset=utf-8" "$(hdr /ui/console.css Content-Type)"
csp=$(hdr /ui Content-Security-Policy)
expect_match "CSP: default-src 'self'" "^default-src 'self';" "$csp"
expect_match "CSP: scripts and styles from this origin only (no 'unsafe-inline')" \
	"script-src 'self'; style-src 'self';" "$csp"
expect_no_match "CSP: nothing inline, no eval" "unsafe" "$csp"
expect_match "CSP: frame-ancestors 'none'" "frame-ancestors 'none'" "$csp"
expect_eq "CSP on the scripts too" "$csp" "$(hdr /ui/api.js Content-Security-Policy)"
expect_eq "X-Content-Type-Options: nosniff" nosniff "$(hdr /ui X-Content-Type-Options)"
expect_eq "Referrer-Policy: no-referrer" no-referrer "$(hdr /ui Referrer-Policy)"
expect_eq "X-Frame-Options: DENY" DENY "$(hdr /ui X-Frame-Options)"
page=$(curl -s "$URL/ui")
expect_no_match "no inline script in the page" '<script>|<script [^>]*>[^<]' "$page"
expect_no_match "no inline style in the page" '<style|style=' "$page"
expect_no_match "no event handler attributes" ' on[a-z]+=' "$page"
expect_eq "an unknown file: 404" 404 "$(code "$URL/ui/nope.js")"
expect_eq "an unknown file with a token: 404" 404 "$(code -H "Authorization: Bearer $A" "$URL/ui/nope.js")"
expect_match "as the API's JSON error" '"code":"not_found"' "$(curl -s "$URL/ui/nope.js")"
for p in /ui/../v1/sandboxes /ui/%2e%2e/v1/sandboxes /ui/%2E%2E/healthz '/ui/..%2fv1%2fsandboxes' \
	/ui/./index.html /ui/%2e/console.js /ui/console.js/.. /ui/console.js%00 /ui//etc/passwd \
	'/ui/..\\v1'; do
	c=$(code "$URL$p")
	[[ "$c" == 404 || "$c" == 400 ]] && ok "no traversal: $p answers $c" || not_ok "no traversal: $p answers $c"
done
expect_eq "the API still needs the token: /v1/sandboxes" 401 "$(code "$URL/v1/sandboxes")"
expect_eq "so does /healthz" 401 "$(code "$URL/healthz")"
expect_eq "/uix is no console path" 401 "$(code "$URL/uix")"
expect_eq "POST /ui without a token is refused at its head" 401 "$(code -X POST -d x "$URL/ui")"
expect_eq "POST /ui with a token: 405" 405 "$(code -H "Authorization: Bearer $A" -X POST -d '{}' "$URL/ui")"
expect_eq "GET /ui with a body and no token: refused" 401 \
	"$(code -X GET -H 'Content-Type: text/plain' --data-binary x "$URL/ui")"
expect_eq "/ui/session without a token" '{"tenant":null}' "$(curl -s "$URL/ui/session")"
expect_eq "/ui/session with a wrong token" '{"tenant":null}' \
	"$(curl -s -H 'Authorization: Bearer wrong-wrong-wrong-wrong' "$URL/ui/session")"
expect_eq "/ui/session with alice's" '{"tenant":"alice"}' \
	"$(curl -s -H "Authorization: Bearer $A" "$URL/ui/session")"
expect_eq "/ui/session on the unix socket: the operator" '{"tenant":"local"}' \
	"$(curl -s --unix-socket "$SOCK" http://localhost/ui/session)"

# ---- Origin ----------------------------------------------------------------------------------
expect_eq "a foreign Origin is refused even with the token" 403 \
	"$(code -H "Authorization: Bearer $A" -H 'Origin: http://evil.test' "$URL/v1/sandboxes")"
expect_eq "Origin: null is refused" 403 \
	"$(code -H "Authorization: Bearer $A" -H 'Origin: null' "$URL/v1/sandboxes")"
expect_eq "the server's own Origin is taken" 200 \
	"$(code -H "Authorization: Bearer $A" -H "Origin: $URL" "$URL/v1/sandboxes")"
expect_eq "unix socket: a rebound name is refused" 403 \
	"$(code --unix-socket "$SOCK" -H 'Host: evil.test' -H 'Origin: http://evil.test' http://x/v1/sandboxes)"
expect_eq "unix socket: a loopback origin is taken" 200 \
	"$(code --unix-socket "$SOCK" -H 'Host: localhost:8080' -H 'Origin: http://localhost:8080' http://x/v1/sandboxes)"
expect_eq "no Origin (curl, SDKs): as before" 200 "$(code --unix-socket "$SOCK" http://x/v1/sandboxes)"

# ---- GET /v1/events: live, per tenant ---------------------------------------------------------
expect_eq "GET /v1/events without follow=1: 400" 400 "$(code -H "Authorization: Bearer $A" "$URL/v1/events")"
expect_eq "a bad sandbox filter: 400" 400 \
	"$(code -H "Authorization: Bearer $A" "$URL/v1/events?follow=1&sandbox=../x")"
expect_eq "POST /v1/events: 405" 405 "$(code -X POST -H "Authorization: Bearer $A" "$URL/v1/events?follow=1")"
curl -sN -H "Authorization: Bearer $A" "$URL/v1/events?follow=1" >"$T_TMP/ev-alice" &
EA=$!
curl -sN -H "Authorization: Bearer $B" "$URL/v1/events?follow=1" >"$T_TMP/ev-bob" &
EB=$!
curl -sN --unix-socket "$SOCK" "http://x/v1/events?follow=1" >"$T_TMP/ev-op" &
EO=$!
sleep 0.3
out=$(curl -s -H "Authorization: Bearer $A" -d '{"ttl_s":300}' "$URL/v1/sandboxes")
ID=$(j "$out" 'd["id"]')
expect_match "alice's sandbox names its tenant" '"tenant":"alice"' "$out"
curl -s -H "Authorization: Bearer $A" -d '{"cmd":"echo hi"}' "$URL/v1/sandboxes/$ID/exec" >/dev/null
curl -s -o /dev/null -H "Authorization: Bearer $A" -X DELETE "$URL/v1/sandboxes/$ID"
sleep 0.5
kill "$EA" "$EB" "$EO" 2>/dev/null
wait "$EA" "$EB" "$EO" 2>/dev/null
expect_match "alice's stream: created" "\"event\":\"sandbox.created\",\"sandbox\":\"$ID\"" "$(cat "$T_TMP/ev-alice")"
expect_match "alice's stream: the exec" "\"event\":\"exec.exited\",\"sandbox\":\"$ID\"" "$(cat "$T_TMP/ev-alice")"
expect_match "alice's stream: removed" "\"event\":\"sandbox.removed\",\"sandbox\":\"$ID\"" "$(cat "$T_TMP/ev-alice")"
expect_eq "bob's stream has nothing of alice's sandbox" 0 "$(grep -c "$ID" "$T_TMP/ev-bob")"
expect_match "the operator's stream has it" "\"sandbox\":\"$ID\"" "$(cat "$T_TMP/ev-op")"

# ---- a request after a streamed answer (a browser reuses its connections) -------------------
cat >"$T_TMP/after-stream.py" <<'PY'
import http.client, json, sys
port, token = int(sys.argv[1]), sys.argv[2]
H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
c.request("POST", "/v1/sandboxes", json.dumps({"ttl_s": 60}), H)
sb = json.loads(c.getresponse().read())["id"]
out = []
for path in ["/v1/sandboxes/%s/events" % sb, "/v1/sandboxes"]:
    try:
        c.request("GET", path, headers=H)
        r = c.getresponse()
        r.read()
        out.append(str(r.status))
    except OSError as e:
        out.append(type(e).__name__)
c.request("DELETE", "/v1/sandboxes/" + sb, headers=H)
c.getresponse().read()
print(" ".join(out))
PY
expect_eq "a request after a streamed answer is answered (one connection, as a browser would)" \
	"200 200" "$($PY "$T_TMP/after-stream.py" "$PORT" "$A" 2>&1)"

# ---- a slow reader is closed, not buffered ----------------------------------------------------
# A follower that reads nothing while a sandbox makes thousands of events (denied proxy
# connections: nothing leaves the sandbox): with --stream-backlog-max 16K, paddockd closes
# it once the socket is full and 16 KiB wait, and counts it.
out=$(curl -s --unix-socket "$SOCK" -d '{"ttl_s":300,"network":{"mode":"allowlist","allow":["allowed.test"]}}' \
	http://x/v1/sandboxes)
ID=$(j "$out" 'd["id"]')
if [ -z "$ID" ]; then
	not_ok "a sandbox with egress for the slow-reader case" && diag "$out"
else
	cat >"$T_TMP/deny.py" <<'PY'
import socket, sys
for i in range(int(sys.argv[1])):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"GET http://denied-%d.test/ HTTP/1.0\r\nHost: denied-%d.test\r\n\r\n" % (i, i))
    while s.recv(4096):
        pass
    s.close()
PY
	curl -s -o /dev/null --unix-socket "$SOCK" -X PUT --data-binary @"$T_TMP/deny.py" \
		"http://x/v1/sandboxes/$ID/files?path=/workspace/deny.py"
	cat >"$T_TMP/slow.py" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"GET /v1/events?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n")
open(sys.argv[2], "w").write("connected\n")
time.sleep(float(sys.argv[3]))  # reads nothing meanwhile
n = 0
s.settimeout(10)
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        n += len(d)
except OSError as e:
    print("error", e)
    sys.exit(1)
print("eof", n)
PY
	$PY "$T_TMP/slow.py" "$SOCK" "$T_TMP/slow.ready" 8 >"$T_TMP/slow.out" 2>&1 &
	SP=$!
	for _ in $(seq 50); do [ -s "$T_TMP/slow.ready" ] && break; sleep 0.05; done
	sleep 0.2
	before=$(metric paddock_http_streams_dropped_total)
	rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status")
	curl -s -o /dev/null --unix-socket "$SOCK" -d '{"argv":["python3","/workspace/deny.py","4000"]}' \
		"http://x/v1/sandboxes/$ID/exec"
	after=$(metric paddock_http_streams_dropped_total)
	rss1=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status")
	expect_eq "the slow follower was closed and counted" 1 "$((after - before))"
	wait "$SP"
	out=$(cat "$T_TMP/slow.out")
	expect_match "it reads what was sent, then the end" '^eof [0-9]+$' "$out"
	n=${out#eof }
	[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -lt 2000000 ] && ok "what it got is bounded ($n bytes)" ||
		not_ok "what it got is bounded ($out)"
	diag "paddockd RSS ${rss0} kB before, ${rss1} kB after 4000 events to a stalled follower"
	n=$(curl -s --unix-socket "$SOCK" "http://x/v1/sandboxes/$ID/events" | grep -c '"egress.connection"')
	expect_eq "the sandbox's events are all stored (the follower's loss is not the record's)" 4000 "$n"
	# new followers of those 4000 stored events that read nothing: the replay goes out a page
	# at a time as the client takes it, so paddockd holds a page each, not the whole past
	cat >"$T_TMP/replay.py" <<'PY'
import socket, sys, time
path, sid, n, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
conns = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(b"GET /v1/sandboxes/%s/events?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n" % sid.encode())
    conns.append(s)
open(ready, "w").write("connected\n")
time.sleep(3)  # reads nothing meanwhile
# then one reads: every stored event comes, once, in order
s, buf = conns[0], b""
s.settimeout(5)
try:
    while buf.count(b'"egress.connection"') < 4000:
        d = s.recv(65536)
        if not d:
            break
        buf += d
except OSError:
    pass
print("events", buf.count(b'"egress.connection"'))
PY
	rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status")
	$PY "$T_TMP/replay.py" "$SOCK" "$ID" 32 "$T_TMP/replay.ready" >"$T_TMP/replay.out" 2>&1 &
	RP=$!
	for _ in $(seq 100); do [ -s "$T_TMP/replay.ready" ] && break; sleep 0.05; done
	sleep 1.5
	rss1=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status")
	wait "$RP"
	diag "paddockd RSS ${rss0} kB before, ${rss1} kB with 32 stalled followers of 4000 stored events"
	# 4000 events held for each: 64 MB more (before the replay was paced); a page each: < 1 MB.
	# ASan's allocator keeps the freed pages in its quarantine: a looser bound there
	cap=8192
	grep -q __asan_init "$PADDOCKD" && cap=40960
	[ $((rss1 - rss0)) -lt "$cap" ] &&
		ok "32 new followers that read nothing hold a page each, not 4000 events ($((rss1 - rss0)) kB)" ||
		not_ok "32 new followers that read nothing hold a page each, not 4000 events (grew $((rss1 - rss0)) kB)"
	expect_eq "a follower that then reads gets every stored event" "events 4000" "$(cat "$T_TMP/replay.out")"
	curl -s -o /dev/null --unix-socket "$SOCK" -X DELETE "http://x/v1/sandboxes/$ID"
fi

# ---- the page in a browser ------------------------------------------------------------------
CHROMIUM=$(command -v chromium || true)
DRIVER=$(command -v chromedriver || true)
if [ -z "$CHROMIUM" ] || [ -z "$DRIVER" ]; then
	stop_daemon
	unavailable "chromium and chromium-driver are not installed (dev/deps --test installs them)"
fi
mkdir -p "$T_TMP/browser" "$T_TMP/home" "$T_TMP/btmp"
# Chromium wants a writable HOME (the suite's unprivileged uid has none of its own), and its
# scratch directories go below the test's own temp dir (removed with it, whenever it quits)
HOME=$T_TMP/home TMPDIR=$T_TMP/btmp timeout 240 $PY "$(dirname "$0")/console/drive.py" "$DRIVER" "$CHROMIUM" "$URL" "$A" "$B" \
	"$T_TMP/browser" >"$T_TMP/drive.out" 2>&1
st=$?
while IFS= read -r line; do
	case "$line" in
	"ok - "*) ok "browser: ${line#ok - }" ;;
	"not ok - "*) not_ok "browser: ${line#not ok - }" ;;
	"# "*) diag "${line#\# }" ;;
	*) diag "$line" ;;
	esac
done <"$T_TMP/drive.out"
[ "$st" -eq 0 ] || { not_ok "drive.py exited $st"; tail -n 20 "$T_TMP/browser/chromedriver.log" | while IFS= read -r l; do diag "$l"; done; }
for f in console-overview.png console-sandbox.png; do
	[ -s "$T_TMP/browser/$f" ] && ok "screenshot $f saved" || not_ok "screenshot $f saved"
done
# PADDOCK_CONSOLE_SHOTS=DIR keeps them (docs/console-*.png are made so)
if [ -n "${PADDOCK_CONSOLE_SHOTS:-}" ]; then
	cp "$T_TMP/browser/"console-*.png "$PADDOCK_CONSOLE_SHOTS/" 2>/dev/null || diag "could not copy the screenshots"
fi
stop_daemon
finish
