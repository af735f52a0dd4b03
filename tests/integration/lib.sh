#!/bin/bash
# Shared by the integration tests: assertions and the paddock binary under test.
# Each test is a bash script that sources this file, calls `check` / `expect_*`, and ends
# with `finish`. Output is TAP, so meson shows each check.
set -u

PADDOCK=${PADDOCK:?PADDOCK must point at the paddock binary}
TRY_SYSCALL=${TRY_SYSCALL:-}
T_N=0
T_FAILED=0
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/pdtest.XXXXXX")
chmod 755 "$T_TMP"
trap 'rm -rf "$T_TMP"' EXIT

MODE=root
[ "$(id -u)" -ne 0 ] && MODE=rootless

# As root, a writable host directory given to a sandbox must belong to an unprivileged user
# (what the sandbox writes there comes out as that user's; root's is refused): the suite's
# unprivileged uid stands in for that user. give_to_user DIR...: chown -R to it, as root.
TEST_USER=${PADDOCK_TEST_UID:-4242}
give_to_user() { [ "$(id -u)" -ne 0 ] || chown -R "$TEST_USER:$TEST_USER" "$@"; }

ok() { T_N=$((T_N + 1)); echo "ok $T_N - $*"; }
not_ok() { T_N=$((T_N + 1)); T_FAILED=$((T_FAILED + 1)); echo "not ok $T_N - $*"; }
diag() { printf '# %s\n' "$@"; }

# start_daemon [ARGS...]: paddockd on $SOCK with state in $STATE (and DAEMON_ARGS, an array
# a test may set), its stderr in $T_TMP/daemon.log; DPID is its pid. Fails with the log when
# it does not answer /healthz within 5 s. stop_daemon: SIGTERM, and wait for it.
DPID=
start_daemon() {
	"${PADDOCKD:?PADDOCKD must point at paddockd}" --socket "$SOCK" --state-dir "$STATE" \
		${DAEMON_ARGS[@]+"${DAEMON_ARGS[@]}"} "$@" 2>>"$T_TMP/daemon.log" &
	DPID=$!
	for _ in $(seq 100); do
		[ -S "$SOCK" ] && curl -s --unix-socket "$SOCK" -o /dev/null http://x/healthz && return 0
		sleep 0.05
	done
	diag "paddockd did not start:" "$(cat "$T_TMP/daemon.log")"
	return 1
}
# daemon_inits: how many of this test's sandbox inits are alive: the children of its
# paddockds (a command line naming $T_TMP/) and those seen so before (a claimed sandbox's init
# outlives a kill -9 of paddockd), known by pid and start time in $T_TMP/inits.known. (An
# init is a small executable of its own, "paddock-init FD": its command line names nothing.)
daemon_inits() {
	/usr/bin/python3 - "$T_TMP/" "$T_TMP/inits.known" <<'PY'
import os, sys

mark, path = sys.argv[1], sys.argv[2]
try:
    known = set(open(path).read().split())
except OSError:
    known = set()
procs = {}
for p in os.listdir("/proc"):
    try:
        stat = open(f"/proc/{p}/stat").read()
        cmd = open(f"/proc/{p}/cmdline", "rb").read().decode(errors="replace")
    except (OSError, ValueError):
        continue
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    f = stat[stat.rindex(")") + 2 :].split()
    procs[p] = (comm, f[0], f[1], f[19], cmd)  # state, ppid, start time (field 22)
ours = {p for p, (comm, _, _, _, cmd) in procs.items() if comm == "paddockd" and mark in cmd}
alive = set()
for p, (comm, state, ppid, start, _) in procs.items():
    key = f"{p}:{start}"
    if comm == "paddock-init" and state != "Z" and (ppid in ours or key in known):
        alive.add(key)
open(path, "w").write("\n".join(sorted(known | alive)) + "\n")
print(len(alive))
PY
}
# client_checks CMD...: runs a client (in $T_TMP, stderr to $T_TMP/client.log) whose lines
# "ok - DESC" / "not ok - DESC" become this test's checks ("# ..." is passed on, anything else
# is a diagnostic), then checks that it ran to its end.
client_checks() {
	local line status=none
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) ok "${line#ok - }" ;;
		"not ok - "*) not_ok "${line#not ok - }" ;;
		"client-exit "*) status=${line#client-exit } ;;
		"#"*) echo "$line" ;;
		*) diag "$line" ;;
		esac
	done < <(
		cd "$T_TMP" && "$@" 2>"$T_TMP/client.log"
		echo "client-exit $?"
	)
	expect_eq "$(basename "${*: -1}") ran to its end" 0 "$status"
}
# e2b_port: the port of this test's paddockd --e2b listener, read from its log (empty after
# 5 s without it)
e2b_port() {
	local port=
	for _ in $(seq 100); do
		port=$(sed -n 's/^paddockd: e2b on 127\.0\.0\.1:\([0-9][0-9]*\) (domain [^)]*)$/\1/p' \
			"$T_TMP/daemon.log" | tail -n 1)
		[ -n "$port" ] && break
		sleep 0.05
	done
	echo "$port"
}
stop_daemon() {
	kill -TERM "$DPID" 2>/dev/null
	wait "$DPID"
}

