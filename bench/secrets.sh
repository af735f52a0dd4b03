#!/bin/bash
# Secret brokering, side by side in one run: what intercepting HTTPS (terminate the TLS,
# put the secret in, encrypt again) costs against tunnelling it untouched. As root.
#   bench/secrets.sh    env: REQS requests on one keep-alive connection (2000), CONNS new
#                       connections (300), ROUNDS (3), BUILD dir, PADDOCK binary,
#                       RAW=1 to print every client line and CPU figure too
# The issue's bench: requests per second and added latency through an intercepted HTTPS
# connection vs a tunnelled one.
#
# It re-runs itself in a network namespace of its own (unshare --net) that has nothing but
# lo with 11.22.33.1/32 on it, a public-class address that exists only there, so no packet
# leaves the machine. bench/tls-server (C, one process, keep-alive) serves HTTPS there with
# a certificate for api.test and plain.test from a CA made here with the openssl CLI; both
# names resolve to it only through the --resolve-hosts file. Every sandbox is the same:
# `paddock run --allow api.test --allow plain.test --secret API_KEY@api.test --upstream-ca
# CA`, and every request carries "Authorization: Bearer $API_KEY". Three ways:
#   direct        from the namespace itself, no sandbox, no proxy, the real value (reference)
#   tunnelled     to plain.test (no secret bound) through https_proxy (CONNECT): the proxy
#                 splices, the TLS is end to end, the server gets the placeholder
#   intercepted   to api.test, the same way: the proxy terminates the TLS with the sandbox's
#                 CA, puts the real value in, and encrypts again to the server
# The server answers 403 to a request for api.test without the real value: "forbidden" at
# the end must be 0. bench/egress-client (mode tls) measures, in ROUNDS interleaved rounds:
#   keep-alive    REQS requests one after another on one connection: req/s, p50/p99 per
#                 request, and the first connection's set-up (connect, CONNECT, handshake;
#                 intercepted: the first leaf certificate too)
#   new conn      CONNS connections one after another, each connect, CONNECT, a full TLS
#                 handshake (no resumption), one request: p50/p99, mean, and the share
#                 over 30 ms (a delayed ACK's 40 ms stall shows there)
# Medians over the rounds. Proxy CPU: the supervisor's CPU for the run (bash's time, less
# the command's from --report), less that of an idle sandbox (`-- true`) in the same round,
# per request or per connection: independent of where the scheduler puts whom.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
PADDOCK=${PADDOCK:-$build/src/cli/paddock}
REQS=${REQS:-2000}
CONNS=${CONNS:-300}
ROUNDS=${ROUNDS:-3}
ADDR=11.22.33.1

export BUILD=$build PADDOCK REQS CONNS ROUNDS
BENCH_ARG=${1:-}
# shellcheck source=bench/netns.sh
. "$top/bench/netns.sh"
bench_netns secrets.sh openssl bench/tls-server bench/egress-client

# ---- inside the bench's own network namespace ----
ws=$(mktemp -d /tmp/pdsecrets.XXXXXX)
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$ws"' EXIT

# a CA and a server certificate for api.test and plain.test, as egress-servers.py makes them
cat >"$ws/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
subjectAltName = DNS:api.test, DNS:plain.test
EOF
mkdir "$ws/b"
key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
{
	openssl req -config "$ws/openssl.cnf" -x509 "${key[@]}" -keyout "$ws/ca-key.pem" \
		-out "$ws/b/ca.pem" -days 2 -subj "/CN=paddock secrets bench CA" -extensions ca_ext
	openssl req -config "$ws/openssl.cnf" -new "${key[@]}" -keyout "$ws/server-key.pem" \
		-out "$ws/server.csr" -subj /CN=api.test
	openssl x509 -req -in "$ws/server.csr" -CA "$ws/b/ca.pem" -CAkey "$ws/ca-key.pem" \
		-set_serial 1 -days 2 -extfile "$ws/openssl.cnf" -extensions server_ext \
		-out "$ws/server.pem"
} >/dev/null 2>"$ws/openssl.log" || { cat "$ws/openssl.log" >&2; exit 1; }
cp "$build/bench/egress-client" "$ws/b/"
echo "$ADDR api.test plain.test" >"$ws/hosts"
chmod -R a+rX "$ws/b" "$ws/hosts"
chmod a+rx "$ws"

