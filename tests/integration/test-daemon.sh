#!/bin/bash
# paddockd end to end: a real daemon on a real unix socket (and TCP with tokens), driven with
# curl: every endpoint's happy path and its bad inputs, tenants, symlink escapes on the file
# endpoints, a server reached through the ports endpoint, TTL expiry, kill -9 and restart
# with live sandboxes, SIGTERM and restart. run.sh checks that nothing is left behind.
. "$(dirname "$0")/lib.sh"

PADDOCKD=${PADDOCKD:?PADDOCKD must point at paddockd}
PY=/usr/bin/python3
SOCK=$T_TMP/sock
STATE=$T_TMP/st

# every start of paddockd here (lib.sh's start_daemon) takes a small upload limit
DAEMON_ARGS=(--max-upload 100000)

start_daemon || { not_ok "paddockd starts"; finish; }
ok "paddockd starts"

r=$(api GET /healthz)
expect_eq "healthz answers 200" 200 "$(status_of "$r")"
expect_eq "socket is mode 0600" 600 "$(stat -c %a "$SOCK")"

# ---- bad input changes nothing ----
r=$(api POST /v1/sandboxes -d '{"limits":')
expect_eq "malformed JSON: 400" 400 "$(status_of "$r")"
expect_eq "malformed JSON: code" malformed "$(j "$(body_of "$r")" 'd["error"]["code"]')"
r=$(api POST /v1/sandboxes -d '{"limitz":{}}')
expect_eq "unknown spec field: 400 naming it" "400 limitz" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST /v1/sandboxes -d '{"limits":{"memory":"lots"}}')
expect_eq "bad limit: 400 naming it" "400 limits.memory" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST /v1/sandboxes -d '{"ttl_s":-1}')
expect_eq "bad ttl: 400 naming it" "400 ttl_s" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST /v1/sandboxes -d '{"ttl_s":0}')
expect_eq "ttl_s 0 (expired when made): 400 naming it" "400 ttl_s" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST /v1/sandboxes -d '{"metadata":{"a":1}}')
expect_eq "bad metadata: 400" 400 "$(status_of "$r")"
r=$(api GET /v1/sandboxes)
expect_eq "nothing was created by bad requests" 0 "$(j "$(body_of "$r")" 'len(d["sandboxes"])')"
r=$(api GET /v1/sandboxes/sb_nonexistent1)
expect_eq "unknown sandbox: 404" 404 "$(status_of "$r")"
r=$(api GET /v1/sandboxes/../../etc/passwd)
expect_eq "a path that is no id: 404" 404 "$(status_of "$r")"
r=$(api GET /v1/nothing)
expect_eq "unknown route: 404" 404 "$(status_of "$r")"

# ---- lifecycle ----
r=$(api POST /v1/sandboxes -d '{"ttl_s":600,"metadata":{"owner":"test"},"limits":{"output":"4K","timeout_s":2}}')
expect_eq "create: 201" 201 "$(status_of "$r")"
ID=$(j "$(body_of "$r")" 'd["id"]')
expect_match "create: an id" '^sb_[a-z2-9]{12}$' "$ID"
r=$(api GET "/v1/sandboxes/$ID")
expect_eq "get: running, with metadata" "running test" \
	"$(j "$(body_of "$r")" 'd["state"]+" "+d["metadata"]["owner"]')"
r=$(api GET /v1/sandboxes)
expect_eq "list: one" 1 "$(j "$(body_of "$r")" 'len(d["sandboxes"])')"

# ---- exec ----
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"echo out; echo err >&2; id -u; exit 3"}')
b=$(body_of "$r")
expect_eq "exec: stdout" $'out\n1000' "$(j "$b" 'd["stdout"].strip()')"
expect_eq "exec: stderr" "err" "$(j "$b" 'd["stderr"].strip()')"
expect_eq "exec: exit code and reason" "3 exited" "$(j "$b" 'str(d["result"]["exit_code"])+" "+d["result"]["reason"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["cat"],"stdin":"from stdin"}')
expect_eq "exec: stdin" "from stdin" "$(j "$(body_of "$r")" 'd["stdout"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["printf","\\377\\376"]}')
expect_eq "exec: binary output as base64" "//4=" "$(j "$(body_of "$r")" 'd["stdout_b64"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["sh","-c","echo a; echo b >&2"],"stream":true}')
b=$(body_of "$r")
expect_eq "stream: start, output, exit" "start stdout stderr exit" \
	"$(echo "$b" | $PY -c 'import json,sys; print(" ".join(json.loads(l)["type"] for l in sys.stdin if l.strip()))')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["sleep","10"],"timeout_s":0.5}')
