#!/bin/bash
# What the seccomp filter costs a sandboxed process, side by side in one run:
#   bench/seccomp.sh [CALLS]        (default 2000000 allowed, CALLS/100 denied)
# An allowed call (getppid) bare, under bubblewrap (no filter) and in a paddock sandbox
# (the filter's allowed path); a refused call (mount) bare (the kernel's own refusal) and
# in paddock (the filter hands it to init, which answers and records it: seccomp.denied).
# Each is the median of 5 runs, in ns per call, and as a multiple of bare.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
calls=${1:-2000000}
"$top/dev/deps" --bench
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
ninja -C "$top/build" src/cli/paddock bench/syscall-loop >/dev/null
loop=$top/build/bench/syscall-loop
bwrap=(bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr
	--symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64
	--proc /proc --dev /dev --ro-bind "$loop" /loop /loop)
pd=("$top/build/src/cli/paddock" run --ro-bind "$loop:/loop" -- /loop)
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ns() { sed -n 's/.*"ns_per_call":\([0-9.]*\).*/\1/p'; }
run5() { for _ in 1 2 3 4 5; do "$@" | ns; done | median; }
echo "# $(uname -r), $(nproc) cores, uid $(id -u), $calls allowed / $((calls / 100)) denied calls, median of 5"
a_bare=$(run5 "$loop" allowed "$calls")
a_bwrap=$(run5 "${bwrap[@]}" allowed "$calls")
a_pd=$(run5 "${pd[@]}" allowed "$calls")
d_bare=$(run5 "$loop" denied $((calls / 100)))
d_pd=$(run5 "${pd[@]}" denied $((calls / 100)))
printf '%-40s %10s %8s\n' "what" "ns/call" "x bare"
row() { printf '%-40s %10.1f %8.2f\n' "$1" "$2" "$(awk -v a="$2" -v b="$3" 'BEGIN { print a / b }')"; }
row "allowed call, bare" "$a_bare" "$a_bare"
row "allowed call, bubblewrap (no filter)" "$a_bwrap" "$a_bare"
row "allowed call, paddock (filter)" "$a_pd" "$a_bare"
row "refused call, bare (kernel refuses)" "$d_bare" "$d_bare"
row "refused call, paddock (init answers)" "$d_pd" "$d_bare"
