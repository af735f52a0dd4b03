#!/bin/bash
# Stop and start (docs/api.md "Stop and start"): a sandbox of an image is stopped (its
# processes end, its writable layer and /workspace kept as an image of the store), paddockd
# is killed with -9 and restarted, and the start brings back the same id, spec, metadata,
# network policy and files, with fresh processes; secrets are read again at the start; a
# second stop and start stack on the first; deleting a stopped (or restarted) sandbox
# removes what was kept; bad ids, a sandbox on the host's /usr and a create naming a kept
# image each get a clear error. Images are made here (mkimage.py): nothing is downloaded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/image-lib.sh"

PY=/usr/bin/python3
SOCK=$T_TMP/sock
STATE=$T_TMP/st
cleanup() {
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$T_TMP"
}
trap cleanup EXIT
# no --destroy-on-exit: a restart adopts the sandboxes (stop_all deletes them at the end)
DAEMON_ARGS=()

kill9() { kill -9 "$DPID"; wait "$DPID" 2>/dev/null; DPID=; }
# kept images of sandbox ID in the store (GET /v1/images): their names, one a line
kept_images() {
	j "$(body_of "$(api GET /v1/images)")" \
		'"\n".join(n for i in d["images"] for n in i["names"] if "paddock-stopped/'"$1"':" in n)'
}
# the identity a start must keep: spec, metadata, ttl, network policy
identity() {
	j "$(body_of "$(api GET "/v1/sandboxes/$1")")" \
		'json.dumps([d["id"], d["spec"], d["metadata"], d["ttl_s"], d["created_at"], d["expires_at"]], sort_keys=True)'
}

B=$T_TMP/build
mkdir -p "$B"
$PY "$MKIMAGE" root "$B/root" sh cat ls echo sleep hostname rm >/dev/null
$PY "$MKIMAGE" layout "$B/oci" --layer "$B/root" --env PATH=/usr/bin:/bin >/dev/null
out=$("$PADDOCK" image import "$B/oci" --name test/base:1 2>&1)
expect_match "the base image is imported" "^imported docker.io/test/base:1" "$out"
echo first-value >"$T_TMP/secret"
chmod 644 "$T_TMP/secret"

start_daemon || { not_ok "paddockd starts"; finish; }
ok "paddockd starts"

# ---- a sandbox with state in its root and /workspace, and a process running ----
SPEC='{"image":"test/base:1","user":"root","hostname":"keeper","metadata":{"job":"42"},
 "network":{"mode":"allowlist","allow":["kept.test"]},
 "secrets":[{"name":"TOKEN","source":"file:'"$T_TMP"'/secret","hosts":["kept.test"]}]}'