expect_eq "exec: timeout" timeout "$(j "$(body_of "$r")" 'd["result"]["reason"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["sleep","10"]}')
expect_eq "exec: the sandbox's limits.timeout_s is the default" timeout \
	"$(j "$(body_of "$r")" 'd["result"]["reason"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["yes"]}')
b=$(body_of "$r")
expect_eq "exec: output limit ends it" "output True 4096" \
	"$(j "$b" 'd["result"]["reason"]+" "+str(d["result"]["output_truncated"])+" "+str(len(d["stdout"]))')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["no-such-command"]}')
expect_eq "exec: missing command is an error result, 127" "error 127" \
	"$(j "$(body_of "$r")" 'd["result"]["reason"]+" "+str(d["result"]["exit_status"])')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":[]}')
expect_eq "exec: empty argv: 400" "400 argv" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["true"],"cmd":"true"}')
expect_eq "exec: argv and cmd: 400" 400 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["true"],"bogus":1}')
expect_eq "exec: unknown field: 400 naming it" "400 bogus" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["true"],"cwd":"relative"}')
expect_eq "exec: relative cwd: 400" "400 cwd" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"

r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"tty; stty size","pty":{"rows":30,"cols":100}}')
expect_match "exec: pty mode gives a terminal of the asked size" $'/dev/pts/[0-9]+\r?\n30 100' \
	"$(j "$(body_of "$r")" 'd["stdout"]')"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"read l; echo got $l","background":true,"tag":"tty","pty":{"rows":24,"cols":80}}')
r=$(api POST "/v1/sandboxes/$ID/processes/tty/resize" -d '{"rows":50,"cols":120}')
expect_eq "pty: resize: 204" 204 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/processes/tty/stdin" --data-binary $'typed\n')
r=$(api POST "/v1/sandboxes/$ID/processes/tty/wait?timeout_s=10")
r=$(api GET "/v1/sandboxes/$ID/processes/tty/output")
expect_match "pty: typed input reaches the command" "got typed" "$r"

# ---- background processes ----
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["cat"],"background":true,"tag":"cat","keep_stdin":true}')
expect_eq "background: 201" 201 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["cat"],"background":true,"tag":"cat"}')
expect_eq "background: a running tag is unique (409)" 409 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/processes/cat/stdin" --data-binary 'line one')
expect_eq "stdin write: 204" 204 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/processes/cat/stdin/close")
expect_eq "stdin close: 204" 204 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/processes/cat/wait?timeout_s=10")
expect_eq "wait: the process ended after EOF" "exited 0" \
	"$(j "$(body_of "$r")" 'd["state"]+" "+str(d["result"]["exit_code"])')"
r=$(api GET "/v1/sandboxes/$ID/processes/cat/output")
expect_eq "output: what it wrote, then exit" "line one exit" \
	"$(body_of "$r" | $PY -c 'import json,sys; e=[json.loads(l) for l in sys.stdin if l.strip()]; print(e[0]["data"], e[-1]["type"])')"
expect_eq "output: each ring event says where it starts" "0" \
	"$(body_of "$r" | $PY -c 'import json,sys; print([json.loads(l) for l in sys.stdin if l.strip()][0]["offset"])')"
r=$(api GET "/v1/sandboxes/$ID/processes/cat/output?since_stdout=5&since_stderr=0")
expect_eq "output since an offset: only the rest" "one 5" \
	"$(body_of "$r" | $PY -c 'import json,sys; e=[json.loads(l) for l in sys.stdin if l.strip()]; print(e[0]["data"], e[0]["offset"])')"
r=$(api GET "/v1/sandboxes/$ID/processes/cat/output?since_stdout=x")
expect_eq "output: a bad offset is 400" 400 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["sleep","100"],"background":true,"tag":"sleeper"}')
PID=$(j "$(body_of "$r")" 'd["pid"]')
r=$(api GET "/v1/sandboxes/$ID/processes")
expect_match "list: the sleeper is running" "sleeper running" \
	"$(j "$(body_of "$r")" '" ".join(p["tag"]+" "+p["state"] for p in d["processes"] if p["tag"])')"
