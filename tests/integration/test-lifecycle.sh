#!/bin/bash
# libpaddock's lifecycle tests (lifecycle.c), as this mode's user.
. "$(dirname "$0")/lib.sh"
if "$LIFECYCLE"; then ok "lifecycle"; else not_ok "lifecycle"; fi
finish
