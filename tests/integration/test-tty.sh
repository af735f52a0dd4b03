#!/bin/bash
# An interactive caller gets a pty made inside the sandbox, never its own terminal.
. "$(dirname "$0")/lib.sh"

command -v script >/dev/null || { echo "1..0 # SKIP script(1) missing"; exit 77; }

out=$(script -qec "$PADDOCK run -- sh -c 'tty; stty size; echo \$TERM'" /dev/null </dev/null | tr -d '\r')
expect_match "command has a terminal inside the sandbox" "/dev/pts/0" "$out"
expect_match "TERM is passed" "(xterm|dumb|screen|vt|linux)" "$out"

out=$(script -qec "$PADDOCK run -- sh -c 'exit 4'" /dev/null </dev/null; echo "st=$?")
expect_match "exit status through a pty" "st=4" "$out"

# stdout a terminal, stdin not: output goes through a pipe, the terminal stays outside
out=$(script -qec "$PADDOCK run -- sh -c 'tty; ls -l /proc/self/fd/1' </dev/null" /dev/null </dev/null | tr -d '\r')
expect_match "non-interactive run has no terminal" "not a tty" "$out"
expect_match "... and stdout is a pipe" "pipe:" "$out"

finish