r=$(api POST "/v1/sandboxes/$ID/processes/$PID/signal" -d '{"signal":"NOPE"}')
expect_eq "signal: bad name: 400" 400 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/processes/$PID/signal" -d '{"signal":"TERM"}')
expect_eq "signal by pid: 204" 204 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/processes/sleeper/wait?timeout_s=10")
expect_eq "signal: it ended by SIGTERM" "signaled 15" \
	"$(j "$(body_of "$r")" 'd["result"]["reason"]+" "+str(d["result"]["signal"])')"
# stdin beyond what a pipe holds is queued, in order, and bounded
head -c 65536 /dev/zero | tr '\0' 'a' >"$T_TMP/64k"
api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"sleep 0.5; wc -c","background":true,"tag":"slow","keep_stdin":true}' >/dev/null
codes=
for _ in 1 2 3 4; do
	r=$(api POST "/v1/sandboxes/$ID/processes/slow/stdin" --data-binary @"$T_TMP/64k")
	codes+="$(status_of "$r") "
done
api POST "/v1/sandboxes/$ID/processes/slow/stdin/close" >/dev/null
r=$(api POST "/v1/sandboxes/$ID/processes/slow/wait?timeout_s=10")
r=$(api GET "/v1/sandboxes/$ID/processes/slow/output")
expect_eq "stdin: 4 x 64 KiB to a slow reader, all taken" "204 204 204 204 " "$codes"
expect_match "stdin: every byte arrives" '"data":"262144' "$r"
api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["sleep","100"],"background":true,"tag":"noread","keep_stdin":true}' >/dev/null
codes=
for _ in $(seq 18); do
	r=$(api POST "/v1/sandboxes/$ID/processes/noread/stdin" --data-binary @"$T_TMP/64k")
	codes+="$(status_of "$r") "
done
expect_match "stdin: a pipe and 1 MiB are taken, then 429" "^(204 ){17}429 $" "$codes"
api POST "/v1/sandboxes/$ID/processes/noread/signal" -d '{"signal":"KILL"}' >/dev/null
r=$(api GET "/v1/sandboxes/$ID%2Fprocesses")
expect_eq "an encoded slash is no path separator" 404 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$ID/processes/nosuch")
expect_eq "unknown process: 404" 404 "$(status_of "$r")"

# ---- files ----
r=$(api PUT "/v1/sandboxes/$ID/files?path=/workspace/d%20ir/new.txt&mode=0600" --data-binary 'hello files')
expect_eq "upload: 201, parents made, mode" "201 0600 11" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["mode"]+" "+str(d["size"])')"
r=$(api GET "/v1/sandboxes/$ID/files?path=/workspace/d%20ir/new.txt")
expect_eq "download" "hello files" "$(body_of "$r")"
r=$(curl -s --unix-socket "$SOCK" -H 'Range: bytes=6-10' -w '\n%{http_code}' "http://x/v1/sandboxes/$ID/files?path=/workspace/d%20ir/new.txt")
expect_eq "download a range: 206" $'files\n206' "$r"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"cat \"/workspace/d ir/new.txt\""}')
expect_eq "the sandbox sees the upload" "hello files" "$(j "$(body_of "$r")" 'd["stdout"]')"
r=$(api GET "/v1/sandboxes/$ID/files/stat?path=/workspace/d%20ir")
expect_eq "stat: a dir owned by the sandbox user" "dir 1000" "$(j "$(body_of "$r")" 'd["type"]+" "+str(d["uid"])')"
r=$(api POST "/v1/sandboxes/$ID/files/mkdir" -d '{"path":"/workspace/x/y/z"}')
expect_eq "mkdir -p: 201" 201 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$ID/files/move" -d '{"from":"/workspace/d ir/new.txt","to":"/workspace/x/moved.txt"}')
expect_eq "move: 200" 200 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$ID/files/list?path=/workspace&depth=3")
expect_eq "list with depth" "/workspace/d ir /workspace/x /workspace/x/moved.txt /workspace/x/y /workspace/x/y/z" \
	"$(j "$(body_of "$r")" '" ".join(e["path"] for e in d["entries"])')"