# ---- paddockd's API on $SOCK, for the tests that drive it with curl ----
# api METHOD PATH [CURL ARGS...]: the answer's body, then its status on a line of its own
api() {
	local m=$1 p=$2
	shift 2
	curl -s --unix-socket "$SOCK" -X "$m" -w '\n%{http_code}' "http://x$p" "$@"
}
status_of() { tail -n1 <<<"$1"; }
body_of() { sed '$d' <<<"$1"; }
# j JSON EXPR: a python expression on the parsed JSON `d` (nothing when JSON does not parse)
j() { /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null; }
# metric NAME: its value in paddockd's /metrics
metric() { curl -s --unix-socket "$SOCK" http://x/metrics | awk -v k="$1" '$1 == k { print $2 }'; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status"; }
# create SPEC_JSON: a new sandbox's id (a diagnostic, and failure, unless paddockd says 201)
create() {
	local r
	r=$(api POST /v1/sandboxes -d "$1")
	[ "$(status_of "$r")" = 201 ] || { diag "create $1:" "$r"; return 1; }
	j "$(body_of "$r")" 'd["id"]'
}
# sh_in ID SCRIPT: the script's stdout, run in sandbox ID
sh_in() {
	local body
	body=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"cmd": sys.argv[1]}))' "$2")
	j "$(body_of "$(api POST "/v1/sandboxes/$1/exec" -d "$body")")" 'd["stdout"]'
}
# stop_all: deletes every sandbox (waiting for each), then stops paddockd
stop_all() {
	local id
	for id in $(j "$(body_of "$(api GET /v1/sandboxes)")" '" ".join(s["id"] for s in d["sandboxes"])'); do
		api DELETE "/v1/sandboxes/$id?wait=1" >/dev/null
	done
	kill -TERM "$DPID"
	wait "$DPID"
	DPID=
}

# idle_connections PORT STEP... >FILE &: connections to 127.0.0.1:PORT that never send a
# request head, for the checks of paddockd's connection caps and header deadline. A STEP is
# PEER:N (N connections from 127.0.0.PEER; one refused at connect is not counted) or
# wait:FILE (until FILE exists). Prints "opened N" (so far) before each wait, "all N" once
# every step is done, then "closed N": how many of them paddockd closed within 30 s.
idle_connections() {
	/usr/bin/python3 - "$@" <<'PY'
import os, socket, sys, time
port = int(sys.argv[1])
conns = []
for step in sys.argv[2:]:
    kind, _, arg = step.partition(":")
    if kind == "wait":
        print("opened", len(conns), flush=True)
        while not os.path.exists(arg):
            time.sleep(0.05)
        continue
    for _ in range(int(arg)):
        try:
            conns.append(socket.create_connection(("127.0.0.1", port), timeout=5,
                                                  source_address=("127.0.0." + kind, 0)))
        except OSError:
            pass
print("all", len(conns), flush=True)
deadline, closed = time.time() + 30, set()
while time.time() < deadline and len(closed) < len(conns):
    for i, c in enumerate(conns):
        if i in closed:
            continue
        c.setblocking(False)
        try:
            if c.recv(1) == b"":
                closed.add(i)
        except BlockingIOError:
            pass
        except OSError:
            closed.add(i)
    time.sleep(0.2)
print("closed", len(closed), flush=True)
PY
}
# flood PORT HEAD: four clients at once each send HEAD (a request head, with \r\n escapes)
# to 127.0.0.1:PORT and then 64 MiB of its body, or what paddockd takes of it before it closes
# the connection: what a gate must refuse at the head, before the body is read
flood() {
	/usr/bin/python3 - "$@" <<'PY'
import socket, sys, threading
port, head = int(sys.argv[1]), sys.argv[2].encode().decode("unicode_escape").encode("latin-1")
def one():
    c = socket.create_connection(("127.0.0.1", port), timeout=30)
    c.sendall(head)
    chunk, sent = b"\0" * (1 << 20), 0
    try:
        while sent < (64 << 20):
            c.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    c.close()
t = [threading.Thread(target=one) for _ in range(4)]
for x in t: x.start()
for x in t: x.join()
PY
}
# await_line FILE PREFIX: until FILE has a line starting with PREFIX (10 s at most), and then
# half a second more for paddockd to act on what the line reports
await_line() {
	for _ in $(seq 100); do grep -q "^$2" "$1" && break; sleep 0.1; done
	sleep 0.5
}
# expect_idle_closed PID FILE: the unix socket still answers while idle_connections (PID,
# printing to FILE) holds its connections, and every one of them is closed by paddockd
expect_idle_closed() {
	local r
	r=$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' http://x/healthz)
	expect_eq "...and the unix socket still answers" 200 "$r"
	wait "$1"
	expect_eq "every connection that sends no head is closed by paddockd" \
		"$(grep '^all' "$2" | cut -d' ' -f2)" "$(grep '^closed' "$2" | cut -d' ' -f2)"
}

