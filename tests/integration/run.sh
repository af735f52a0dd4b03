#!/bin/bash
# Runs one integration test as root or rootless, then checks that it left nothing behind.
#   run.sh root|rootless TEST.sh
# Rootless: the binaries are staged in a world-readable temp dir and the test runs under an
# unprivileged uid (PADDOCK_TEST_UID, default 4242) via setpriv. As a non-root invoker,
# "root" cases are skipped and "rootless" ones run as the invoker.
set -u
mode=$1
test=$2
here=$(cd "$(dirname "$0")" && pwd)
build=${PADDOCK_BUILD_DIR:?}
must_work=${PADDOCK_TEST_MUST_WORK:-0}
uid=${PADDOCK_TEST_UID:-4242}

skip() { echo "1..0 # SKIP $*"; exit 77; }

if [ "$mode" = root ] && [ "$(id -u)" -ne 0 ]; then skip "not running as root"; fi

# A test that says "# run.sh: netns" runs inside a network namespace of its own with test
# servers (netns-wrap.sh); making one with addresses needs root, whatever the test's mode.
if grep -q '^# run.sh: netns' "$here/$test" && [ "$(id -u)" -ne 0 ]; then
	skip "needs root to build the test's own network"
fi

stage=$(mktemp -d /tmp/pdstage.XXXXXX)
wrap=()
if grep -q '^# run.sh: netns' "$here/$test"; then
	export EGRESS_DIR="$stage/egress"
	wrap=(unshare --net -- bash "$here/netns-wrap.sh")
fi
cleanup() { rm -rf "$stage"; }
trap cleanup EXIT
chmod 755 "$stage"
cp "$build/src/cli/paddock" "$build/src/cli/paddock-mcp" "$build/src/daemon/paddockd" "$build/src/oci/paddock-oci" \
	"$build/tests/try-syscall" "$stage/"
[ -x "$build/tests/integration/lifecycle" ] && cp "$build/tests/integration/lifecycle" "$stage/"
# the limit probes (tests/helpers), for test-limits.sh
for p in memhog forkbomb cpuburn diskfill; do
	[ -x "$build/tests/$p" ] && cp "$build/tests/$p" "$stage/"
done
cp "$here/lib.sh" "$here/mcp-drive.py" "$here/image-lib.sh" "$here/oci-lib.sh" "$here/mkimage.py" \
	"$here/token-registry.py" "$here/protocols.py" "$here/$test" "$stage/"
# a test's own directory (mcp/ for test-mcp.sh: its client and the npm packages it imports),
# copied so that the unprivileged uid reads it wherever the repo is
own=${test#test-}
[ -d "$here/${own%.sh}" ] && cp -r "$here/${own%.sh}" "$stage/"
# and the directories it names ("# run.sh: stage DIR": another test's client, say)
for dir in $(sed -n 's/^# run.sh: stage \([a-z0-9-]*\)$/\1/p' "$here/$test"); do
	[ -d "$here/$dir" ] && [ ! -d "$stage/$dir" ] && cp -r "$here/$dir" "$stage/"
done
chmod -R a+rX "$stage"
export PADDOCK_OCI="$stage/paddock-oci"
export PADDOCK="$stage/paddock" PADDOCKD="$stage/paddockd" TRY_SYSCALL="$stage/try-syscall" LIFECYCLE="$stage/lifecycle"
export MEMHOG="$stage/memhog" FORKBOMB="$stage/forkbomb" CPUBURN="$stage/cpuburn" DISKFILL="$stage/diskfill"
# the test's temp files (lib.sh's T_TMP, and what paddock makes there) are below its stage
export TMPDIR=$stage/tmp
mkdir -m 1777 "$TMPDIR"

# What a test may leave behind is checked on what is its own, never on the whole host (other
# suites, a second checkout, a developer's paddockd or containers run meanwhile). Processes:
# the test runs below a child subreaper (tests/helpers/subreaper.c), so every process it
# starts, however it detaches (a paddockd, an init whose supervisor was killed), stays
# below; what is there when it ends is its leak. Mounts: those in the host's namespace below
# its stage directory (its temp files are there too). Temp files: what is left in its TMPDIR.
snapshot() {
	{
		awk -v d="$stage/" 'index($5, d) == 1 { print "mount " $5 }' /proc/1/mountinfo
		find "$TMPDIR" -mindepth 1 -maxdepth 1 | sed 's/^/tmp /'
	} 2>/dev/null | sort
}

before=$(snapshot)
reaper=("$build/tests/subreaper" 3000 "$stage/leaks")
if [ "$mode" = rootless ] && [ "$(id -u)" -eq 0 ]; then
	"${reaper[@]}" "${wrap[@]}" setpriv --reuid="$uid" --regid="$uid" --clear-groups --reset-env \
		env EGRESS_DIR="${EGRESS_DIR:-}" PADDOCK_OCI="$PADDOCK_OCI" PADDOCK="$PADDOCK" PADDOCKD="$PADDOCKD" TRY_SYSCALL="$TRY_SYSCALL" LIFECYCLE="$LIFECYCLE" \
		MEMHOG="$MEMHOG" FORKBOMB="$FORKBOMB" CPUBURN="$CPUBURN" DISKFILL="$DISKFILL" \
		PADDOCK_TEST_MUST_WORK="$must_work" PADDOCK_TEST_RUN_ARGS="${PADDOCK_TEST_RUN_ARGS:-}" \
		TMPDIR="$TMPDIR" PATH=/usr/bin:/bin \
		bash "$stage/$test"
	status=$?
else
	"${reaper[@]}" "${wrap[@]}" bash "$stage/$test"
	status=$?
fi
# what the subreaper found below the test when it ended (and killed)
leaks=$(sed 's/^/proc /' "$stage/leaks" 2>/dev/null)

after=$(snapshot)
for _ in 1 2 3 4 5 6 7 8 9 10; do
	[ "$before" = "$after" ] && break
	sleep 0.2
	after=$(snapshot)
done
if [ -n "$leaks" ] || [ "$before" != "$after" ]; then
	echo "not ok - leak check: something was left behind"
	[ -n "$leaks" ] && sed 's/^/# /' <<<"$leaks"
	diff <(echo "$before") <(echo "$after") | sed 's/^/# /'
	exit 1
fi
echo "# leak check: nothing left behind"
exit $status