# the supervisor's value: same-shape placeholder (long enough), never seen inside
export API_KEY=bench_R3alS3cr3tV4lue0123456789abcdefXYZ
"$build/bench/tls-server" -r "api.test=$API_KEY" "$ws/server.pem" "$ws/server-key.pem" \
	"$ADDR" 443 2>"$ws/server.log" &
srv=$!
cli=("$build/bench/egress-client" -c "$ws/b/ca.pem")
for _ in $(seq 100); do
	"${cli[@]}" -n 1 -w 0 -H api.test -a "Authorization: Bearer $API_KEY" tls "$ADDR" 443 \
		>/dev/null 2>&1 && break
	sleep 0.05
done

# sb_cpu CMD...: in a sandbox (both names allowed, API_KEY bound to api.test), its output
# kept; prints the supervisor's CPU seconds for the run (less what the command used)
sb_cpu() {
	local t
	TIMEFORMAT='%3U %3S'
	t=$({ time "$PADDOCK" run --allow api.test --allow plain.test --secret 'API_KEY@api.test' \
		--upstream-ca "$ws/b/ca.pem" --resolve-hosts "$ws/hosts" --ro-bind "$ws/b:/b" \
		--report "$ws/report.json" -- "$@" >>"$ws/out" 2>>"$ws/err"; } 2>&1) || true
	awk -v t="$t" '
		{
			while (match($0, /"cpu_(user|sys)_s": *[0-9.eE+-]+/)) {
				v = substr($0, RSTART, RLENGTH)
				sub(/.*: */, "", v)
				cmd += v
				$0 = substr($0, RSTART + RLENGTH)
			}
		}
		END { split(t, a, " "); print a[1] + a[2] - cmd }' "$ws/report.json"
}
# run MODE KIND: one measurement; its client line goes to $ws/out as "MODE-KIND ...", its
# proxy CPU to $ws/cpu as "MODE-KIND SECONDS"
run() {
	local mode=$1 kind=$2 host=api.test n=$CONNS k=() via=() hdr
	[ "$mode" = tunnelled ] && host=plain.test
	[ "$kind" = keep ] && { n=$REQS; k=(-k); }
	if [ "$mode" = direct ]; then
		"${cli[@]}" -n "$n" -H "$host" -l "$mode-$kind" "${k[@]}" \
			-a "Authorization: Bearer $API_KEY" tls "$ADDR" 443 >>"$ws/out" 2>>"$ws/err" || true
		return
	fi
	via=(127.0.0.1 3128)
	# shellcheck disable=SC2016 # $API_KEY is the sandbox's, expanded inside
	hdr='Authorization: Bearer $API_KEY'
	echo "$mode-$kind $(sb_cpu sh -c "/b/egress-client -c /b/ca.pem -n $n -H $host \
		-l $mode-$kind ${k[*]} -a \"$hdr\" tls $ADDR 443 ${via[*]} || true")" >>"$ws/cpu"
}

: >"$ws/out"
: >"$ws/cpu"
: >"$ws/err"
for r in $(seq "$ROUNDS"); do
	echo "idle $(sb_cpu true)" >>"$ws/cpu"
	# the two sandboxed ways take turns going first
	if [ $((r % 2)) -eq 1 ]; then order="tunnelled intercepted"; else order="intercepted tunnelled"; fi
	for kind in keep conn; do
		run direct "$kind"
		for m in $order; do
			run "$m" "$kind"
		done
	done
done
kill "$srv"
wait "$srv" 2>/dev/null || true
srv=

if [ "${RAW:-0}" = 1 ]; then
	sed 's/^/# raw: /' "$ws/out"
	sed 's/^/# raw cpu s: /' "$ws/cpu"
fi
echo "# $(uname -r), $(nproc) cores, $REQS requests on one connection and $CONNS new" \
	"connections x $ROUNDS rounds (medians)"
