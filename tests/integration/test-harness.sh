#!/bin/bash
# The harness judges a test on what is its own: a nested run.sh runs fixture-foreign.sh while
# this test makes, outside it, a process with the same command line, a mount and a temp file
# named for paddock (another suite's, as on a shared machine). The fixture's own_pids() must
# not see that process, and run.sh's leak check must find nothing left behind.
. "$(dirname "$0")/lib.sh"

if [ "$MODE" != root ]; then
	echo "1..0 # SKIP the harness is checked once, as root (it mounts a tmpfs)"
	exit 77
fi
src=${PADDOCK_SOURCE_DIR:?PADDOCK_SOURCE_DIR must point at the source tree}
export FIXTURE_DIR=$T_TMP/fx FIXTURE_MARK=$((RANDOM + 10000))
mkdir "$FIXTURE_DIR"
bash "$src/tests/integration/run.sh" root fixture-foreign.sh >"$T_TMP/inner.out" 2>&1 &
inner=$!
for _ in $(seq 200); do [ -e "$FIXTURE_DIR/started" ] && break; sleep 0.05; done
# another suite's doings, meanwhile
sleep "9$FIXTURE_MARK" &
foreign=$!
mkdir "$T_TMP/mnt"
mount -t tmpfs -o size=1m tmpfs "$T_TMP/mnt"
touch "/tmp/paddock-foreign.$FIXTURE_MARK"
touch "$FIXTURE_DIR/go"
wait "$inner"
status=$?
kill "$foreign"
wait "$foreign" 2>/dev/null
umount "$T_TMP/mnt"
rm -f "/tmp/paddock-foreign.$FIXTURE_MARK"
expect_eq "the fixture passes, whatever else runs on the machine" 0 "$status"
expect_match "run.sh finds nothing of the fixture's left behind" "leak check: nothing left behind" \
	"$(cat "$T_TMP/inner.out")"
[ "$T_FAILED" -gt 0 ] && sed 's/^/# inner: /' "$T_TMP/inner.out"
finish
