#!/bin/bash
# Network egress, side by side in one run: what the supervisor's proxy costs a download and a
# connection, against the same server reached directly. As root.
#   bench/egress.sh     env: BYTES per download (1073741824), ROUNDS of downloads (5),
#                       CONNS timed connections (1000), BUILD dir, PADDOCK binary
# Targets (the egress issue): throughput through the proxy >= 90% of direct, <= 0.2 ms added
# per connection (p50).
#
# It re-runs itself in a network namespace of its own (unshare --net) that has nothing but
# lo with 11.22.33.1/32 on it, a public-class address that exists only there, so no packet
# leaves the machine. bench/egress-server serves http://11.22.33.1/ and bench.test resolves
# to it only through the --resolve-hosts file. Three ways to the same server:
#   direct        from the namespace itself, no sandbox, no proxy
#   proxy         from `paddock run --allow bench.test`, through http_proxy (127.0.0.1:3128)
#   transparent   the same sandbox, ignoring the proxy variables: nftables redirects it
# Throughput: curl downloads BYTES, ROUNDS times each way, interleaved; median, min, max, and
# the supervisor's CPU per GiB (independent of where the scheduler puts whom; it includes
# the ~0.04 s of starting a sandbox). Latency: bench/egress-client makes CONNS whole HTTP
# exchanges one after another (inside the sandbox for proxy and transparent) and reports
# p50/p99; the sandbox's start-up is not timed.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
PADDOCK=${PADDOCK:-$build/src/cli/paddock}
BYTES=${BYTES:-1073741824}
CONNS=${CONNS:-1000}
ROUNDS=${ROUNDS:-5}
ADDR=11.22.33.1
NAME=bench.test

export BUILD=$build PADDOCK BYTES CONNS ROUNDS
BENCH_ARG=${1:-}
# shellcheck source=bench/netns.sh
. "$top/bench/netns.sh"
bench_netns egress.sh curl bench/egress-server bench/egress-client

# ---- inside the bench's own network namespace ----
ws=$(mktemp -d /tmp/pdegress.XXXXXX)
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$ws"' EXIT
mkdir "$ws/b"
cp "$build/bench/egress-client" "$ws/b/"
echo "$ADDR $NAME" >"$ws/hosts"
chmod -R a+rX "$ws"
"$build/bench/egress-server" "$ADDR" 80 &
srv=$!
for _ in $(seq 100); do
	curl -s -o /dev/null "http://$ADDR/" && break
	sleep 0.05
done

# sb [PADDOCK RUN OPTIONS] -- CMD...: in a sandbox allowed to reach bench.test
sb() {
	"$PADDOCK" run --allow "$NAME" --resolve-hosts "$ws/hosts" --ro-bind "$ws/b:/b" "$@"
}
url="http://$NAME/bytes/$BYTES"
get=(curl -sS -m 120 -o /dev/null -w '%{speed_download}')
# sandboxed download; prints its bytes/s and the supervisor's CPU seconds: what `paddock run`
# and the children it reaped used (bash's time), less what the command used (--report)
sb_get() {
	local t
	TIMEFORMAT='%U %S'
	t=$({ time sb --report "$ws/report.json" -- "${get[@]}" "$@" >"$ws/speed" 2>&3; } 3>&2 2>&1)
	echo "$(cat "$ws/speed") $(awk -v t="$t" '
		{
			while (match($0, /"cpu_(user|sys)_s": *[0-9.eE+-]+/)) {
				v = substr($0, RSTART, RLENGTH)
				sub(/.*: */, "", v)
				cmd += v
				$0 = substr($0, RSTART + RLENGTH)
			}
		}
		END { split(t, a, " "); print a[1] + a[2] - cmd }' "$ws/report.json")"
}

# throughput: mode, bytes/s, supervisor CPU s; one line per mode and round
for _ in $(seq "$ROUNDS"); do
	echo "direct $("${get[@]}" "http://$ADDR/bytes/$BYTES") -"
	echo "proxy $(sb_get "$url")"
	echo "transparent $(sb_get --noproxy '*' "$url")"
done >"$ws/tput"

# latency: one line per mode from egress-client
client=(-n "$CONNS" -H "$NAME")
{
	"$build/bench/egress-client" "${client[@]}" -l direct direct "$ADDR" 80
	sb -- /b/egress-client "${client[@]}" -l proxy proxy "$ADDR" 80 127.0.0.1 3128
	sb -- /b/egress-client "${client[@]}" -l transparent direct "$ADDR" 80
} >"$ws/lat"

echo "# $(uname -r), $(nproc) cores, uid $(id -u), $BYTES bytes x $ROUNDS (median)," \
	"$CONNS connections in a row"
awk -v gib="$(awk -v b="$BYTES" 'BEGIN { print b / 1073741824 }')" '
	function median(x, m,   a, i, j, t) {
		for (i = 1; i <= n[m]; i++) a[i] = x[m, i]
		for (i = 1; i <= n[m]; i++)
			for (j = i + 1; j <= n[m]; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return a[int((n[m] + 1) / 2)]
	}
	FNR == 1 { file++ }
	file == 1 { n[$1]++; v[$1, n[$1]] = $2 / 1e6; c[$1, n[$1]] = $3 }
	file == 2 { for (i = 2; i <= NF; i++) { split($i, kv, "="); lat[$1, kv[1]] = kv[2] } }
	END {
		split("direct proxy transparent", modes, " ")
		printf "%-12s %8s %8s %8s %9s %14s\n", "throughput", "MB/s", "min", "max",
			"x direct", "proxy CPU s/GiB"
		for (k = 1; k <= 3; k++) {
			m = modes[k]; med[m] = median(v, m); lo = hi = v[m, 1]
			for (i = 2; i <= n[m]; i++) {
				if (v[m, i] < lo) lo = v[m, i]
				if (v[m, i] > hi) hi = v[m, i]
			}
			cpu = m == "direct" ? "-" : sprintf("%.2f", median(c, m) / gib)
			printf "%-12s %8.0f %8.0f %8.0f %9.3f %14s\n", m, med[m], lo, hi,
				med[m] / med["direct"], cpu
		}
		printf "%-12s %8s %8s %8s %9s\n", "latency", "p50 ms", "p99 ms", "+p50 ms",
			"failures"
		for (k = 1; k <= 3; k++) {
			m = modes[k]
			printf "%-12s %8.3f %8.3f %8.3f %9d\n", m, lat[m, "p50"], lat[m, "p99"],
				lat[m, "p50"] - lat["direct", "p50"], lat[m, "failures"]
		}
		tp = med["proxy"] / med["direct"]; tt = med["transparent"] / med["direct"]
		ap = lat["proxy", "p50"] - lat["direct", "p50"]
		at = lat["transparent", "p50"] - lat["direct", "p50"]
		ok = tp >= 0.9 && tt >= 0.9 && ap <= 0.2 && at <= 0.2
		printf "# egress: proxy %.0f%% / transparent %.0f%% of direct throughput", \
			tp * 100, tt * 100
		printf " (target >= 90%%), +%.3f / +%.3f ms per connection p50 (target <= 0.2): %s\n", \
			ap, at, ok ? "met" : "missed"
	}' "$ws/tput" "$ws/lat"
if [ "$(nproc)" -lt 3 ]; then
	echo "# note: $(nproc) cores for server, proxy and client: direct alone swings ~3x with" \
		"whether server and client share a core; compare proxy CPU s/GiB across runs"
fi
