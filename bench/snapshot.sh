#!/bin/bash
# Snapshots (docs/images.md "Snapshots"), through paddockd, side by side with their baselines
# in one run:
#   - snapshot time and size against the writable layer's size, beside `tar -cf` and `cp -a`
#     of the same tree on the host (a snapshot writes a tar and unpacks it: both at once);
#   - create from a snapshot against a cold create from its base image (median of ROUNDS).
#   bench/snapshot.sh [ROUNDS]     (default 20)
# Trees: "pip" (2,000 files of 8 KiB in 100 directories, ~16 MiB) and "blob" (one 64 MiB
# file), written inside the sandbox under /usr/local. The store is a temp directory on the
# disk of $TMPDIR (or /var/tmp).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-20}
# rootless, run it as a user who may not write the build: it uses what is built
if [ -w "$top" ]; then
	[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
	ninja -C "$top/build" src/cli/paddock src/daemon/paddockd >/dev/null
fi
PADDOCK=$top/build/src/cli/paddock
PADDOCKD=$top/build/src/daemon/paddockd
W=$(mktemp -d "${TMPDIR:-/var/tmp}/pdbench.XXXXXX")
chmod 755 "$W"
export PADDOCK_IMAGE_STORE=$W/store
SOCK=$W/sock
DPID=
cleanup() {
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

api() { curl -s --unix-socket "$SOCK" -X "$1" "http://x$2" "${@:3}"; }
# timed METHOD PATH [curl args]: seconds the request took (client side), answer in $W/ans
timed() { curl -s --unix-socket "$SOCK" -X "$1" -o "$W/ans" -w '%{time_total}' "http://x$2" "${@:3}"; }
field() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$W/ans" "$1"; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", s * 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

python3 "$top/tests/integration/mkimage.py" root "$W/root" sh cat ls mkdir rm head seq true \
	>/dev/null
python3 "$top/tests/integration/mkimage.py" layout "$W/oci" --layer "$W/root" \
	--env PATH=/usr/bin:/bin >/dev/null
"$PADDOCK" image import "$W/oci" --name bench/base:1 >/dev/null
"$PADDOCKD" --socket "$SOCK" --state-dir "$W/st" --destroy-on-exit 2>"$W/daemon.log" &
DPID=$!
for _ in $(seq 100); do
	curl -s --unix-socket "$SOCK" -o /dev/null http://x/healthz && break
	sleep 0.05
done

echo "# $(uname -r), $(nproc) cores, uid $(id -u), store on $(df --output=fstype "$W" | tail -n1)"
echo
pip_tree='for d in $(seq 1 100); do mkdir -p /usr/local/lib/site/p$d; for f in $(seq 1 20); do head -c 8192 /dev/urandom > /usr/local/lib/site/p$d/m$f.py; done; done'
blob_tree='mkdir -p /usr/local/lib && head -c 67108864 /dev/urandom > /usr/local/lib/blob'
make_host_tree() { # the same shape on the host, for the baselines
	rm -rf "$W/host"
	mkdir -p "$W/host"
	if [ "$1" = pip ]; then
		for d in $(seq 1 100); do
			mkdir -p "$W/host/p$d"
			for f in $(seq 1 20); do head -c 8192 /dev/urandom >"$W/host/p$d/m$f.py"; done
		done
	else
		head -c 67108864 /dev/urandom >"$W/host/blob"
	fi
}
now() { date +%s.%N; }
printf '%-6s %10s %10s %12s %12s %12s %9s %9s\n' tree "layer" "snapshot" "snapshot" \
	"tar -cf" "cp -a" "vs tar" "vs cp"
printf '%-6s %10s %10s %12s %12s %12s %9s %9s\n' "" "bytes" "layer" "time" "" "" "" ""
n=0
for tree in pip blob; do
	id=$(api POST /v1/sandboxes -d '{"image":"bench/base:1","user":"root","limits":{"disk":"256M"}}' |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	script=$pip_tree
	[ "$tree" = blob ] && script=$blob_tree
	body=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"cmd": sys.argv[1]}))' "$script")
	api POST "/v1/sandboxes/$id/exec" -d "$body" >/dev/null
	sync
	times=()
	for i in 1 2 3; do
		n=$((n + 1))
		# a new stamp each time: an identical layer would be found in the store, not written
		api POST "/v1/sandboxes/$id/exec" -d "{\"cmd\":\"echo $i > /usr/local/stamp\"}" >/dev/null
		times+=("$(timed POST "/v1/sandboxes/$id/snapshot" -d "{\"name\":\"bench/$tree:$i\"}")")
	done
	t_snap=$(printf '%s\n' "${times[@]}" | median)
	layer=$(field layer_size)
	make_host_tree "$tree"
	tt=()
	tc=()
	for i in 1 2 3; do
		t0=$(now)
		tar -cf "$W/t.tar" -C "$W/host" .
		t1=$(now)
		cp -a "$W/host" "$W/copy"
		t2=$(now)
		rm -rf "$W/copy" "$W/t.tar"
		tt+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")
		tc+=("$(awk -v a="$t1" -v b="$t2" 'BEGIN { print b - a }')")
	done
	t_tar=$(printf '%s\n' "${tt[@]}" | median)
	t_cp=$(printf '%s\n' "${tc[@]}" | median)
	printf '%-6s %10s %10s %12s %12s %12s %9s %9s\n' "$tree" "$(du -sb "$W/host" | cut -f1)" \
		"$layer" "$(ms "$t_snap")" "$(ms "$t_tar")" "$(ms "$t_cp")" "$(ratio "$t_snap" "$t_tar")" \
		"$(ratio "$t_snap" "$t_cp")"
	api DELETE "/v1/sandboxes/$id?wait=1" >/dev/null
done
echo
echo "(snapshot: POST .../snapshot as the client sees it, median of 3, pause and resume"
echo " included; it writes a tar and unpacks it. tar -cf, cp -a: median of 3, the same tree"
echo " on the host. Nothing is synced: page cache on every side.)"
echo

cold=()
from=()
for i in $(seq "$rounds"); do
	cold+=("$(timed POST /v1/sandboxes -d '{"image":"bench/base:1"}')")
	api DELETE "/v1/sandboxes/$(field id)?wait=1" >/dev/null
	from+=("$(timed POST /v1/sandboxes -d '{"image":"bench/pip:1"}')")
	api DELETE "/v1/sandboxes/$(field id)?wait=1" >/dev/null
done
c=$(printf '%s\n' "${cold[@]}" | median)
f=$(printf '%s\n' "${from[@]}" | median)
printf '%-44s %12s %8s\n' "create, median of $rounds (interleaved)" p50 ratio
printf '%-44s %12s %8s\n' "cold: POST /v1/sandboxes {image: base}" "$(ms "$c")" 1.00
printf '%-44s %12s %8s\n' "from the pip snapshot (base + 16 MiB layer)" "$(ms "$f")" "$(ratio "$f" "$c")"