r=$(api GET "/v1/sandboxes/$ID/files/list?path=/workspace&depth=99")
expect_eq "list: bad depth: 400" "400 depth" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api DELETE "/v1/sandboxes/$ID/files?path=/workspace/x")
expect_eq "remove a non-empty dir without recursive: refused" 400 "$(status_of "$r")"
r=$(api DELETE "/v1/sandboxes/$ID/files?path=/workspace/x&recursive=1")
expect_eq "remove recursive: 204" 204 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$ID/files/stat?path=/workspace/x")
expect_eq "removed: 404" 404 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$ID/files?path=/workspace/nope")
expect_eq "missing file: 404" 404 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$ID/files")
expect_eq "no path: 400" "400 path" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
head -c 200000 /dev/zero >"$T_TMP/big"
r=$(api PUT "/v1/sandboxes/$ID/files?path=/workspace/big" -H 'Expect: 100-continue' --data-binary @"$T_TMP/big")
expect_eq "upload over --max-upload: 413" 413 "$(status_of "$r")"
# a read-only bind is the client's to be refused (403), not paddockd failing (500)
mkdir -p "$T_TMP/robind"
r=$(api POST /v1/sandboxes -d "{\"binds\":[{\"source\":\"$T_TMP/robind\",\"target\":\"/ro\",\"readonly\":true}]}")
IDRO=$(j "$(body_of "$r")" 'd["id"]')
r=$(api PUT "/v1/sandboxes/$IDRO/files?path=/ro/x" --data-binary 'x')
expect_eq "upload to a read-only bind: 403 forbidden, EROFS" "403 forbidden EROFS" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["code"]+" "+d["error"]["errno"]')"
r=$(api POST "/v1/sandboxes/$IDRO/files/mkdir" -d '{"path":"/ro/d"}')
expect_eq "mkdir in a read-only bind: 403" 403 "$(status_of "$r")"
api DELETE "/v1/sandboxes/$IDRO" >/dev/null

# symlinks the agent plants never reach the host
echo "host-secret-$$" >"$T_TMP/secret"
chmod 644 "$T_TMP/secret"
api POST "/v1/sandboxes/$ID/exec" -d "{\"cmd\":\"ln -s $T_TMP/secret /workspace/l1; ln -s /proc/1/root /workspace/l2; ln -s ../../../../.. /workspace/l3; ln -s $T_TMP /workspace/l4\"}" >/dev/null
for p in /workspace/l1 "/workspace/l2$T_TMP/secret" "/workspace/l3$T_TMP/secret" "../../..$T_TMP/secret" /workspace/l4/secret; do
	q=$($PY -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1]))' "$p")
	r=$(api GET "/v1/sandboxes/$ID/files?path=$q")
	expect_no_match "read through '$p' stays inside" "host-secret" "$r"
done
r=$(api PUT "/v1/sandboxes/$ID/files?path=/workspace/l4/planted" --data-binary 'x')
[ -e "$T_TMP/planted" ] && not_ok "write through a symlink stays inside" || ok "write through a symlink stays inside"
r=$(api DELETE "/v1/sandboxes/$ID/files?path=/workspace/l4&recursive=1")
[ -e "$T_TMP/secret" ] && ok "recursive remove of a symlink keeps its target" || not_ok "recursive remove of a symlink keeps its target"
r=$(api POST "/v1/sandboxes/$ID/files/move" -d "{\"from\":\"/workspace/l1\",\"to\":\"/workspace/l1b\"}")
[ -e "$T_TMP/secret" ] && ok "move of a symlink moves the link" || not_ok "move of a symlink moves the link"

# a watch sees what the sandbox does to its files
curl -s -N --max-time 1.5 --unix-socket "$SOCK" \
	"http://x/v1/sandboxes/$ID/files/watch?path=/workspace&recursive=1" >"$T_TMP/watch" &
wpid=$!
sleep 0.5
api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"mkdir /workspace/wd; sleep 0.2; echo x > /workspace/wd/new; rm /workspace/wd/new"}' >/dev/null
wait $wpid
expect_match "watch: create, write, remove in a new directory" \
	"create /workspace/wd.*create /workspace/wd/new.*write /workspace/wd/new.*remove /workspace/wd/new" \
	"$($PY -c 'import json,sys; print(" ".join(e["type"]+" "+e["path"] for e in map(json.loads, filter(str.strip, open(sys.argv[1])))))' "$T_TMP/watch")"
