#!/bin/bash
# The C sources follow .clang-format (STYLE.md): clang-format changes nothing in any of them.
# Fix a failure with: clang-format -i FILE... (or every file: see this script's list)
set -u
top=${PADDOCK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 1
command -v clang-format >/dev/null || { echo "clang-format is not installed (dev/deps --test)"; exit 77; }
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null | grep -v '/node_modules/' ||
	find src include tests bench -name '*.[ch]' -not -path '*/node_modules/*')
[ "${#files[@]}" -gt 0 ] || { echo "no C sources found under $top"; exit 1; }
bad=0
for f in "${files[@]}"; do
	if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
		echo "not formatted: $f (clang-format -i $f)"
		bad=$((bad + 1))
	fi
done
echo "${#files[@]} files checked, $bad not formatted"
[ "$bad" -eq 0 ]
