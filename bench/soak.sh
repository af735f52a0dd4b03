#!/bin/bash
# A bounded soak of paddockd's promises across crashes, run by hand (as root):
#   bench/soak.sh [CLIENTS] [SECONDS] [KILL_EVERY_S]      (default 8 300 60)
# CLIENTS loop create (with an Idempotency-Key, retried with the same key until an answer
# comes), exec, and delete (retried until 204 or 404), keeping a ledger of what paddockd
# acknowledged. paddockd is killed with SIGKILL every KILL_EVERY_S and started again; its
# state directory is a small tmpfs, filled up for 20 s in the middle of the run. At the end
# (after one more kill -9): every acknowledged sandbox must be there and nothing else, and
# once all are deleted and paddockd stopped, no process, reconnect socket or mount of the
# run is left. Prints the figures; exits 1 when a promise was broken.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${PADDOCK_BUILD_DIR:-$top/build}
clients=${1:-8}
seconds=${2:-300}
every=${3:-60}
[ "$(id -u)" -eq 0 ] || { echo "bench/soak.sh: run as root (it mounts the state tmpfs)" >&2; exit 2; }
if [ -z "${SOAK_REAPED:-}" ]; then
	# below a child subreaper: every init a killed paddockd leaves stays below, to be counted
	[ -f "$build/build.ninja" ] || meson setup "$build" "$top" >/dev/null
	ninja -C "$build" src/daemon/paddockd tests/subreaper >/dev/null || exit 1
	leaks=$(mktemp /tmp/pdsoak-leaks.XXXXXX)
	SOAK_REAPED=1 "$build/tests/subreaper" 5000 "$leaks" "$0" "$@"
	status=$?
	if [ -s "$leaks" ]; then
		echo "LEAK: processes left below the soak:"
		sed 's/^/  /' "$leaks"
		status=1
	fi
	rm -f "$leaks"
	exit $status
fi
ws=$(mktemp -d /tmp/pdsoak.XXXXXX)
mkdir "$ws/fs"
mount -t tmpfs -o size=48m,mode=0700 tmpfs "$ws/fs"
trap 'umount "$ws/fs" 2>/dev/null; rm -rf "$ws"' EXIT
echo "# $(uname -r), $(nproc) cores: $clients clients x ${seconds} s, kill -9 every ${every} s," \
	"state on a 48 MiB tmpfs filled for 20 s at half time"
python3 - "$build/src/daemon/paddockd" "$ws" "$clients" "$seconds" "$every" <<'PY'
import http.client, json, os, random, signal, socket, subprocess, sys, threading, time

paddockd, ws, clients, seconds, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
sock, state = f"{ws}/sock", f"{ws}/fs/st"
log = open(f"{ws}/daemon.log", "ab")
lock = threading.Lock()
fig = dict(kills=0, creates=0, replays=0, create_retries=0, full_503=0, other_errors=0,
           deletes=0, delete_retries=0, execs_ok=0, execs_failed=0)
errors = []