r=$(api GET "/v1/sandboxes/$ID/files/watch?path=/workspace/nope")
expect_eq "watch: a missing directory: 404" 404 "$(status_of "$r")"

# ---- ports: a service inside, reached from outside without opening the network ----
api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"mkdir -p /tmp/www && echo served-from-inside > /tmp/www/index.html && cd /tmp/www && exec python3 -m http.server 8000 --bind 127.0.0.1","background":true,"tag":"web"}' >/dev/null
r=
for _ in $(seq 50); do
	r=$(api GET "/v1/sandboxes/$ID/ports/8000/index.html")
	[ "$(status_of "$r")" = 200 ] && break
	sleep 0.1
done
expect_eq "ports: GET reaches the service" $'served-from-inside\n\n200' "$r"
# an upgrade to a raw stream (what WebSocket does): 101, then bytes both ways, 3 MB back
cat >"$T_TMP/upsrv.py" <<'PYEOF'
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8003)); s.listen(4)
while True:
    c, _ = s.accept()
    req = b""
    while b"\r\n\r\n" not in req:
        req += c.recv(4096)
    if b"Upgrade: echo" not in req:
        c.sendall(b"HTTP/1.1 400 Bad\r\nContent-Length: 0\r\n\r\n"); c.close(); continue
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
    while True:
        d = c.recv(65536)
        if not d: break
        c.sendall(d.upper())
    c.close()
PYEOF
cat >"$T_TMP/upcli.py" <<'PYEOF'
import socket, sys
sock, sid = sys.argv[1], sys.argv[2]
c = socket.socket(socket.AF_UNIX); c.connect(sock)
c.sendall(("GET /v1/sandboxes/%s/ports/8003/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n" % sid).encode())
buf = b""
while b"\r\n\r\n" not in buf:
    d = c.recv(4096)
    if not d: break
    buf += d
head, _, rest = buf.partition(b"\r\n\r\n")
print(head.split(b"\r\n")[0].decode())
c.sendall(b"hello raw stream")
got = rest
while len(got) < 16:
    d = c.recv(4096)
    if not d: break
    got += d
print(got.decode())
big = b"x" * 3000000
import threading
res = []
def rd():
    n = 0
    while n < len(big):
        d = c.recv(65536)
        if not d: break
        n += len(d)
    res.append(n)
t = threading.Thread(target=rd); t.start()
c.sendall(big); t.join(10)
print("big", res[0] if res else None)
c.close()
PYEOF
api PUT "/v1/sandboxes/$ID/files?path=/tmp/upsrv.py" --data-binary @"$T_TMP/upsrv.py" >/dev/null
api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["python3","/tmp/upsrv.py"],"background":true,"tag":"upsrv"}' >/dev/null
for _ in $(seq 50); do
	r=$(api GET "/v1/sandboxes/$ID/ports/8003/")
	[ "$(status_of "$r")" = 400 ] && break
	sleep 0.1
done
r=$(timeout 20 $PY "$T_TMP/upcli.py" "$SOCK" "$ID" 2>&1)
expect_eq "ports: upgrade, then a raw stream both ways" \
	$'HTTP/1.1 101 Switching Protocols\nHELLO RAW STREAM\nbig 3000000' "$r"
api POST "/v1/sandboxes/$ID/processes/upsrv/signal" -d '{"signal":"KILL"}' >/dev/null
r=$(api GET "/v1/sandboxes/$ID/ports/8001/")
expect_eq "ports: nothing listening: 502" 502 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$ID/ports/99999/")
expect_eq "ports: bad port: 400" 400 "$(status_of "$r")"

# clients that go away mid-stream: followers, a waiter, a foreground exec, a port request
api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"for i in 1 2 3 4 5 6 7 8; do echo $i; sleep 0.1; done","background":true,"tag":"chatty"}' >/dev/null
for _ in 1 2 3; do
	curl -s -N --max-time 0.2 --unix-socket "$SOCK" "http://x/v1/sandboxes/$ID/processes/chatty/output?follow=1" >/dev/null
	curl -s --max-time 0.2 --unix-socket "$SOCK" -X POST "http://x/v1/sandboxes/$ID/processes/chatty/wait" >/dev/null
	curl -s -N --max-time 0.2 --unix-socket "$SOCK" "http://x/v1/sandboxes/$ID/events?follow=1" >/dev/null
