#!/bin/bash
# libpaddock's lifecycle tests (lifecycle.c), as this mode's user, and `paddock gc`.
. "$(dirname "$0")/lib.sh"
if "$LIFECYCLE"; then ok "lifecycle"; else not_ok "lifecycle"; fi

"$PADDOCK" run -- true
out=$("$PADDOCK" gc)
expect_match "paddock gc reports what it removed" "^removed [0-9]+ idle cgroups?$" "$out"
if [ "$MODE" = root ]; then
	# idle: no live sandbox holds its slot (another suite's, or a developer's paddockd, may)
	left=$(/usr/bin/python3 - <<'PY'
import fcntl, glob, os
idle = 0
for d in glob.glob("/sys/fs/cgroup/*/paddock/*") + glob.glob("/sys/fs/cgroup/paddock/*"):
    slot = os.path.basename(d)
    if not os.path.isdir(d) or not slot.isdigit():
        continue
    try:
        fd = os.open(f"/run/paddock/idmap/{slot}", os.O_RDWR)
    except OSError:
        idle += 1
        continue
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        idle += 1  # nobody holds it
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
print(idle)
PY
)
	expect_eq "no idle pool cgroup is left after gc" 0 "$left"
else
	expect_eq "rootless has no pool to remove" "removed 0 idle cgroups" "$out"
fi
out=$("$PADDOCK" gc extra 2>&1)
expect_match "gc refuses arguments" "unexpected argument 'extra'" "$out"
finish
