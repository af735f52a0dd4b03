#!/bin/bash
# paddockd's E2B listener behind the HTTP gate (docs/e2b.md, docs/security.md), on loopback,
# with raw sockets and curl (no SDK: test-e2b.sh runs that): a body to the control plane
# without an API key is refused at its head, before it is read (memory stays flat while four
# clients send 64 MB each); a Connect call without the sandbox's access token likewise, in
# Connect's error shape; refusals are E2B's JSON ({"code", "message"}); bodies are bounded by
# route (a control-plane body over 1 MiB at the head; a /files upload passes whole); idle
# connections are closed at --header-timeout; the connection caps hold.
. "$(dirname "$0")/lib.sh"

PADDOCKD=${PADDOCKD:?PADDOCKD must point at paddockd}
PY=/usr/bin/python3
SOCK=$T_TMP/sock
STATE=$T_TMP/st
KEY=e2b_gate_test_key

# raw PORT REQUEST: sends the bytes (printf format, no arguments), prints "STATUS BODY"
raw() {
	$PY - "$1" "$2" <<'PY'
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
try:
    c.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
except OSError:
    pass
buf = b""
while True:
    try:
        d = c.recv(65536)
    except OSError:
        break
    if not d:
        break
    buf += d
head, _, body = buf.partition(b"\r\n\r\n")
first = head.split(b"\r\n")[0].split(b" ")
print(first[1].decode() if len(first) > 1 else "none", body.decode(errors="replace").strip())
PY
}

DAEMON_ARGS=(--max-connections 32 --max-connections-per-peer 16 --header-timeout 3)
start_daemon --e2b 127.0.0.1:0 || { not_ok "paddockd --e2b 127.0.0.1:0 starts"; finish; }
PORT=$(e2b_port)
[ -n "$PORT" ] && ok "paddockd serves E2B on 127.0.0.1:$PORT" ||
	{ not_ok "paddockd logs its E2B port"; stop_daemon; finish; }