done
curl -s --max-time 0.3 --unix-socket "$SOCK" -X POST "http://x/v1/sandboxes/$ID/exec" -d '{"argv":["sleep","30"],"tag":"fg"}' >/dev/null
api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"exec python3 -c \"import socket,time\ns=socket.socket(); s.bind((\u0027127.0.0.1\u0027, 8002)); s.listen(4)\nwhile True: c,_=s.accept(); time.sleep(5)\"","background":true,"tag":"slowweb"}' >/dev/null
sleep 0.3
curl -s --max-time 0.3 --unix-socket "$SOCK" "http://x/v1/sandboxes/$ID/ports/8002/" >/dev/null
r=$(api POST "/v1/sandboxes/$ID/processes/chatty/wait?timeout_s=10")
expect_eq "after clients went away mid-stream, the process still ends normally" "exited 0" \
	"$(j "$(body_of "$r")" 'd["state"]+" "+str(d["result"]["exit_code"])')"
r=$(api GET "/v1/sandboxes/$ID/processes/fg")
expect_eq "a foreground exec whose client left is killed" "killed" \
	"$(j "$(body_of "$r")" 'd["result"]["reason"]')"
api POST "/v1/sandboxes/$ID/processes/slowweb/signal" -d '{"signal":"KILL"}' >/dev/null
r=$(api GET /healthz)
expect_eq "paddockd is still healthy" 200 "$(status_of "$r")"

# ---- events and metrics ----
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"unshare -r true; python3 -c \"import socket; socket.socket(40, 1)\""}')
expect_eq "a command's refused calls are counted in its result" 2 \
	"$(j "$(body_of "$r")" 'd["result"]["seccomp_denied"]')"
r=$(api GET "/v1/sandboxes/$ID/events")
expect_eq "...and each is a seccomp.denied event of the sandbox" "unshare socket" \
	"$(body_of "$r" | $PY -c 'import json,sys; print(" ".join(d["syscall"] for d in map(json.loads, filter(str.strip, sys.stdin)) if d["event"] == "seccomp.denied"))')"
r=$(api GET "/v1/sandboxes/$ID/events")
expect_match "events: created, exec started and exited" "sandbox.created.*exec.started.*exec.exited" \
	"$(body_of "$r" | $PY -c 'import json,sys; print(" ".join(json.loads(l)["event"] for l in sys.stdin if l.strip()))')"
r=$(api GET /metrics)
expect_match "metrics: live sandboxes" "paddock_sandboxes_live 1" "$r"
expect_match "metrics: exec histogram" "paddock_exec_seconds_count [1-9]" "$r"
expect_match "metrics: the sandbox's refused calls" "paddock_seccomp_denied_total\{sandbox=\"$ID\"\} 2" "$r"

# ---- kill -9 and restart: the sandbox and its processes are adopted ----
api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"i=0; while [ $i -lt 20 ]; do echo tick $i; i=$((i+1)); sleep 0.1; done","background":true,"tag":"ticker"}' >/dev/null
sleep 0.3
# this test's live (not zombie) inits, known while paddockd still held them
inits() { daemon_inits; }
inits >/dev/null
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
expect_eq "kill -9: the sandbox's init lives on" 1 "$(inits)"
start_daemon || not_ok "paddockd restarts"
r=$(api GET "/v1/sandboxes/$ID")
expect_eq "restart: the sandbox is back, running" "200 running" "$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
r=$(api GET "/v1/sandboxes/$ID/processes/ticker")
expect_eq "restart: its process still runs" running "$(j "$(body_of "$r")" 'd["state"]')"
r=$(api GET "/v1/sandboxes/$ID/ports/8000/index.html")
expect_eq "restart: its server still answers" $'served-from-inside\n\n200' "$r"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"cmd":"cat /workspace/l1b >/dev/null 2>&1; ls /workspace"}')
expect_match "restart: its files are intact" "d ir" "$(j "$(body_of "$r")" 'd["stdout"]')"
r=$(api POST "/v1/sandboxes/$ID/processes/ticker/wait?timeout_s=60")
expect_eq "restart: the adopted process ends with its report" "exited 0" \
	"$(j "$(body_of "$r")" 'd["state"]+" "+str(d["result"]["exit_code"])')"