S=$(create "$SPEC")
out=$(sh_in "$S" 'echo root-state > /etc/kept && echo ws-state > /workspace/w &&
	echo home-state > /home/user/h &&
	rm /etc/motd 2>/dev/null; echo done')
expect_eq "the sandbox writes to its root, /workspace and /home/user" "done" "$out"
r=$(api POST "/v1/sandboxes/$S/exec" -d '{"argv":["sleep","6007"],"background":true}')
expect_eq "a background process runs" 201 "$(status_of "$r")"
before=$(identity "$S")
net_before=$(j "$(body_of "$(api GET "/v1/sandboxes/$S/network")")" 'json.dumps(d, sort_keys=True)')
expect_match "its process is on the host" "[0-9]" "$(own_pids "^sleep 6007")"

# ---- stop ----
r=$(api POST "/v1/sandboxes/$S/stop")
expect_eq "stop: 200" 200 "$(status_of "$r")"
expect_eq "stop: state stopped, with its kept image" "stopped True" \
	"$(j "$(body_of "$r")" 'd["state"], "paddock-stopped/'"$S"':" in d["kept_image"]' | tr -d "(),'")"
expect_eq "a stopped sandbox has none of its processes" "" "$(own_pids '^sleep 6007')"
r=$(api POST "/v1/sandboxes/$S/stop")
expect_eq "stop of a stopped sandbox: 200, still stopped" "200 stopped" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
r=$(api POST "/v1/sandboxes/$S/exec" -d '{"argv":["true"]}')
expect_eq "exec in a stopped sandbox: 409 naming state" "409 state" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
expect_eq "the kept image is in the store" 1 "$(kept_images "$S" | grep -c .)"
out=$("$PADDOCK" image ls 2>&1)
expect_match "paddock image ls lists it" "paddock-stopped/$S" "$out"

# ---- kill -9 and restart: still stopped, same identity ----
kill9
start_daemon || { not_ok "paddockd restarts"; finish; }
r=$(api GET "/v1/sandboxes/$S")
expect_eq "after kill -9 and a restart the sandbox is listed stopped" "200 stopped" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
expect_eq "and keeps its identity (id, spec, metadata, TTL)" "$before" "$(identity "$S")"

# ---- start: secrets are read again ----
mv "$T_TMP/secret" "$T_TMP/secret.away"
r=$(api POST "/v1/sandboxes/$S/start")
expect_match "start with its secret's file gone fails naming the secret" \
	"^4[0-9][0-9] secrets" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
expect_eq "and the sandbox stays stopped" stopped \
	"$(j "$(body_of "$(api GET "/v1/sandboxes/$S")")" 'd["state"]')"
mv "$T_TMP/secret.away" "$T_TMP/secret"
r=$(api POST "/v1/sandboxes/$S/start")
expect_eq "start: 200 running" "200 running" "$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
[ "$(status_of "$r")" = 200 ] || diag "$r"
expect_eq "same id, spec, metadata, TTL after the start" "$before" "$(identity "$S")"
expect_eq "same network policy" "$net_before" \
	"$(j "$(body_of "$(api GET "/v1/sandboxes/$S/network")")" 'json.dumps(d, sort_keys=True)')"
expect_eq "its files are kept (root, /workspace, /home/user), its hostname too" \
	"root-state ws-state home-state keeper gone" \
	"$(sh_in "$S" 'cat /etc/kept /workspace/w /home/user/h; hostname; [ -e /etc/motd ] || echo gone' | awk NF | paste -sd' ' -)"
expect_eq "its processes are fresh: the old one is not there" "" "$(own_pids '^sleep 6007')"
expect_eq "its secret's placeholder is there" yes \
	"$(sh_in "$S" '[ -n "$TOKEN" ] && echo yes')"
r=$(api POST "/v1/sandboxes/$S/start")
expect_eq "start of a running sandbox: 200, still running" "200 running" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"

# ---- a second stop and start stack on the first; one kept image at a time ----
out=$(sh_in "$S" 'echo second > /workspace/second && echo done')
r=$(api POST "/v1/sandboxes/$S/stop")
expect_eq "a second stop: 200" 200 "$(status_of "$r")"
expect_eq "one kept image, the newest" 1 "$(kept_images "$S" | grep -c .)"
r=$(api POST "/v1/sandboxes/$S/start")
expect_eq "a second start: 200" 200 "$(status_of "$r")"
expect_eq "both stops' files are there" "root-state ws-state second" \
	"$(sh_in "$S" 'cat /etc/kept /workspace/w /workspace/second' | awk NF | paste -sd' ' -)"

# ---- kill -9 while it runs again: adopted, then stopped and started by the new paddockd ----
kill9
start_daemon || { not_ok "paddockd restarts"; finish; }
r=$(api POST "/v1/sandboxes/$S/stop")
expect_eq "a restarted paddockd stops the adopted sandbox" "200 stopped" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"

# ---- delete: what was kept goes ----
r=$(api DELETE "/v1/sandboxes/$S?wait=1")
expect_eq "delete of a stopped sandbox: 204" 204 "$(status_of "$r")"
expect_eq "its kept image is gone" "" "$(kept_images "$S")"
expect_eq "and it is gone" 404 "$(status_of "$(api GET "/v1/sandboxes/$S")")"

S2=$(create '{"image":"test/base:1"}')
sh_in "$S2" 'echo x > /workspace/x' >/dev/null
api POST "/v1/sandboxes/$S2/pause" >/dev/null
r=$(api POST "/v1/sandboxes/$S2/stop")
expect_eq "stop of a paused sandbox: 200 stopped" "200 stopped" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
r=$(api POST "/v1/sandboxes/$S2/start")
expect_eq "...and its start: running, its files there" "200 running x" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]') $(sh_in "$S2" 'cat /workspace/x')"
expect_eq "a started sandbox runs on its kept image" 1 "$(kept_images "$S2" | grep -c .)"
r=$(api DELETE "/v1/sandboxes/$S2?wait=1")
expect_eq "delete of a started sandbox: 204, and its kept image is gone" "204 " \
	"$(status_of "$r") $(kept_images "$S2")"