awk -v reqs="$REQS" -v conns="$CONNS" '
	function median(arr, key, cnt,   a, i, j, t) {
		for (i = 1; i <= cnt; i++) a[i] = arr[key, i]
		for (i = 1; i <= cnt; i++)
			for (j = i + 1; j <= cnt; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return cnt ? a[int((cnt + 1) / 2)] : 0
	}
	function m(key, f) { return median(v, key SUBSEP f, n[key]) }
	FNR == 1 { file++ }
	file == 1 && /^[a-z]+-(keep|conn) / {
		k = $1; n[k]++
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[k, kv[1], n[k]] = kv[2] }
		fail[k] += v[k, "failures", n[k]]
	}
	file == 2 { nc[$1]++; c[$1, nc[$1]] = $2 }
	END {
		idle = median(c, "idle", nc["idle"])
		for (k in nc) if (k != "idle") cpu[k] = median(c, k, nc[k]) - idle
		split("direct tunnelled intercepted", modes, " ")
		printf "%-12s %9s %8s %8s %12s %13s %13s %8s\n", "keep-alive", "req/s", "p50 ms",
			"p99 ms", "x tunnelled", "proxy us/req", "first conn ms", "failures"
		for (i = 1; i <= 3; i++) {
			k = modes[i] "-keep"
			rps[modes[i]] = m(k, "rps")
			printf "%-12s %9.0f %8.3f %8.3f %12.3f %13s %13.2f %8d\n", modes[i], m(k, "rps"),
				m(k, "p50"), m(k, "p99"), m(k, "rps") / m("tunnelled-keep", "rps"),
				i == 1 ? "-" : sprintf("%.1f", cpu[k] / reqs * 1e6), m(k, "hs"), fail[k]
		}
		printf "%-12s %9s %8s %8s %12s %13s %13s %8s\n", "new conn", "> 30 ms", "p50 ms",
			"p99 ms", "+p50 ms", "proxy us/conn", "mean ms", "failures"
		for (i = 1; i <= 3; i++) {
			k = modes[i] "-conn"
			p50[modes[i]] = m(k, "p50"); p99[modes[i]] = m(k, "p99")
			mean[modes[i]] = m(k, "mean"); slow[modes[i]] = m(k, "slow") / conns * 100
			printf "%-12s %8.0f%% %8.3f %8.3f %12.3f %13s %13.2f %8d\n", modes[i],
				slow[modes[i]], m(k, "p50"), m(k, "p99"), m(k, "p50") - m("tunnelled-conn", "p50"),
				i == 1 ? "-" : sprintf("%.0f", cpu[k] / conns * 1e6), m(k, "mean"), fail[k]
		}
		printf "# secrets: intercepted %.0f%% of tunnelled req/s on one connection (%.0f vs %.0f);", \
			rps["tunnelled"] ? 100 * rps["intercepted"] / rps["tunnelled"] : 0,
			rps["intercepted"], rps["tunnelled"]
		printf " a new connection +%.3f ms p50 (%.3f vs %.3f), p99 %.3f vs %.3f, mean %.3f vs %.3f\n", \
			p50["intercepted"] - p50["tunnelled"], p50["intercepted"], p50["tunnelled"],
			p99["intercepted"], p99["tunnelled"], mean["intercepted"], mean["tunnelled"]
		if (slow["tunnelled"] + slow["intercepted"] > 0)
			print "# note: new connections over 30 ms (~40 ms) are delayed-ACK stalls: small" \
				" writes on a socket without TCP_NODELAY wait for the peer'"'"'s ACK"
	}' "$ws/out" "$ws/cpu"
forb=$(sed -n 's/.*forbidden=\([0-9]*\).*/\1/p' "$ws/server.log")
echo "# server: $(sed -n 's/^tls-server //p' "$ws/server.log")$([ "${forb:-1}" = 0 ] ||
	echo " -- requests for api.test arrived without the real value")"
# what the clients and paddock said on stderr, once per kind of line
sed 's/after [0-9]* requests/after N requests/' "$ws/err" | sort | uniq -c | sed 's/^/# stderr: /'