# ---- TTL ----
r=$(api POST /v1/sandboxes -d '{"ttl_s":1}')
ID2=$(j "$(body_of "$r")" 'd["id"]')
r=$(api POST "/v1/sandboxes/$ID2/ttl" -d '{"ttl_s":0}')
expect_eq "ttl: 0 is refused" 400 "$(status_of "$r")"
r=$(api POST /v1/sandboxes -d '{"idle_timeout_s":1}')
ID3=$(j "$(body_of "$r")" 'd["id"]')
r=$(api POST /v1/sandboxes -d '{"idle_timeout_s":1}')
ID4=$(j "$(body_of "$r")" 'd["id"]')
api POST "/v1/sandboxes/$ID4/exec" -d '{"argv":["sleep","60"],"background":true}' >/dev/null
sleep 2.5
r=$(api GET "/v1/sandboxes/$ID2")
expect_eq "ttl: expired sandbox is gone" 404 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$ID3")
expect_eq "idle timeout: an unused sandbox is gone" 404 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$ID4")
expect_eq "idle timeout: a sandbox running a command is not idle" 200 "$(status_of "$r")"
api DELETE "/v1/sandboxes/$ID4" >/dev/null
r=$(api POST "/v1/sandboxes/$ID/ttl" -d '{"ttl_s":1200}')
expect_eq "ttl: extended" "200 1200" "$(status_of "$r") $(j "$(body_of "$r")" 'd["ttl_s"]')"

# ---- SIGTERM leaves sandboxes for the next start ----
stop_daemon
expect_eq "SIGTERM: paddockd exits 0" 0 "$?"
start_daemon || not_ok "paddockd restarts after SIGTERM"
r=$(api POST "/v1/sandboxes/$ID/exec" -d '{"argv":["echo","still here"]}')
expect_eq "SIGTERM: the sandbox survived" "still here" "$(j "$(body_of "$r")" 'd["stdout"].strip()')"

# ---- tenants over TCP (settings from a config file) ----
PORT=$((20000 + RANDOM % 20000))
printf '# tenant token\nalice aaaaaaaaaaaaaaaaaaaaaaaa\nbob bbbbbbbbbbbbbbbbbbbbbbbb\n' >"$T_TMP/tokens"
stop_daemon
echo '{"listen":"127.0.0.1:1","bogus":true}' >"$T_TMP/bad.json"
"$PADDOCKD" --config "$T_TMP/bad.json" 2>"$T_TMP/err"
expect_eq "config: an unknown key is refused" 2 "$?"
expect_match "config: the error names it" "'bogus'" "$(cat "$T_TMP/err")"
mkdir -p "$T_TMP/shared/ok" && chmod 777 "$T_TMP/shared/ok" && give_to_user "$T_TMP/shared/ok"
ln -s /etc "$T_TMP/shared/ok/etc-link"
printf '{"listen":"127.0.0.1:%d","tokens":"%s","allow_host_paths":["%s"]}\n' \
	"$PORT" "$T_TMP/tokens" "$T_TMP/shared" >"$T_TMP/config.json"
start_daemon --config "$T_TMP/config.json" --socket "$SOCK"
tcp() { local m=$1 p=$2; shift 2; curl -s -X "$m" -w '\n%{http_code}' "http://127.0.0.1:$PORT$p" "$@"; }
r=$(tcp GET /v1/sandboxes)
expect_eq "tcp: no token: 401" 401 "$(status_of "$r")"
r=$(tcp GET /v1/sandboxes -H 'Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaab')
expect_eq "tcp: wrong token: 401" 401 "$(status_of "$r")"
r=$(tcp POST /v1/sandboxes -H 'Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaa' -d '{}')
IDA=$(j "$(body_of "$r")" 'd["id"]')
expect_eq "tcp: alice creates" 201 "$(status_of "$r")"
r=$(tcp GET "/v1/sandboxes/$IDA" -H 'Authorization: Bearer bbbbbbbbbbbbbbbbbbbbbbbb')
expect_eq "tcp: bob cannot see alice's sandbox" 404 "$(status_of "$r")"
r=$(tcp DELETE "/v1/sandboxes/$IDA" -H 'Authorization: Bearer bbbbbbbbbbbbbbbbbbbbbbbb')
expect_eq "tcp: nor delete it" 404 "$(status_of "$r")"
r=$(tcp GET /v1/sandboxes -H 'Authorization: Bearer bbbbbbbbbbbbbbbbbbbbbbbb')
expect_eq "tcp: bob lists none" 0 "$(j "$(body_of "$r")" 'len(d["sandboxes"])')"
r=$(tcp GET /metrics -H 'Authorization: Bearer bbbbbbbbbbbbbbbbbbbbbbbb')
expect_eq "tcp: bob's metrics answer" 200 "$(status_of "$r")"
expect_no_match "tcp: bob's metrics name none of alice's sandboxes" "$IDA" "$r"
r=$(tcp GET /metrics -H 'Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaa')
expect_match "tcp: alice's metrics have her sandbox's series" \
	"paddock_seccomp_denied_total\{sandbox=\"$IDA\"\}" "$r"
