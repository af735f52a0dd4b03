#!/bin/bash
# run.sh: netns
# Network egress end to end (docs/network.md): run.sh runs this inside a network namespace
# of its own whose only other members are the test servers of netns-wrap.sh, so no packet
# can leave the machine. Names resolve only through $EGRESS_DIR/hosts (--resolve-hosts).
# Each case is a real `paddock run` (root, then rootless) and what it printed; the servers'
# requests.jsonl says what did, or did not, arrive.
. "$(dirname "$0")/lib.sh"

: "${EGRESS_DIR:?run.sh runs this test inside netns-wrap.sh}"
H=$EGRESS_DIR/hosts
REQ=$EGRESS_DIR/requests.jsonl
PY=/usr/bin/python3

# eg [paddock run args...]: a sandbox that sees the test CA at /egress/ca.pem
eg() { run_sb OUT ST --resolve-hosts "$H" --ro-bind "$EGRESS_DIR:/egress" "$@"; }
C='curl -sS -m 5'
CA='--cacert /egress/ca.pem'

# ---- allowed, through the proxy variables ----
eg --allow allowed.test -- $C http://allowed.test/
expect_match "proxy variables: curl reaches an allowed name" '^hello from allowed.test' "$OUT"
eg --allow allowed.test -- $PY -c 'import urllib.request as u; print(u.urlopen("http://allowed.test/", timeout=5).read().decode())'
expect_match "proxy variables: python urllib reaches it" '^hello from allowed.test' "$OUT"
eg --allow allowed.test -- $C $CA https://allowed.test/
expect_match "HTTPS through CONNECT, end to end TLS" '^hello from allowed.test' "$OUT"
eg --allow git.test -- sh -c 'cd /tmp && git clone -q http://git.test:8080/repo.git r && cat r/README'
expect_match "git clone over http" 'paddock-egress-test' "$OUT"
eg --allow allowed.test -- $C --socks5-hostname 127.0.0.1:1080 http://allowed.test/
expect_match "SOCKS5 with the name resolved by the proxy" '^hello from allowed.test' "$OUT"

# ---- protocols that are not HTTP, through every way out ----
# (protocols.py: a server that speaks first on allowed.test:22, client-first echo on :7)
eg --allow allowed.test --ro-bind "$(dirname "$0")/protocols.py:/p.py" -- $PY /p.py
for via in connect socks; do
	expect_match "$via: a server that speaks first is relayed at once, not after a wait" "$via server-first: ok banner after [0-9]{1,3} ms" "$OUT"
	expect_match "$via: a client-first binary or text protocol is relayed at once" "$via client-first: ok echo after [0-9]{1,3} ms and [0-9]{1,3} ms" "$OUT"
done
expect_match "connect: ...and the tunnel stays open" 'connect server-first: ok .*still open after 3.2 s' "$OUT"
expect_match "transparent: a server that speaks first (1 s to show a name)" 'transparent server-first: ok banner after 1?[0-9]{1,3} ms' "$OUT"
expect_match "transparent: a client-first protocol" 'transparent client-first: ok echo' "$OUT"

# ---- allowed, transparently: programs that ignore the variables ----
eg --allow allowed.test -- $C --noproxy '*' http://allowed.test/
expect_match "transparent HTTP: decided by Host" '^hello from allowed.test' "$OUT"
eg --allow allowed.test -- $C --noproxy '*' $CA https://allowed.test/
expect_match "transparent HTTPS: decided by the TLS server name" '^hello from allowed.test' "$OUT"
eg --allow allowed.test -- $PY -c 'import socket; s = socket.create_connection(("allowed.test", 7), timeout=5); s.sendall(b"ping"); print(s.recv(4).decode())'
expect_eq "transparent raw TCP: decided by the name the DNS filter answered" "ping" "$OUT"

