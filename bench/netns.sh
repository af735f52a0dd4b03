# shellcheck shell=bash
# shellcheck disable=SC2154 # top, build and ADDR are the calling bench's
# Sourced by the benches that need a network of their own (egress.sh, secrets.sh):
#   bench_netns NAME NEEDED-COMMAND NINJA-TARGET...
# Outside (first run, as root): installs the bench's packages, builds the targets, and
# re-runs the calling script inside a new network namespace (`unshare --net`) with
# --in-netns; the caller exports what the second run needs first. Inside: returns, having
# brought lo up with $ADDR/32 on it, a public-class address that exists only there, so no
# packet can leave the machine.
bench_netns() {
	local name=$1 need=$2
	shift 2
	if [ "${BENCH_ARG:-}" != --in-netns ]; then
		if [ "$(id -u)" -ne 0 ]; then
			echo "bench/$name: run as root (it creates a network namespace)" >&2
			exit 1
		fi
		"$top/dev/deps" --bench
		command -v "$need" >/dev/null || { echo "bench/$name: needs $need" >&2; exit 1; }
		[ -f "$build/build.ninja" ] || meson setup "$build" "$top" >/dev/null
		ninja -C "$build" src/cli/paddock "$@" >/dev/null
		exec unshare --net "$0" --in-netns
	fi
	ip link set lo up
	ip addr add "$ADDR/32" dev lo
}