# ---- the TTL runs on while stopped: at its end the sandbox and its kept image go ----
E=$(create '{"image":"test/base:1","ttl_s":2}')
api POST "/v1/sandboxes/$E/stop" >/dev/null
expect_eq "a stopped sandbox with a short TTL keeps an image" 1 "$(kept_images "$E" | grep -c .)"
for _ in $(seq 60); do
	[ "$(status_of "$(api GET "/v1/sandboxes/$E")")" = 404 ] && break
	sleep 0.1
done
expect_eq "its TTL ends it while stopped, and its kept image goes" "404 " \
	"$(status_of "$(api GET "/v1/sandboxes/$E")") $(kept_images "$E")"

# ---- bad input ----
expect_eq "stop of an unknown id: 404" 404 "$(status_of "$(api POST /v1/sandboxes/sb_aaaaaaaaaaaa/stop)")"
expect_eq "start of an unknown id: 404" 404 "$(status_of "$(api POST /v1/sandboxes/sb_aaaaaaaaaaaa/start)")"
expect_eq "start of a malformed id: 404" 404 "$(status_of "$(api POST /v1/sandboxes/nope/start)")"
H=$(create '{}')
r=$(api POST "/v1/sandboxes/$H/stop")
expect_eq "stop of a sandbox on the host's /usr: 409 naming image" "409 image" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
expect_eq "and it runs on" running "$(j "$(body_of "$(api GET "/v1/sandboxes/$H")")" 'd["state"]')"
r=$(api POST "/v1/sandboxes/$H/stop" -d '{"x":1}')
expect_eq "stop with a field: 400 naming it" "400 x" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST /v1/sandboxes -d '{"image":"paddock-stopped/'"$H"':1"}')
expect_eq "a create naming a kept image: 403 naming image" "403 image" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
C=$(create '{"image":"test/base:1"}')
r=$(api POST "/v1/sandboxes/$C/snapshot" -d '{"name":"paddock-stopped/'"$C"':1"}')
expect_eq "a snapshot named as a kept image: 400 naming name" "400 name" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
api DELETE "/v1/sandboxes/$C?wait=1" >/dev/null

# ---- the CLI ----
C=$(create '{"image":"test/base:1"}')
out=$("$PADDOCK" stop --socket "$SOCK" "$C" 2>&1)
expect_eq "paddock stop ID" "$C stopped" "$out"
out=$("$PADDOCK" start --socket "$SOCK" "$C" 2>&1)
expect_eq "paddock start ID" "$C running" "$out"
out=$("$PADDOCK" start --socket "$SOCK" sb_aaaaaaaaaaaa 2>&1)
st=$?
expect_eq "paddock start of an unknown id: exit 1" 1 "$st"