# ---- refused, with an answer an agent understands ----
eg --allow allowed.test -- $C http://denied.test/
expect_match "denied name: 403 names the host" 'egress to denied.test:80 is blocked' "$OUT"
expect_match "denied name: and says other routes are blocked too" 'Other routes' "$OUT"
eg --allow allowed.test -- $C -o /dev/null -w '%{http_code}' http://denied.test/
expect_eq "denied name: status 403" "403" "$OUT"
eg --allow allowed.test -- $C $CA https://denied.test/
expect_match "denied HTTPS: CONNECT refused with 403" 'CONNECT|403' "$OUT"
eg --allow allowed.test -- $C --noproxy '*' http://denied.test/
expect_match "denied name: the DNS filter does not resolve it" 'resolve' "$OUT"
eg --allow allowed.test -- $C --noproxy '*' http://11.22.33.2/
expect_match "IP literal without a CIDR rule: refused" 'egress to 11.22.33.2:80 is blocked' "$OUT"
eg --allow allowed.test -- $C --noproxy '*' $CA --resolve denied.test:443:11.22.33.2 https://denied.test/
expect_eq "transparent TLS to a denied server name: no connection" "1" "$([ "$ST" -ne 0 ] && echo 1)"
eg --allow allowed.test -- $C --socks5-hostname 127.0.0.1:1080 http://denied.test/
expect_eq "SOCKS5 to a denied name fails" "1" "$([ "$ST" -ne 0 ] && echo 1)"
eg --allow 11.22.33.2/32 -- $C http://11.22.33.2/
expect_match "IP literal with a CIDR rule: allowed" '^hello from 11.22.33.2' "$OUT"

# ---- rules: wildcard, ports, deny beats allow ----
eg --allow '*.wild.test' --deny deny.wild.test -- sh -c "$C http://www.wild.test/; $C http://deny.wild.test/"
expect_match "wildcard rule allows a name below it" 'hello from www.wild.test' "$OUT"
expect_match "deny beats allow, and the 403 names the rule" 'deny.wild.test:80 is blocked .*deny deny.wild.test' "$OUT"
eg --allow allowed.test:443 -- sh -c "$C $CA https://allowed.test/; $C http://allowed.test/"
expect_match "port rule: the port it names works" 'hello from allowed.test' "$OUT"
expect_match "port rule: another port is refused" 'allowed.test:80 is blocked' "$OUT"
eg --allow preset:nope -- true
expect_match "unknown preset: an error naming the field" 'network.allow' "$OUT"
eg --allow 0.0.0.0/0 -- true
expect_match "0.0.0.0/0 is refused as an allow rule, pointing at --net open" "'0.0.0.0/0' would allow every address.*--net open" "$OUT"
expect_eq "...and nothing runs" "1" "$([ "$ST" -ne 0 ] && echo 1)"
eg --allow '::/0' -- true
expect_match "::/0 too" "'::/0' would allow every address" "$OUT"
eg --allow allowed.test --deny 0.0.0.0/0 -- $C http://allowed.test/
expect_match "0.0.0.0/0 as a deny rule: every address denied" 'allowed.test:80 is blocked .*deny 0.0.0.0/0' "$OUT"

# ---- open: any public destination, still no private one ----
eg --net open --deny 11.22.33.2/32 -- sh -c "$C http://allowed.test/; $C http://denied.test/; $C http://private.test/"
expect_match "open: a public name without a rule" 'hello from allowed.test' "$OUT"
expect_match "open: a deny rule still applies (by address)" 'denied.test:80 is blocked .*deny 11.22.33.2/32' "$OUT"
expect_match "open: a private address is still refused" 'private.test:80 is blocked .*not public' "$OUT"

# ---- bounds: network.max_connections ----
cat >"$T_TMP/maxconn.json" <<'JSON'
{"network": {"mode": "allowlist", "allow": ["allowed.test"], "max_connections": 1}}
JSON
chmod 644 "$T_TMP/maxconn.json"
eg --spec "$T_TMP/maxconn.json" -- $PY -c '
import socket, subprocess
s = socket.create_connection(("allowed.test", 7), timeout=5)
s.sendall(b"x"); s.recv(1)
print(subprocess.run(["curl", "-sS", "-m", "5", "http://allowed.test/"], capture_output=True, text=True).stdout)'
expect_match "max_connections: one more is refused with 503" 'too many connections' "$OUT"

