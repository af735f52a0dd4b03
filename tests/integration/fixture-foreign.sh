#!/bin/bash
# Not a test of its own: test-harness.sh runs it through a nested run.sh and, while it waits,
# makes a process, a mount and a temp file named for paddock that are not this test's (as
# another suite or a developer's paddockd would). Neither this test's checks nor run.sh's
# leak check may count them.
. "$(dirname "$0")/lib.sh"

touch "$FIXTURE_DIR/started"
for _ in $(seq 200); do [ -e "$FIXTURE_DIR/go" ] && break; sleep 0.05; done
sleep "7$FIXTURE_MARK" &
mine=$!
expect_eq "own_pids: this test's process, not another's of the same command line" "$mine" \
	"$(own_pids "^sleep [79]$FIXTURE_MARK$")"
kill "$mine"
wait "$mine" 2>/dev/null
finish
