#!/bin/bash
# paddockd's warm pool (docs/api.md, "Warm pool"): creates take ready sandboxes of their
# template and bind what differs (hostname, environment, limits, network policy, secrets,
# workspace, TTL, metadata); a claimed sandbox is the same, from inside, as one made cold; a
# claim never sees the previous claim's environment or secrets; other templates miss, are
# made cold and pooled from then on; POST /v1/run takes one, runs a command and removes it in
# one request; kill -9 with a full pool leaves nothing once paddockd restarts; under memory
# pressure the pool gives its sandboxes back, and refills after.
# run.sh checks nothing is left behind.
. "$(dirname "$0")/lib.sh"

PADDOCKD=${PADDOCKD:?PADDOCKD must point at paddockd}
PY=/usr/bin/python3
SOCK=$T_TMP/sock
STATE=$T_TMP/st

api() {
	local m=$1 p=$2
	shift 2
	curl -s --unix-socket "$SOCK" -X "$m" "http://x$p" "$@"
}
metric() { api GET /metrics | awk -v m="$1" '$1 == m { print $2 }'; }
# waits until the pool of template N holds at least K ready sandboxes
wait_ready() {
	for _ in $(seq 200); do
		[ "$(metric "paddock_pool_ready{template=\"$1\"}")" -ge "$2" ] 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
inits() { daemon_inits; }
run() { j "$(api POST "/v1/sandboxes/$1/exec" -d "{\"cmd\": $(printf '%s' "$2" | $PY -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}")" 'd["stdout"]'; }
create() { j "$(api POST /v1/sandboxes -d "$1")" 'd["id"]'; }

start_daemon --pool 2 || { not_ok "paddockd starts with --pool 2"; finish; }
wait_ready 0 2
expect_eq "the default template is warmed at start: 2 ready" 2 "$(metric 'paddock_pool_ready{template="0"}')"
expect_eq "...each is one process: its init" 2 "$(inits)"

# ---- hits: what differs between claims is bound at the claim ----
A=$(create '{"hostname": "alpha", "env": {"TASK": "first", "ONLY_A": "yes"}, "metadata": {"k": "a"}, "ttl_s": 120}')
expect_eq "a create of the default template is a hit" 1 "$(metric paddock_pool_hits_total)"
expect_eq "...with its hostname and environment" "alpha first yes" "$(run "$A" 'echo $(hostname) $TASK $ONLY_A')"
r=$(api GET "/v1/sandboxes/$A")
expect_eq "...its metadata and TTL" "a 120" "$(j "$r" 'd["metadata"]["k"]+" "+str(d["ttl_s"])')"
wait_ready 0 2
B=$(create '{"hostname": "beta", "env": {"TASK": "second"}}')
expect_eq "the refilled pool serves the next create" 2 "$(metric paddock_pool_hits_total)"
expect_eq "a claim never sees the previous claim's environment" "beta second []" \
	"$(run "$B" 'echo $(hostname) $TASK [$ONLY_A]')"
expect_eq "a claimed sandbox is confined like any" "NoNewPrivs: 1 Seccomp: 2" \
	"$(run "$B" "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status | tr -s '\t\n' '  ' | sed 's/ \$//'")"
count=$(api GET /metrics | awk '$1 == "paddock_pool_claim_seconds_count" { print $2 }')
expect_eq "claim latency is recorded for every hit" 2 "$count"

# ---- limits are bound at the claim: other limits, the same template ----
# the cgroup limits of the sandbox holding process $1, read from the host (no /sys inside):
# memory, pids, CPU quota
cg_limits() {
	local cg=/proc/$1/cgroup mem
	mem=$(awk -F: '$2 == "memory" { print $3 }' "$cg")
	if [ -n "$mem" ]; then
		local pids cpu
		pids=$(awk -F: '$2 == "pids" { print $3 }' "$cg")
		cpu=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3 }' "$cg")
		echo "$(cat "/sys/fs/cgroup/memory$mem/memory.limit_in_bytes")" \
			"$(cat "/sys/fs/cgroup/pids$pids/pids.max")" \
			"$(cat "/sys/fs/cgroup/cpu$cpu/cpu.cfs_quota_us")"
	else
		local p
		p=/sys/fs/cgroup$(awk -F: '$1 == "0" { print $3 }' "$cg")
		echo "$(cat "$p/memory.max") $(cat "$p/pids.max") $(cut -d' ' -f1 "$p/cpu.max")"
	fi
}
FORKS='python3 -c "
import os, signal
kids = []
try:
    while len(kids) < 200:
        p = os.fork()
        if p == 0:
            signal.pause()
        kids.append(p)
except OSError:
    pass
for p in kids:
    os.kill(p, signal.SIGKILL)
    os.waitpid(p, 0)
print(len(kids))"'
wait_ready 0 2
L=$(create '{"limits": {"memory": "100M", "pids": 20, "cpus": 0.5, "cpu_time_s": 7,
	"nofile": 300, "file_size": "5M", "disk": "50M"}}')
expect_eq "other limits, the default template: a hit" 3 "$(metric paddock_pool_hits_total)"
# the soft limits of the named rlimits, in /proc/self/limits' order (shells' ulimit differ)
RLIMITS='grep -E "^Max (cpu time|file size|data size|processes|open files) " /proc/self/limits |
awk "{ printf \"%s \", \$(NF - 2) }"; df -k / | tail -n 1 | awk "{ print \$2 }"'
rl=$(run "$L" "$RLIMITS")
if [ "$MODE" = root ]; then
	# memory and pids are the cgroup's (below); the rlimits are the host's, unlimited and more
	rl=$(awk '{ print $1, $2, $5, $6 }' <<<"$rl")
	expect_eq "...with the requested rlimits and disk (cpu time, file size, open files, disk)" \
		"7 5242880 300 51200" "$rl"
else
	expect_eq "...with the requested rlimits and disk (cpu time, file size, data, processes, files, disk)" \
		"7 5242880 104857600 20 300 51200" "$rl"
fi
expect_eq "...and shows them in its view of the machine (memory kB, CPUs by affinity and /proc)" \
	"102400 1 1 1" "$(run "$L" 'echo $(awk "/^MemTotal/ { print \$2 }" /proc/meminfo) $(nproc) $(python3 -c "import os; print(os.cpu_count())") $(grep -c ^processor /proc/cpuinfo)')"
forks=$(run "$L" "$FORKS")
if [ "$forks" -ge 15 ] && [ "$forks" -lt 20 ]; then
	ok "...a fork bomb stops at the requested pids ($forks forks)"
else
	not_ok "...a fork bomb stops at the requested pids"
	diag "forks: $forks"
fi
if [ "$MODE" = root ]; then
	api POST "/v1/sandboxes/$L/exec" -d '{"cmd": "sleep 31.25", "background": true}' >/dev/null
	pid=
	for _ in $(seq 50); do
		pid=$(own_pids '^sleep 31\.25$' | head -n1)
		[ -n "$pid" ] && break
		sleep 0.05
	done
	expect_eq "...its cgroup has the requested memory, pids and CPU quota" "104857600 20 50000" \
		"$(cg_limits "$pid")"
fi

# ---- another template: a miss, made cold, then pooled ----
T='{"cwd": "/tmp", "limits": {"memory": "200M", "pids": 100}, "hostname": "cold"}'
C=$(create "$T")
expect_eq "another template is a miss" 1 "$(metric paddock_pool_misses_total)"
expect_match "...made cold, it works" "cold" "$(run "$C" hostname)"
wait_ready 1 2
expect_eq "...and is pooled from then on" 2 "$(metric 'paddock_pool_ready{template="1"}')"
P=$(create "$T")
expect_eq "the same template again: a hit" 4 "$(metric paddock_pool_hits_total)"

# the network policy is bound at the claim: allowlist or open, any rules
E1=$(create '{"network": {"allow": ["first.test"]}}')
expect_eq "a first spec with egress is a miss" 2 "$(metric paddock_pool_misses_total)"
wait_ready 2 2
expect_eq "...its template (egress, rules apart) is pooled" 2 "$(metric 'paddock_pool_ready{template="2"}')"
E2=$(create '{"network": {"allow": ["second.test"], "deny": ["bad.second.test"]}}')
expect_eq "other rules, same template: a hit" 5 "$(metric paddock_pool_hits_total)"
r=$(api GET "/v1/sandboxes/$E2/network")
expect_eq "the claim's rules are in force, not the first create's" "allowlist second.test bad.second.test" \
	"$(j "$r" 'd["network"]["mode"]+" "+" ".join(d["network"]["allow"])+" "+" ".join(d["network"]["deny"])')"
# the proxy decides by the claim's policy: a denied name is 403; an allowed one gets past
# the policy and fails only to resolve here (502)
P_CURL='curl -s -o /dev/null -w "%{http_code} " -x http://127.0.0.1:3128'
expect_eq "inside, the proxy follows the claim's policy" "403 502 403 " \
	"$(run "$E2" "$P_CURL http://first.test/; $P_CURL http://second.test/; $P_CURL http://bad.second.test/")"
wait_ready 2 2
E3=$(create '{"network": {"mode": "open"}}')
expect_eq "open mode from the same pool: a hit" 6 "$(metric paddock_pool_hits_total)"
expect_eq "...and open it is" "502" "$(run "$E3" "$P_CURL http://anything.test/" | tr -d ' ')"

# a pooled sandbox and a cold one of one spec are the same from inside
FACTS='id; hostname; env | sort; grep -E "^(Cap|NoNewPrivs|Seccomp)" /proc/self/status;
awk '"'"'{ for (i = 7; $i != "-"; i++); print $5, $(i + 1) }'"'"' /proc/self/mountinfo;
ulimit -a; ls /proc | grep -v "^[0-9]" | sort | tr "\n" " "; echo; tail -n +3 /proc/net/dev | cut -d: -f1;
df -k / | tail -n 1 | awk "{ print \$2 }"; ls / | tr "\n" " "'
cold=$(run "$C" "$FACTS")
pooled=$(run "$P" "$FACTS")
expect_match "the facts were read" "uid=1000.*cold" "$(tr '\n' ' ' <<<"$cold")"
expect_eq "pooled and cold: ids, env, confinement, mounts, rlimits, /proc, network, disk" \
	"$cold" "$pooled"

# secrets are bound at the claim: a spec with secrets is served from its template's pool,
# reads its values then, and holds only placeholders (test-secrets.sh brokers one end to end)
wait_ready 2 2
misses=$(metric paddock_pool_misses_total)
SECRET_FACTS='echo "K=$K"; env | grep -E "^(SSL_CERT_FILE|NODE_EXTRA_CA_CERTS)=" | sort; ls /etc/paddock | tr "\n" " "'
r=$(api POST /v1/sandboxes -d '{"network": {"allow": ["example.test"]}, "secrets": [{"name": "K", "value": "v4lue-of-the-secret", "hosts": ["example.test"]}]}')
S=$(j "$r" 'd["id"]')
expect_match "a spec with secrets is created" '^sb_' "$S"
expect_eq "...from the pool: a hit" "$misses 7" "$(metric paddock_pool_misses_total) $(metric paddock_pool_hits_total)"
out=$(run "$S" "$SECRET_FACTS")
PH1=$(sed -n 's/^K=//p' <<<"$out")
expect_match "...its variable holds a placeholder" '^[A-Za-z0-9_-]{16,}$' "$PH1"
expect_no_match "...never the value" "v4lue-of-the-secret" "$out"
expect_match "...with the sandbox's CA and the variables pointing at it" \
	"SSL_CERT_FILE=/etc/paddock/ca-bundle.pem.*ca-bundle.pem ca.pem" "$(tr '\n' ' ' <<<"$out")"
wait_ready 2 2
r=$(api POST /v1/sandboxes -d '{"network": {"allow": ["example.test"]}, "secrets": [{"name": "K", "value": "an0ther-value-of-it", "hosts": ["example.test"]}]}')
S2=$(j "$r" 'd["id"]')
expect_eq "another value, the same template: a hit" 8 "$(metric paddock_pool_hits_total)"
out=$(run "$S2" "$SECRET_FACTS")
PH2=$(sed -n 's/^K=//p' <<<"$out")
expect_match "...its own placeholder" '^[A-Za-z0-9_-]{16,}$' "$PH2"
if [ -n "$PH2" ] && [ "$PH1" != "$PH2" ]; then
	ok "...not the previous claim's"
else
	not_ok "...not the previous claim's"
fi
expect_no_match "...and no value" "v4lue-of-the-secret|an0ther-value-of-it" "$out"

# ---- bad input changes nothing in the pool ----
ready=$(metric 'paddock_pool_ready{template="0"}')
r=$(api POST /v1/sandboxes -d '{"hostname": 5}')
expect_match "a bad spec is refused by field" '"field":"hostname"' "$r"
expect_eq "...and takes nothing from the pool" "$ready 8" "$(metric 'paddock_pool_ready{template="0"}') $(metric paddock_pool_hits_total)"

# ---- the workspace is bound at the claim: any host directory, the same template ----
# (as root an idmapped tree from paddockd; rootless init clones it from the host tree it kept)
wait_ready 0 2
hits=$(metric paddock_pool_hits_total)
WS=$T_TMP/ws
mkdir -p "$WS"
echo from the host >"$WS/host-file"
give_to_user "$WS"
W=$(create "{\"workspace\": \"$WS\"}")
expect_match "a spec with a workspace is created" '^sb_' "$W"
expect_eq "...from the pool: a hit" $((hits + 1)) "$(metric paddock_pool_hits_total)"
expect_eq "...its /workspace is the host directory" "from the host" \
	"$(run "$W" 'cat /workspace/host-file')"
run "$W" 'echo from inside >/workspace/made-inside' >/dev/null
expect_eq "...what it writes there is on the host" "from inside" \
	"$(cat "$WS/made-inside" 2>/dev/null)"

# ---- teardown is off the request path ----
code=$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' -X DELETE "http://x/v1/sandboxes/$A?wait=maybe")
expect_eq "DELETE ?wait= other than 0 or 1 is refused" 400 "$code"
code=$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' -X DELETE "http://x/v1/sandboxes/$A")
expect_eq "DELETE answers 204 once the sandbox is killed" 204 "$code"
code=$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' "http://x/v1/sandboxes/$A")
expect_eq "...and its id is gone at once" 404 "$code"
before=$(inits)
code=$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' -X DELETE "http://x/v1/sandboxes/$B?wait=1")
expect_eq "DELETE ?wait=1 answers 204 when every process of it has exited" "204 $((before - 1))" \
	"$code $(inits)"

# ---- kill -9 with a full pool: claimed sandboxes are adopted, pooled ones end ----
for id in "$L" "$C" "$P" "$S" "$S2" "$E1" "$E2" "$E3" "$W"; do api DELETE "/v1/sandboxes/$id" >/dev/null; done
X=$(create '{"env": {"KEEP": "me"}}')
wait_ready 0 2
wait_ready 1 2
wait_ready 2 2
sleep 0.2
expect_eq "before kill -9: one claimed and six pooled sandboxes (three templates)" 7 "$(inits)"
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
for _ in $(seq 100); do [ "$(inits)" -le 1 ] && break; sleep 0.05; done
expect_eq "kill -9: the pooled sandboxes end with paddockd, the claimed one lives" 1 "$(inits)"
start_daemon || not_ok "paddockd restarts"
expect_eq "restart: the claimed sandbox is adopted with its environment" "me" "$(run "$X" 'echo $KEEP')"
expect_eq "restart: no reconnect socket of a pooled sandbox is left" \
	"$(ls "$STATE/s" | grep -c .)" "1"
api DELETE "/v1/sandboxes/$X" >/dev/null
stop_daemon
for _ in $(seq 100); do [ "$(inits)" -eq 0 ] && break; sleep 0.05; done
expect_eq "SIGTERM without a pool to keep: every pooled sandbox ends" 0 "$(inits)"

# ---- memory pressure: the pool gives its sandboxes back, and refills once it is over ----
for bad in 100% -1% abc 0 12Q; do
	"$PADDOCKD" --socket "$SOCK" --state-dir "$STATE" --pool 1 --pool-min-available "$bad" \
		>/dev/null 2>"$T_TMP/bad.err"
	code=$?
	expect_match "--pool-min-available $bad is refused naming the flag" \
		"^2 paddockd: --pool-min-available: expected a share of memory" "$code $(cat "$T_TMP/bad.err")"
done
avail() { awk '$1 == "MemAvailable:" { print $2 }' /proc/meminfo; }
# pressure begins 512 MiB below what is available now; a process then takes 1.5 GiB
start_daemon --pool 3 --pool-min-available "$(($(avail) - 512 * 1024))K" ||
	not_ok "paddockd starts with --pool-min-available"
wait_ready 0 3
expect_eq "with memory to spare, the pool fills: 3 ready" 3 "$(metric 'paddock_pool_ready{template="0"}')"
$PY -c 'import sys, time; b = b"x" * (1536 << 20); print("held", flush=True); time.sleep(60)' >"$T_TMP/hog" &
HOG=$!
for _ in $(seq 100); do grep -q held "$T_TMP/hog" && break; sleep 0.1; done
for _ in $(seq 100); do [ "$(metric 'paddock_pool_ready{template="0"}')" = 0 ] && break; sleep 0.1; done
expect_eq "under pressure the pool gives every ready sandbox back" "0 3" \
	"$(metric 'paddock_pool_ready{template="0"}') $(metric paddock_pool_given_back_total)"
for _ in $(seq 100); do [ "$(inits)" -eq 0 ] && break; sleep 0.05; done
expect_eq "...and their inits end" 0 "$(inits)"
low=$(metric paddock_pool_low_memory_total)
expect_match "...counted in paddock_pool_low_memory_total" "^[1-9]" "$low"
N=$(create '{}')
expect_eq "a create under pressure is made cold, and works" "ok" "$(run "$N" 'echo ok')"
sleep 1.5
expect_eq "...and the pool does not refill while pressure lasts" 0 "$(metric 'paddock_pool_ready{template="0"}')"
kill "$HOG"
wait "$HOG" 2>/dev/null
wait_ready 0 3
expect_eq "pressure over: the pool refills by itself" 3 "$(metric 'paddock_pool_ready{template="0"}')"

# ---- POST /v1/run: create (from the pool), exec and delete in one request ----
listed() { j "$(api GET /v1/sandboxes)" 'len(d["sandboxes"])'; }
before=$(listed)
hits=$(metric paddock_pool_hits_total)
r=$(api POST /v1/run -d '{"sandbox": {"env": {"TASK": "once"}}, "exec": {"cmd": "echo $TASK; echo e >&2; exit 3"}}')
expect_eq "run: one request answers the command's output and result" "once|e|3" \
	"$(j "$r" 'd["stdout"].strip()+"|"+d["stderr"].strip()+"|"+str(d["result"]["exit_code"])')"
expect_eq "...made from the pool" "$((hits + 1))" "$(metric paddock_pool_hits_total)"
id=$(j "$r" 'd["sandbox"]')
for _ in $(seq 100); do [ "$(listed)" = "$before" ] && break; sleep 0.05; done
expect_eq "...and the sandbox is removed after it answered" "not_found" \
	"$(j "$(api GET "/v1/sandboxes/$id")" 'd["error"]["code"]')"
r=$(api POST /v1/run -d '{"exec": {"argv": ["true"], "background": true}}')
expect_eq "run: a background command is refused, naming the field" "invalid background" \
	"$(j "$r" 'd["error"]["code"]+" "+d["error"]["field"]')"
r=$(api POST /v1/run -d '{"exec": {"argv": []}}')
expect_eq "run: a bad exec body is the exec's error" "argv" "$(j "$r" 'd["error"]["field"]')"
timeout 1 curl -s --unix-socket "$SOCK" -X POST http://x/v1/run -d '{"exec": {"argv": ["sleep", "60"]}}' >/dev/null
for _ in $(seq 100); do [ "$(listed)" = "$before" ] && break; sleep 0.05; done
expect_eq "run: a client that goes away ends the command and its sandbox" "$before" "$(listed)"

api DELETE "/v1/sandboxes/$N" >/dev/null
stop_daemon
for _ in $(seq 100); do [ "$(inits)" -eq 0 ] && break; sleep 0.05; done
expect_eq "nothing is left" 0 "$(inits)"
finish