# ---- no SSRF: names resolving to private, metadata and loopback addresses ----
eg --allow private.test --allow metadata.test --allow loopback.test -- sh -c \
	"$C http://private.test/; $C http://metadata.test/; $C http://loopback.test:8099/; $C --noproxy '*' http://169.254.169.254/"
expect_match "a name resolving to 10.x is refused" 'private.test:80 is blocked .*not public' "$OUT"
expect_match "a name resolving to 169.254.169.254 is refused" 'metadata.test:80 is blocked' "$OUT"
expect_match "a name resolving to 127.0.0.1 is refused" 'loopback.test:8099 is blocked' "$OUT"
expect_match "the metadata address itself is refused" '169.254.169.254:80 is blocked' "$OUT"
eg --allow private.test --allow 10.0.0.5/32 -- $C http://private.test/
expect_match "a CIDR rule lets a private address through" '^hello from private.test' "$OUT"

# ---- a tunnel carries only the host it was opened for ----
cat >"$T_TMP/mismatch.py" <<'PYEOF'
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")
print(s.recv(100).split(b"\r\n")[0].decode())
ctx = ssl.create_default_context(cafile="/egress/ca.pem")
ctx.check_hostname = False
try:
    ctx.wrap_socket(s, server_hostname="denied.test").close()
    print("sni-mismatch: passed")
except (OSError, ssl.SSLError):
    print("sni-mismatch: refused")
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(b"GET http://allowed.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n")
print("host-mismatch:", s.recv(200).split(b"\r\n")[0].decode())
PYEOF
chmod 644 "$T_TMP/mismatch.py"
eg --allow allowed.test --ro-bind "$T_TMP/mismatch.py:/m.py" -- $PY /m.py
expect_match "CONNECT to an allowed host answers 200" 'HTTP/1.1 200' "$OUT"
expect_match "TLS server name differing from the CONNECT host: refused" 'sni-mismatch: refused' "$OUT"
expect_match "Host header differing from the request's host: 403" 'host-mismatch: HTTP/1.1 403' "$OUT"

# ---- refusals say what happened, and what would help ----
eg --allow allowed.test:443 --allow private.test -- sh -c "$C http://allowed.test/; $C http://private.test/; $C --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:8099/"
expect_match "advice: a port rule's other port, the rule with the port" 'allowed.test:80 is blocked .*\(--allow allowed.test:80\)' "$OUT"
expect_match "advice: an allowed name resolving to a private address names the address" 'private.test is allowed, but it resolves to 10.0.0.5.*\(--allow 10.0.0.5:80\)' "$OUT"
expect_no_match "...and does not ask to allow the name it already allows" '--allow private.test\)' "$OUT"
expect_match "advice: an address, with its port (not every loopback port)" '127.0.0.1:8099 is blocked .*\(--allow 127.0.0.1:8099\)' "$OUT"
cat >"$T_TMP/bad.py" <<'PYEOF'
import socket
def ask(req):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    s.sendall(req)
    data = b""
    while chunk := s.recv(4096):
        data += chunk
    print(repr(data.decode(errors="replace")))
