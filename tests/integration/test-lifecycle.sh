#!/bin/bash
# libpaddock's lifecycle tests (lifecycle.c), as this mode's user, and `paddock gc`.
. "$(dirname "$0")/lib.sh"
if "$LIFECYCLE"; then ok "lifecycle"; else not_ok "lifecycle"; fi

"$PADDOCK" run -- true
out=$("$PADDOCK" gc)
expect_match "paddock gc reports what it removed" "^removed [0-9]+ idle cgroups?$" "$out"
if [ "$MODE" = root ]; then
	left=$(find /sys/fs/cgroup -mindepth 3 -maxdepth 3 -path '*/paddock/*' -type d 2>/dev/null | wc -l)
	expect_eq "no idle pool cgroup is left after gc" 0 "$left"
else
	expect_eq "rootless has no pool to remove" "removed 0 idle cgroups" "$out"
fi
out=$("$PADDOCK" gc extra 2>&1)
expect_match "gc refuses arguments" "unexpected argument 'extra'" "$out"
finish