# ---- E2B's connect starts a sandbox stopped through the API (E2B itself has no stop) ----
stop_all
start_daemon --e2b 127.0.0.1:0 || { not_ok "paddockd --e2b starts"; finish; }
port=$(e2b_port)
X=$(create '{"image":"test/base:1"}')
sh_in "$X" 'echo e2b > /workspace/e' >/dev/null
api POST "/v1/sandboxes/$X/stop" >/dev/null
code=$(curl -s -o "$T_TMP/connect.json" -w '%{http_code}' -H 'X-API-Key: e2b_test' \
	-H 'Content-Type: application/json' -d '{"timeout": 120}' \
	"http://127.0.0.1:$port/v2/sandboxes/$X/connect")
expect_eq "E2B connect of a stopped sandbox: 201, the same id" "201 $X" \
	"$code $(j "$(cat "$T_TMP/connect.json")" 'd["sandboxID"]')"
expect_eq "...it runs, its files there" "running e2b" \
	"$(j "$(body_of "$(api GET "/v1/sandboxes/$X")")" 'd["state"]') $(sh_in "$X" 'cat /workspace/e')"

# ---- a sandbox from the warm pool: its /workspace is a mount of its own, kept all the same ----
stop_all
start_daemon --pool 1 || { not_ok "paddockd starts with --pool 1"; finish; }
P1=$(create '{"image":"test/base:1"}') # a miss: its template is pooled from then on
for _ in $(seq 200); do
	[ "$(metric 'paddock_pool_ready{template="1"}')" = 1 ] && break
	sleep 0.05
done
P=$(create '{"image":"test/base:1"}')
expect_eq "a sandbox of the image from the pool" 1 "$(metric paddock_pool_hits_total)"
sh_in "$P" 'echo pooled > /workspace/p; echo home > /home/user/h' >/dev/null
r=$(api POST "/v1/sandboxes/$P/stop")
expect_eq "a pooled sandbox stops" "200 stopped" "$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
r=$(api POST "/v1/sandboxes/$P/start")
expect_eq "...and starts with its /workspace and /home/user" "200 pooled home" \
	"$(status_of "$r") $(sh_in "$P" 'cat /workspace/p /home/user/h' | awk NF | paste -sd' ' -)"
api DELETE "/v1/sandboxes/$P1?wait=1" >/dev/null

# ---- a full store (as root: a small tmpfs): the stop fails, the sandbox runs on ----
stop_all
SMALL=$T_TMP/small
if [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$SMALL"
	mount -t tmpfs -o size=12m tmpfs "$SMALL"
	trap 'cleanup; mountpoint -q "$SMALL" 2>/dev/null && umount "$SMALL"; rm -rf "$T_TMP"' EXIT
	export PADDOCK_IMAGE_STORE=$SMALL/store
	"$PADDOCK" image import "$B/oci" --name test/base:1 >/dev/null
	start_daemon || { not_ok "paddockd starts"; finish; }
	D=$(create '{"image":"test/base:1","user":"root","limits":{"disk":"64M"}}')
	# ~20 MB of the image's libc in the writable layer: more than the store has room for
	sh_in "$D" 'for L in /usr/lib/*/libc.so.6; do :; done
		for i in 1 2 3 4 5 6 7 8 9 10; do cat "$L" >> /var/big; done
		echo keep > /workspace/keep' >/dev/null
	r=$(api POST "/v1/sandboxes/$D/stop")
	expect_eq "a stop into a full store: 429 naming ENOSPC" "429 ENOSPC" \
		"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["errno"]')"
	expect_eq "...nothing is kept in the store" "" "$(kept_images "$D")"
	expect_eq "...and the sandbox runs on, its files intact" "running keep" \
		"$(j "$(body_of "$(api GET "/v1/sandboxes/$D")")" 'd["state"]') $(sh_in "$D" 'cat /workspace/keep')"
	sh_in "$D" 'rm -f /var/big' >/dev/null
	r=$(api POST "/v1/sandboxes/$D/stop")
	expect_eq "...with room again, the stop works" "200 stopped" \
		"$(status_of "$r") $(j "$(body_of "$r")" 'd["state"]')"
	stop_all
	umount "$SMALL"
else
	ok "# SKIP a full store needs a tmpfs of its own (root)"
fi

finish