r=$(api GET "/v1/sandboxes/$IDA")
expect_eq "unix socket (tenant local) cannot see alice's either" 404 "$(status_of "$r")"
# /healthz: a tenant counts its own sandboxes, the operator (unix socket) every one
r=$(tcp GET /healthz -H 'Authorization: Bearer bbbbbbbbbbbbbbbbbbbbbbbb')
expect_eq "tcp: bob's /healthz counts none of alice's sandboxes" "200 ok 0" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["status"]+" "+str(d["sandboxes"])')"
r=$(tcp GET /healthz -H 'Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaa')
expect_eq "tcp: alice's /healthz counts hers" "200 1" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["sandboxes"]')"
r=$(api GET /healthz)
expect_eq "unix socket's /healthz counts every tenant's (alice's too)" "200 yes" \
	"$(status_of "$r") $(j "$(body_of "$r")" '"yes" if d["sandboxes"] >= 1 else "no"')"
r=$(tcp DELETE "/v1/sandboxes/$IDA" -H 'Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaa')
expect_eq "tcp: alice deletes hers" 204 "$(status_of "$r")"
# a TCP tenant names host paths only under --allow-host-path, checked once resolved
A='Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaa'
r=$(tcp POST /v1/sandboxes -H "$A" -d '{"workspace":"/etc"}')
expect_eq "tcp: workspace /etc is refused, naming the field" "403 workspace" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(tcp POST /v1/sandboxes -H "$A" -d "{\"binds\":[{\"source\":\"$T_TMP/shared/ok/etc-link\",\"target\":\"/mnt\"}]}")
expect_eq "tcp: a symlink out of an allowed directory is refused" "403 binds[0].source" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(tcp POST /v1/sandboxes -H "$A" -d "{\"rootfs\":\"$T_TMP/shared/../..\"}")
expect_eq "tcp: .. out of an allowed directory is refused" 403 "$(status_of "$r")"
r=$(tcp POST /v1/sandboxes -H "$A" -d "{\"workspace\":\"$T_TMP/shared/ok\"}")
expect_eq "tcp: a workspace inside an allowed directory is fine" 201 "$(status_of "$r")"
IDW=$(j "$(body_of "$r")" 'd["id"]')
tcp DELETE "/v1/sandboxes/$IDW" -H "$A" >/dev/null

# ---- delete leaves nothing ----
r=$(api DELETE "/v1/sandboxes/$ID")
expect_eq "delete: 204" 204 "$(status_of "$r")"
r=$(api GET "/v1/sandboxes/$ID")
expect_eq "deleted: 404" 404 "$(status_of "$r")"

# a crash between a sandbox's launch and its record: at the next start, the sandbox that no
# record names is ended, and a reconnect socket nobody listens on is removed
r=$(api POST /v1/sandboxes -d '{}')
IDO=$(j "$(body_of "$r")" 'd["id"]')
inits >/dev/null
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
$PY -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("delete from sandboxes where id=?", (sys.argv[2],)); c.commit()' \
	"$STATE/paddockd.db" "$IDO"
$PY -c 'import socket,sys; socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).bind(sys.argv[1])' \
	"$STATE/s/sb_stalestale22"
expect_eq "an unrecorded sandbox's init lives on after kill -9" 1 "$(inits)"
start_daemon
for _ in $(seq 40); do [ "$(inits)" = 0 ] && break; sleep 0.05; done
expect_eq "restart: the sandbox no record names is ended" 0 "$(inits)"
expect_eq "restart: no stale reconnect socket is left" "" "$(ls "$STATE/s")"
stop_daemon
expect_eq "no sandbox process is left" 0 "$(inits)"
expect_eq "no reconnect socket is left" "" "$(ls "$STATE/s")"
finish