class Unix(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(self.timeout)
        self.sock.connect(sock)

def api(method, path, body=None, headers=None, timeout=30):
    c = Unix("x", timeout=timeout)
    try:
        c.request(method, path, json.dumps(body) if body is not None else None, headers or {})
        r = c.getresponse()
        data = r.read()
        try:
            js = json.loads(data) if data else None
        except ValueError:
            js = None
        return r.status, js, dict(r.getheaders())
    except OSError:
        return None, None, {}
    finally:
        c.close()

daemon = None
def start():
    global daemon
    daemon = subprocess.Popen([paddockd, "--socket", sock, "--state-dir", state], stderr=log)
    for _ in range(200):
        if api("GET", "/healthz", timeout=2)[0] == 200:
            return
        time.sleep(0.05)
    raise SystemExit("paddockd did not start")

def kill9():
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    with lock:
        fig["kills"] += 1

stop = threading.Event()

def client(n):
    mine, i = [], 0
    while not stop.is_set():
        i += 1
        key, body = f"soak-{n}-{i}", {"ttl_s": 7200, "metadata": {"client": str(n)}}
        sid = None
        while sid is None:
            st, js, h = api("POST", "/v1/sandboxes", body, {"Idempotency-Key": key})
            if st == 201:
                sid = js["id"]
                with lock:
                    fig["creates"] += 1
                    fig["replays"] += h.get("Idempotent-Replayed") == "true"
            elif st in (None, 503):
                with lock:
                    fig["create_retries"] += 1
                    fig["full_503"] += st == 503
                time.sleep(0.2)
            else:
                with lock:
                    fig["other_errors"] += 1
                    errors.append(f"create {key}: {st} {js}")
                break
        if sid is None:
            continue
        mine.append(sid)
        st, js, _ = api("POST", f"/v1/sandboxes/{sid}/exec", {"argv": ["echo", key]})
        with lock:
            if st == 200 and js and js.get("stdout") == key + "\n":
                fig["execs_ok"] += 1
            else:
                fig["execs_failed"] += 1  # paddockd killed meanwhile: expected now and then
        # keep a few live: delete one (until paddockd answers 204, or 404: it was deleted)
        if len(mine) > 6 or random.random() < 0.4:
            victim = mine.pop(random.randrange(len(mine)))
            while True:
                st, js, _ = api("DELETE", f"/v1/sandboxes/{victim}")
                if st in (204, 404):
                    with lock:
                        fig["deletes"] += 1
                    break
                with lock:
                    fig["delete_retries"] += 1
                time.sleep(0.2)
    with lock:
        ledger.update(mine)

def fill():
    # the state filesystem full for 20 s: writes fail with ENOSPC
    path = f"{ws}/fs/filler"
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    time.sleep(20)
    os.unlink(path)

ledger = set()
start()
t0 = time.time()
threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
for t in threads:
    t.start()
filled = None
next_kill = t0 + every
while time.time() - t0 < seconds:
    time.sleep(0.5)
    if not filled and time.time() - t0 > seconds / 2:
        filled = threading.Thread(target=fill)
        filled.start()
    if time.time() >= next_kill:
        next_kill += every
        kill9()
        start()
stop.set()
for t in threads:
    t.join()
if filled:
    filled.join()
kill9()
start()
st, js, _ = api("GET", "/v1/sandboxes")
present = {s["id"] for s in (js or {}).get("sandboxes", [])}
running = {s["id"] for s in (js or {}).get("sandboxes", []) if s["state"] == "running"}
missing, extra = ledger - present, present - ledger
rss = int([l.split()[1] for l in open(f"/proc/{daemon.pid}/status") if l.startswith("VmRSS")][0])
for s in present:
    api("DELETE", f"/v1/sandboxes/{s}?wait=1")
daemon.send_signal(signal.SIGTERM)
daemon.wait()
sockets = os.listdir(f"{state}/s")
logsz = sum(os.path.getsize(f"{state}/{f}") for f in os.listdir(state) if f.startswith("events.jsonl"))
dur = time.time() - t0
print(f"duration {dur:.0f} s; kill -9: {fig['kills']}; state filesystem full once for 20 s")
print(f"creates acknowledged {fig['creates']} ({fig['replays']} given again by their Idempotency-Key), "
      f"create retries {fig['create_retries']} (503 {fig['full_503']}), other errors {fig['other_errors']}")
print(f"deletes acknowledged {fig['deletes']} (retries {fig['delete_retries']}); execs {fig['execs_ok']} ok, "
      f"{fig['execs_failed']} cut off by a kill")
print(f"at the end (after a last kill -9): {len(ledger)} acknowledged and not deleted, "
      f"{len(present)} present ({len(running)} running), missing {len(missing)}, extra {len(extra)}")
print(f"after deleting all and SIGTERM: reconnect sockets left {len(sockets)}; paddockd RSS at the end "
      f"{rss} kB; event log {logsz} bytes")
for e in errors[:10]:
    print("error:", e)
ok = not missing and not extra and not sockets and fig["other_errors"] == 0 and len(running) == len(present)
print("RESULT:", "every acknowledged sandbox present, nothing else" if ok else "BROKEN")
sys.exit(0 if ok else 1)
PY
