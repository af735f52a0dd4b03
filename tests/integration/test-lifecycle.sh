#!/bin/bash
# libpaddock's lifecycle tests (lifecycle.c), as this mode's user, and `paddock gc`.
. "$(dirname "$0")/lib.sh"
if "$LIFECYCLE"; then ok "lifecycle"; else not_ok "lifecycle"; fi

# this test's own sandbox: its id slot (as root) is the one whose idle cgroup gc must remove
"$PADDOCK" run --log-format json -v -- true 2>"$T_TMP/run.log"
out=$("$PADDOCK" gc)
expect_match "paddock gc reports what it removed" "^removed [0-9]+ idle cgroups?$" "$out"
if [ "$MODE" = root ]; then
	# idle: no live sandbox holds its slot (another suite's may have taken it since)
	cat >"$T_TMP/left.py" <<'PY'
import fcntl, json, os, sys
base, size = 0x60000000, 65536
slot = None
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "sandbox.created" and "uid_base" in e:
        slot = (e["uid_base"] - base) // size
if slot is None:
    print("no slot")
    sys.exit()
# the hierarchies paddock uses (v1: memory, pids, cpu, cpuacct; or v2): a freezer or other
# hierarchy's directory there is not this paddock's to remove
v1 = ("memory", "pids", "cpu", "cpuacct", "cpu,cpuacct")
dirs = {os.path.realpath(d) for d in [f"/sys/fs/cgroup/{h}/paddock/{slot}" for h in v1] +
        [f"/sys/fs/cgroup/paddock/{slot}"] if os.path.isdir(d)}
held = False
try:
    fd = os.open(f"/run/paddock/idmap/{slot}", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held = True
    os.close(fd)
except OSError:
    pass
print(0 if held else len(dirs))
PY
	# another suite's sandbox may have held the slot while gc ran, and gone since: gc again
	for _ in 1 2 3; do
		left=$(/usr/bin/python3 "$T_TMP/left.py" "$T_TMP/run.log")
		[ "$left" = 0 ] && break
		"$PADDOCK" gc >/dev/null
	done
	expect_eq "gc removed this test's idle cgroup" 0 "$left"
else
	expect_eq "rootless has no pool to remove" "removed 0 idle cgroups" "$out"
fi
out=$("$PADDOCK" gc extra 2>&1)
expect_match "gc refuses arguments" "unexpected argument 'extra'" "$out"
finish