ask(b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nHost: other.test\r\n\r\n")
ask(b"GET http://allowed.test/ HTTP/1.1\r\nNo colon here\r\n\r\n")
ask(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
ask(b"GET http://allowed.test:8080/ HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
PYEOF
chmod 644 "$T_TMP/bad.py"
eg --allow allowed.test --ro-bind "$T_TMP/bad.py:/b.py" -- $PY /b.py
expect_match "malformed request: 400 saying what is wrong (two Host headers)" '400 Bad Request.*expected one Host header' "$OUT"
expect_match "malformed request: 400 saying what is wrong (a header line)" "400 Bad Request.*expected headers 'Name: value'" "$OUT"
expect_match "origin-form to the proxy port: this is an HTTP proxy" '400 Bad Request.*this is an HTTP proxy' "$OUT"
expect_match "a Host header without a port is not taken as port 80" "'HTTP/1.0 200|'HTTP/1.1 200" "$OUT"

# ---- DNS filter ----
eg --allow allowed.test --allow private.test -- sh -c \
	'getent hosts allowed.test; echo "denied=$(getent hosts denied.test >/dev/null; echo $?)"; echo "private=$(getent hosts private.test >/dev/null; echo $?)"'
expect_match "DNS answers an allowed name with the supervisor's address" '11.22.33.1 +allowed.test' "$OUT"
expect_match "DNS does not answer a name the policy refuses" 'denied=2' "$OUT"
expect_match "DNS hides a name resolving only to private addresses" 'private=2' "$OUT"
eg --allow private.test --allow 10.0.0.5/32:80 -- sh -c 'getent hosts private.test; curl -sS -m 5 --noproxy "*" http://private.test/'
expect_match "DNS answers a name whose address a CIDR rule with a port allows" '10.0.0.5 +private.test' "$OUT"
expect_match "...so a program that ignores the proxy reaches it" 'hello from private.test' "$OUT"

# ---- UDP other than DNS is dropped, and recorded ----
before=$(grep -c '"server": "udp"' "$REQ" 2>/dev/null)
eg --allow allowed.test --log-format json -- $PY -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x" * 10, ("11.22.33.1", 9999)); print("sent")'
sleep 0.3
expect_match "UDP: a drop is recorded" '"event":"egress.udp_dropped"' "$OUT"
expect_eq "UDP: nothing reached the server" "$before" "$(grep -c '"server": "udp"' "$REQ" 2>/dev/null)"

# ---- events ----
eg --allow allowed.test --log-format json -- $C --noproxy '*' http://allowed.test/
ev=$(grep '"event":"egress.connection"' <<<"$OUT" | head -n1)
expect_match "event: the connection, its host and decision" '"host":"allowed.test".*"decision":"allow"' "$ev"
expect_match "event: the address dialled, the rule and the bytes" '"address":"11.22.33.1".*"rule":"allowed.test".*"bytes_in":[1-9]' "$ev"
expect_match "event: the DNS query" '"event":"egress.dns".*"name":"allowed.test".*"decision":"allow"' "$OUT"
eg --allow allowed.test --log-format json -- $C http://denied.test/
expect_match "event: a refusal, with its reason" '"event":"egress.connection".*"host":"denied.test".*"decision":"deny".*"reason"' "$OUT"

# ---- none really has no egress; --no-transparent only the proxy ----
run_sb OUT ST --net none --resolve-hosts "$H" -- sh -c \
	"env | grep -ci _proxy; $C --noproxy '*' http://11.22.33.1/; echo c=\$?; $PY -c 'import socket; socket.create_connection((\"11.22.33.1\", 80), timeout=3)'"
expect_match "none: no proxy variables" '^0' "$OUT"
expect_match "none: no route anywhere" 'c=7' "$OUT"
expect_match "none: connect fails with ENETUNREACH" 'Network is unreachable' "$OUT"
eg --allow allowed.test --no-transparent -- sh -c "$C http://allowed.test/; $C --noproxy '*' http://11.22.33.1/; echo c=\$?"
expect_match "--no-transparent: the proxy works" 'hello from allowed.test' "$OUT"
expect_match "--no-transparent: nothing else leaves" 'c=7' "$OUT"

# ---- paddockd: the policy of a live sandbox is replaced at once ----
SOCK=$T_TMP/sock
"${PADDOCKD:?}" --socket "$SOCK" --state-dir "$T_TMP/st" --resolve-hosts "$H" 2>>"$T_TMP/d.log" &
DPID=$!
for _ in $(seq 100); do curl -s --unix-socket "$SOCK" -o /dev/null http://x/healthz && break; sleep 0.05; done
r=$(api POST /v1/sandboxes -d '{"network":{"mode":"allowlist","allow":["allowed.test"]}}')
ID=$($PY -c 'import json,sys; print(json.loads(sys.argv[1].rsplit("\n",1)[0])["id"])' "$r" 2>/dev/null)
expect_match "daemon: a sandbox with an allowlist" '^sb_' "$ID"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"curl -sS -m 5 http://allowed.test/"}')
expect_match "daemon: allowed before the change" 'hello from allowed.test' "$r"
r=$(api PUT "/v1/sandboxes/$ID/network" -d '{"mode":"allowlist","allow":["denied.test"]}')
expect_eq "daemon: PUT network answers 200" 200 "$(tail -n1 <<<"$r")"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"curl -sS -m 5 http://allowed.test/; curl -sS -m 5 http://denied.test/"}')
expect_match "daemon: the old name is refused at once" 'allowed.test:80 is blocked' "$r"
expect_match "daemon: the new name works at once" 'hello from denied.test' "$r"
r=$(api PUT "/v1/sandboxes/$ID/network" -d '{"mode":"none"}')
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"curl -sS -m 5 http://denied.test/"}')
expect_match "daemon: locked with mode none" 'denied.test:80 is blocked' "$r"
r=$(api PUT "/v1/sandboxes/$ID/network" -d '{"mode":"allowlist","allow":["bad host"]}')
expect_eq "daemon: a bad rule is a 400 naming it" "400" "$(tail -n1 <<<"$r")"
expect_match "daemon: ...the field" 'network.allow\[0\]' "$r"
r=$(api PUT "/v1/sandboxes/$ID/network" -d '{"allow":[]}')
expect_eq "daemon: the mode is required" "400" "$(tail -n1 <<<"$r")"
r=$(api GET "/v1/sandboxes/$ID/network")
expect_match "daemon: GET network shows the policy in force and counters" '"mode": *"none".*"connections_denied": *[1-9]' "$(tr -d '\n' <<<"$r")"
r=$(curl -s --unix-socket "$SOCK" http://x/metrics)
expect_match "daemon: per-sandbox egress metrics" "paddock_egress_connections_total\\{sandbox=\"$ID\",decision=\"deny\"\\} [1-9]" "$r"
r=$(api POST /v1/sandboxes -d '{}')
ID2=$($PY -c 'import json,sys; print(json.loads(sys.argv[1].rsplit("\n",1)[0])["id"])' "$r" 2>/dev/null)
r=$(api PUT "/v1/sandboxes/$ID2/network" -d '{"mode":"allowlist","allow":["allowed.test"]}')
expect_eq "daemon: a sandbox made with none has no egress to open: 409" "409" "$(tail -n1 <<<"$r")"
# lock means lock: a PUT closes the open connections the new policy refuses, and says so
cat >"$T_TMP/hold.py" <<'PYEOF'
import socket, time
def conn(name):
    s = socket.create_connection((name, 7), timeout=5)
    s.sendall(b"\x00")
    s.recv(1)
    return s
def alive(s):
    try:
        s.sendall(b"\x01")
        return s.recv(1) == b"\x01"
    except OSError:
        return False
a, w = conn("allowed.test"), conn("www.wild.test")
print("open", flush=True)
t = time.time()
while alive(a) and time.time() - t < 20:
    time.sleep(0.1)
print("allowed.test:", "open" if alive(a) else "closed", "www.wild.test:", "open" if alive(w) else "closed", flush=True)
PYEOF
r=$(api POST /v1/sandboxes -d '{"network":{"mode":"allowlist","allow":["allowed.test","www.wild.test"]}}')
ID3=$($PY -c 'import json,sys; print(json.loads(sys.argv[1].rsplit("\n",1)[0])["id"])' "$r" 2>/dev/null)
r=$(api POST "/v1/sandboxes/$ID3/exec" -d "$($PY -c 'import json,sys; print(json.dumps({"argv": ["/usr/bin/python3", "-c", open(sys.argv[1]).read()], "background": True, "tag": "hold"}))' "$T_TMP/hold.py")")
for _ in $(seq 100); do
	api GET "/v1/sandboxes/$ID3/processes/hold/output" | grep -q '"open' && break
	sleep 0.1
done
r=$(api PUT "/v1/sandboxes/$ID3/network" -d '{"mode":"allowlist","allow":["www.wild.test"]}')
expect_eq "daemon: a PUT that removes a host answers 200" 200 "$(tail -n1 <<<"$r")"
expect_match "daemon: ...and says it closed the one open connection to it" '"connections_closed": *1' "$r"
api POST "/v1/sandboxes/$ID3/processes/hold/wait?timeout_s=25" >/dev/null
r=$(api GET "/v1/sandboxes/$ID3/processes/hold/output")
expect_match "daemon: the tunnel to the removed host is closed at once, the other one stays" 'allowed.test: closed www.wild.test: open' "$r"
r=$(api GET "/v1/sandboxes/$ID3/events")
expect_match "daemon: the closed connection is recorded" '"event": *"egress.connection".*"host": *"allowed.test".*"decision": *"deny".*"reason": *"the network policy was replaced' "$(tr -d '\n' <<<"$r")"
expect_match "daemon: egress.policy counts it" '"event": *"egress.policy".*"connections_closed": *1' "$(tr -d '\n' <<<"$r")"
api DELETE "/v1/sandboxes/$ID3" >/dev/null
# a crash of the daemon: the re-adopted sandbox gets its listeners back, with the policy
# last PUT (the store has it)
api PUT "/v1/sandboxes/$ID/network" -d '{"mode":"allowlist","allow":["allowed.test"]}' >/dev/null
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
"$PADDOCKD" --socket "$SOCK" --state-dir "$T_TMP/st" --resolve-hosts "$H" 2>>"$T_TMP/d.log" &
DPID=$!
for _ in $(seq 100); do curl -s --unix-socket "$SOCK" -o /dev/null http://x/healthz && break; sleep 0.05; done
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"curl -sS -m 5 http://allowed.test/; curl -sS -m 5 http://denied.test/"}')
expect_match "daemon: after kill -9 and restart, egress works again" 'hello from allowed.test' "$r"
expect_match "daemon: ...with the policy last set" 'denied.test:80 is blocked' "$r"
api DELETE "/v1/sandboxes/$ID" >/dev/null
api DELETE "/v1/sandboxes/$ID2" >/dev/null
kill -TERM "$DPID"
wait "$DPID"