# ---- refusals at the head, in E2B's shape ----
r=$(raw "$PORT" 'POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 262144000\r\n\r\n')
expect_eq "control plane without X-API-Key: 401 {code, message}, before the body" \
	"401 401 X-API-Key" "${r%% *} $(j "${r#* }" 'd["code"]') $(j "${r#* }" 'd["message"].split(":")[0]')"
r=$(raw "$PORT" "POST /sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: $KEY\r\nContent-Length: 2097152\r\n\r\n")
expect_eq "control plane body over 1 MiB: 413 at the head" "413 413" \
	"${r%% *} $(j "${r#* }" 'd["code"]')"
r=$(raw "$PORT" 'POST /process.Process/List HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: sb_nope\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n')
expect_eq "a Connect call naming no live sandbox: a 100 MB body is refused at the head (resource_exhausted)" \
	"429 resource_exhausted" "${r%% *} $(j "${r#* }" 'd["code"]')"
r=$(raw "$PORT" 'PUT /files?path=/tmp/x HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: sb_nope\r\nContent-Length: 104857600\r\n\r\n')
expect_eq "/files naming no live sandbox: a 100 MB body is refused at the head (413)" "413 413" \
	"${r%% *} $(j "${r#* }" 'd["code"]')"
r=$(raw "$PORT" 'POST /files?path=/tmp/x&signature=v1_abc&signature_expiration=9999999999 HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n')
expect_eq "/files with a signature no sandbox made: 401 invalid signature" "401 invalid signature" \
	"${r%% *} $(j "${r#* }" 'd["message"]')"
r=$(raw "$PORT" 'POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n')
expect_eq "/health takes no body: 413" "413 413" "${r%% *} $(j "${r#* }" 'd["code"]')"
r=$(raw "$PORT" 'GET /sandboxes HTTP/1.1\r\nHost: x\r\nX-Bad\r\n\r\n')
expect_eq "a malformed head: 400 {code, message}" "400 400" "${r%% *} $(j "${r#* }" 'd["code"]')"

# ---- four clients without a key each send 64 MB of a 250 MB body at once ----
base=$(rss_kb)
flood "$PORT" 'POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 262144000\r\n\r\n'
grown=$(( $(rss_kb) - base ))
diag "RSS grew by ${grown} kB while four clients without an API key sent 64 MB bodies"
[ "$grown" -lt 65536 ] && ok "bodies without an API key leave paddockd's memory flat (< 64 MiB)" ||
	not_ok "bodies without an API key leave paddockd's memory flat (grew ${grown} kB)"

# ---- what passes: a sandbox, an upload with its token, a wrong token for it ----
r=$(curl -s --max-time 60 -X POST -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \
	-d '{"templateID":"base","timeout":120}' "http://127.0.0.1:$PORT/sandboxes")
ID=$(j "$r" 'd["sandboxID"]')
TOK=$(j "$r" 'd["envdAccessToken"]')
[ -n "$ID" ] && [ -n "$TOK" ] && ok "a sandbox through the control plane ($ID)" ||
	not_ok "a sandbox through the control plane: $r"
head -c $((20 << 20)) /dev/urandom >"$T_TMP/big"
r=$(curl -s --max-time 60 -H "E2b-Sandbox-Id: $ID" -H "X-Access-Token: $TOK" \
	-F "file=@$T_TMP/big" -o /dev/null -w '%{http_code}' \
	"http://127.0.0.1:$PORT/files?path=/tmp/big&username=user")
expect_eq "a 20 MiB upload with the sandbox's token passes the gate" 200 "$r"
r=$(curl -s --max-time 60 -H "E2b-Sandbox-Id: $ID" -H "X-Access-Token: $TOK" \
	"http://127.0.0.1:$PORT/files?path=/tmp/big&username=user" | cmp - "$T_TMP/big" && echo same)
expect_eq "...and reads back the same" same "$r"
r=$(raw "$PORT" "POST /process.Process/List HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: $ID\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n")
expect_eq "a Connect call without X-Access-Token: 401 in Connect's shape, before the body" \
	"401 unauthenticated" "${r%% *} $(j "${r#* }" 'd["code"]')"
r=$(raw "$PORT" "PUT /files?path=/tmp/x HTTP/1.1\r\nHost: 49983-$ID.localhost\r\nX-Access-Token: 0000\r\nContent-Length: 104857600\r\n\r\n")
expect_eq "/files with a wrong X-Access-Token (sandbox named by Host): 401 {code, message}" "401 401" \
	"${r%% *} $(j "${r#* }" 'd["code"]')"
last=${TOK: -1}
[ "$last" = 0 ] && other=1 || other=0
r=$(raw "$PORT" "POST /filesystem.Filesystem/Stat HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: $ID\r\nX-Access-Token: ${TOK%?}$other\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
expect_eq "a token one digit off: 401 unauthenticated" "401 unauthenticated" \
	"${r%% *} $(j "${r#* }" 'd["code"]')"
r=$(curl -s --max-time 30 -X DELETE -H "X-API-Key: $KEY" -o /dev/null -w '%{http_code}' \
	"http://127.0.0.1:$PORT/sandboxes/$ID")
expect_eq "the sandbox is killed" 204 "$r"

# ---- connections: capped per peer and per listener; a head must come in time ----
idle_connections "$PORT" 1:20 2:20 3:20 >"$T_TMP/conns" &
CPID=$!
await_line "$T_TMP/conns" all
open_e2b=$(metric 'paddock_http_connections_open{listener="e2b"}')
[ -n "$open_e2b" ] && [ "$open_e2b" -le 32 ] && [ "$open_e2b" -gt 16 ] &&
	ok "60 idle connections from three peers: the E2B listener holds at most 32 ($open_e2b)" ||
	not_ok "60 idle connections from three peers: the E2B listener holds at most 32 (got '$open_e2b')"
expect_idle_closed "$CPID" "$T_TMP/conns"
ht=$(metric 'paddock_http_refused_total{listener="e2b",reason="header_timeout"}')
pp=$(metric 'paddock_http_refused_total{listener="e2b",reason="per_peer"}')
[ "${ht:-0}" -gt 0 ] && [ "${pp:-0}" -gt 0 ] &&
	ok "...cut off by the header deadline ($ht) or over the per-peer cap ($pp)" ||
	not_ok "...cut off by the header deadline ('$ht') or over the per-peer cap ('$pp')"
r=$(curl -s --max-time 10 -H "X-API-Key: $KEY" -o /dev/null -w '%{http_code}' \
	"http://127.0.0.1:$PORT/sandboxes")
expect_eq "the E2B listener answers again afterwards" 200 "$r"

daemon_inits >/dev/null
stop_daemon
expect_eq "paddockd exits 0 on SIGTERM" 0 "$?"
expect_eq "no paddockd or sandbox of this test is left" "0 inits" \
	"$(daemon_inits) inits$(ps -e -o pid=,comm=,args= | awk -v d="$T_TMP/" 'index($0, d) && $2 == "paddockd"')"
[ "$T_FAILED" -gt 0 ] && tail -n 40 "$T_TMP/daemon.log" | sed 's/^/# /'
finish