# expect_eq DESC EXPECTED ACTUAL
expect_eq() {
	if [ "$2" == "$3" ]; then ok "$1"; else
		not_ok "$1"
		diag "expected: $(printf %q "$2")" "     got: $(printf %q "$3")"
	fi
}

# expect_match DESC REGEX ACTUAL
expect_match() {
	if [[ "$3" =~ $2 ]]; then ok "$1"; else
		not_ok "$1"
		diag "expected to match: $2" "got: $(printf %q "$3")"
	fi
}

expect_no_match() {
	if [[ "$3" =~ $2 ]]; then
		not_ok "$1"
		diag "expected not to match: $2" "got: $(printf %q "$3")"
	else ok "$1"; fi
}

# run_sb OUTVAR STATUSVAR [paddock run args...]: captures stdout+stderr and status
run_sb() {
	local __out=$1 __st=$2
	shift 2
	local o s
	o=$("$PADDOCK" run "$@" </dev/null 2>&1)
	s=$?
	printf -v "$__out" '%s' "$o"
	printf -v "$__st" '%s' "$s"
}

# own_pids REGEX: the pids of this test's processes (below its subreaper, run.sh: whatever
# detached from the test is there too) whose command line matches REGEX; never another
# suite's or a developer's. Run by hand, without a subreaper: those below this shell.
own_pids() {
	# the pattern goes by the environment: in argv it would match this very python
	OWN_PIDS_RE="$1" /usr/bin/python3 - "$$" <<'PY'
import os, re, sys

pattern, shell = re.compile(os.environ["OWN_PIDS_RE"]), sys.argv[1]
procs = {}
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{p}/stat").read()
        cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").strip()
    except (OSError, ValueError):
        continue
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    f = stat[stat.rindex(")") + 2 :].split()
    procs[p] = (comm, f[0], f[1], cmd.decode(errors="replace"))
root = shell
p = shell
while p in procs and procs[p][2] != "0":
    if procs[p][0] == "subreaper":
        root = p
        break
    p = procs[p][2]
def below(p):
    seen = set()
    while p in procs and p not in seen:
        if p == root:
            return True
        seen.add(p)
        p = procs[p][2]
    return False
for p, (comm, state, ppid, cmd) in sorted(procs.items(), key=lambda x: int(x[0])):
    if state != "Z" and p != root and p != str(os.getpid()) and below(p) and pattern.search(cmd):
        print(p)
PY
}

finish() {
	echo "1..$T_N"
	[ "$T_FAILED" -eq 0 ]
	exit $?
}

# A test that needs something the machine may lack (node, an npm package): skipped, or a
# failure where the suite must run everything (PADDOCK_TEST_MUST_WORK=1, as in CI).
unavailable() {
	if [ "${PADDOCK_TEST_MUST_WORK:-0}" = 1 ]; then
		not_ok "$1"
		finish
	fi
	echo "1..0 # SKIP $1"
	exit 77
}

# need_npm_package DIR NAME: DIR/node_modules holds NAME at the version DIR's lock file says
need_npm_package() {
	local want have
	want=$(node -p 'require(process.argv[1]).packages["node_modules/" + process.argv[2]].version' \
		"$1/package-lock.json" "$2" 2>/dev/null)
	have=$(node -p 'require(process.argv[1]).version' "$1/node_modules/$2/package.json" 2>/dev/null)
	[ -n "$have" ] || unavailable "$2 is not installed: npm ci in $1 (dev/test does it)"
	[ "$have" = "$want" ] || unavailable "$2 $have is installed, the lock file says $want: npm ci in $1"
}