# the operator's bound: --max-network allowlist refuses open, at create and PUT
"$PADDOCKD" --socket "$SOCK" --state-dir "$T_TMP/st" --resolve-hosts "$H" --max-network allowlist 2>>"$T_TMP/d.log" &
DPID=$!
for _ in $(seq 100); do curl -s --unix-socket "$SOCK" -o /dev/null http://x/healthz && break; sleep 0.05; done
r=$(api POST /v1/sandboxes -d '{"network":{"mode":"open"}}')
expect_eq "--max-network: open refused at create, 403" "403" "$(tail -n1 <<<"$r")"
expect_match "--max-network: the error names network.mode" '"field": *"network.mode"' "$r"
r=$(api POST /v1/sandboxes -d '{"network":{"allow":["allowed.test"]}}')
ID=$($PY -c 'import json,sys; print(json.loads(sys.argv[1].rsplit("\n",1)[0])["id"])' "$r" 2>/dev/null)
r=$(api PUT "/v1/sandboxes/$ID/network" -d '{"mode":"open"}')
expect_eq "--max-network: open refused at PUT, 403" "403" "$(tail -n1 <<<"$r")"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"curl -sS -m 5 http://allowed.test/"}')
expect_match "--max-network: the refused PUT changed nothing" 'hello from allowed.test' "$r"
api DELETE "/v1/sandboxes/$ID" >/dev/null
kill -TERM "$DPID"
wait "$DPID"

finish
