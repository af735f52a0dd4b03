#!/bin/bash
# Snapshots and fork (docs/images.md "Snapshots"): a sandbox of an image is snapshot through
# paddockd; a sandbox created from the snapshot sees its files (a whiteout, an opaque
# directory, hard links, a symlink); a fork is an independent copy;
# snapshots survive a paddockd restart (and a restarted paddockd can snapshot an adopted
# sandbox); bad ids, bad names, a sandbox that has ended, a sandbox on the host's /usr, a full
# store and removing a snapshot in use each get a clear error and lose nothing. Images are
# made here from this machine's files (mkimage.py): nothing is downloaded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/image-lib.sh"

PY=/usr/bin/python3
SOCK=$T_TMP/sock
STATE=$T_TMP/st
SMALL=$T_TMP/small
cleanup() {
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	mountpoint -q "$SMALL" 2>/dev/null && umount "$SMALL"
	rm -rf "$T_TMP"
}
trap cleanup EXIT
# no --destroy-on-exit: a restart adopts the sandboxes (stop_all deletes them at the end)
DAEMON_ARGS=()

# flat: the non-empty lines of stdin on one line, space-separated
flat() { awk 'NF' | paste -sd' ' -; }
store_state() { (cd "$PADDOCK_IMAGE_STORE" && find images layers blobs tmp -maxdepth 1 | sort | md5sum); }

# ---- the base image: a small root, and a directory to be made opaque ----
B=$T_TMP/build
mkdir -p "$B"
$PY "$MKIMAGE" root "$B/root" sh cat ls id touch mkdir rm stat readlink ln chmod sleep wc grep >/dev/null
mkdir -p "$B/root/var/data" "$B/root/usr/local/lib"
echo old >"$B/root/var/data/old"
echo base >"$B/root/etc/motd"
$PY "$MKIMAGE" layout "$B/oci" --layer "$B/root" --env PATH=/usr/bin:/bin >/dev/null
out=$("$PADDOCK" image import "$B/oci" --name test/base:1 2>&1)
expect_match "the base image is imported" "^imported docker.io/test/base:1" "$out"

start_daemon || { not_ok "paddockd starts"; finish; }
ok "paddockd starts"

# ---- snapshot: what a parent wrote, seen by a sandbox made from it ----
P=$(create '{"image":"test/base:1","user":"root"}')
out=$(sh_in "$P" 'mkdir -p /usr/local/lib/python3/site-packages/tool &&
	echo "VERSION = 1" > /usr/local/lib/python3/site-packages/tool/__init__.py &&
	echo "#!/bin/sh" > /usr/local/bin-tool && chmod 755 /usr/local/bin-tool &&
	ln /usr/local/lib/python3/site-packages/tool/__init__.py /usr/local/lib/linked.py &&
	ln -s /etc/shadow /usr/local/lib/escape &&
	rm /etc/motd && rm -r /var/data && mkdir /var/data && echo new > /var/data/new &&
	echo ws > /workspace/w && echo done')
expect_eq "the parent installs a package, and removes and replaces files of its image" "done" "$out"
r=$(api POST "/v1/sandboxes/$P/snapshot" -d '{"name":"work:1"}')
expect_eq "POST .../snapshot answers 201" 201 "$(status_of "$r")"
img=$(body_of "$r")
expect_eq "...with the image: name, id, sandbox, two layers, sizes" \
	"docker.io/library/work:1 True $P 2 True True" \
	"$(j "$img" 'd["name"], d["id"].startswith("sha256:"), d["sandbox"], len(d["layers"]), d["size"] > d["layer_size"] > 0, "created_at" in d' | tr -d "(),'")"
SNAP_ID=$(j "$img" 'd["id"]')
out=$("$PADDOCK" image ls)
expect_match "paddock image ls lists the snapshot" "docker.io/library/work:1 +${SNAP_ID:7:12}" "$out"
expect_eq "the parent runs on after its snapshot (resumed)" ok "$(sh_in "$P" 'echo ok')"

C=$(create '{"image":"work:1","user":"root"}')
out=$(sh_in "$C" 'cat /usr/local/lib/python3/site-packages/tool/__init__.py;
	stat -c "%h %A" /usr/local/lib/linked.py /usr/local/bin-tool; readlink /usr/local/lib/escape;
	[ -e /etc/motd ] || echo motd-gone; ls /var/data; ls /workspace | wc -l')
expect_eq "create from the snapshot sees its files: links, whiteout, opaque dir, not the workspace" \
	"VERSION = 1
2 -rw-r--r--
1 -rwxr-xr-x
/etc/shadow
motd-gone
new
0" "$out"
run_sb out st --image work:1 -- cat /usr/local/lib/python3/site-packages/tool/__init__.py
expect_eq "paddock run --image SNAPSHOT sees them too" "VERSION = 1" "$out"

# ---- the workspace, when asked ----
r=$(api POST "/v1/sandboxes/$P/snapshot" -d '{"name":"work:ws","include_workspace":true}')
expect_eq "a snapshot with include_workspace: 201" 201 "$(status_of "$r")"
W=$(create '{"image":"work:ws"}')
expect_eq "...a sandbox from it has the workspace, the sandbox user's to write" "ws 1000 ok" \
	"$(sh_in "$W" 'cat /workspace/w; stat -c %u /workspace; echo more > /workspace/new && echo ok' | flat)"
r=$(api POST "/v1/sandboxes/$P/snapshot" -d '{"name":"work:ws2","include_workspace":"yes"}')
expect_eq "include_workspace not a boolean: 400 naming it" "400 include_workspace" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
out=$("$PADDOCK" fork --socket "$SOCK" --workspace "$P" 2>&1)
expect_eq "paddock fork --workspace: the fork has the workspace" ws "$(sh_in "$out" 'cat /workspace/w')"

# ---- fork: an independent copy ----
r=$(api POST "/v1/sandboxes/$P/fork" -d '{"name":"work:fork"}')
expect_eq "POST .../fork answers 201" 201 "$(status_of "$r")"
F=$(j "$(body_of "$r")" 'd["id"]')
expect_eq "...with the new sandbox, of the parent's spec on the snapshot" \
	"running root $(j "$(body_of "$r")" 'd["snapshot"]["id"]')" \
	"$(j "$(body_of "$r")" 'd["state"], d["spec"]["user"], d["spec"]["image"]' | tr -d "(),'")"
sh_in "$F" 'echo fork > /usr/local/lib/only-fork' >/dev/null
sh_in "$P" 'echo parent > /usr/local/lib/only-parent; echo 2 > /usr/local/lib/python3/site-packages/tool/__init__.py' >/dev/null
expect_eq "the fork has the parent's files, not the parent's later writes" \
	"VERSION = 1 only-fork" "$(sh_in "$F" 'cat /usr/local/lib/python3/site-packages/tool/__init__.py; ls /usr/local/lib | grep only' | flat)"
expect_eq "the parent has none of the fork's writes" \
	"2 only-parent" "$(sh_in "$P" 'cat /usr/local/lib/python3/site-packages/tool/__init__.py; ls /usr/local/lib | grep only' | flat)"
out=$("$PADDOCK" fork --socket "$SOCK" "$F" 2>&1)
expect_match "paddock fork ID prints the new sandbox's id" "^sb_[a-z0-9]{12}$" "$out"
F2=$out
expect_eq "...which has the fork's files" "fork" "$(sh_in "$F2" 'cat /usr/local/lib/only-fork')"
out=$("$PADDOCK" snapshot --socket "$SOCK" "$F2" work:cli 2>&1)
expect_match "paddock snapshot ID NAME prints the image" "^docker.io/library/work:cli sha256:[0-9a-f]{64} [0-9]+$" "$out"

# ---- bad input: clear errors, nothing changed ----
before=$(store_state)
r=$(api POST "/v1/sandboxes/sb_aaaaaaaaaaaa/snapshot" -d '{"name":"x"}')
expect_eq "an unknown id: 404 naming the id" "404 id" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST "/v1/sandboxes/$P/snapshot" -d '{"name":"Bad Name!"}')
expect_eq "a bad name: 400 naming the field" "400 name" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
expect_match "...saying the grammar" "lowercase|\[a-z0-9" "$(j "$(body_of "$r")" 'd["error"]["message"]')"
r=$(api POST "/v1/sandboxes/$P/snapshot" -d '{}')
expect_eq "no name: 400 naming the field" "400 name" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
r=$(api POST "/v1/sandboxes/$P/snapshot" -d '{"name":"x","workspace":true}')
expect_eq "an unknown field: 400" 400 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$P/snapshot" -d '{"name":"x@sha256:0000000000000000000000000000000000000000000000000000000000000000"}')
expect_eq "a name with a digest: 400" "400 name" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
H=$(create '{}')
r=$(api POST "/v1/sandboxes/$H/snapshot" -d '{"name":"host"}')
expect_eq "a sandbox on the host's /usr: 422 naming image" "422 image" "$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["field"]')"
# a sandbox whose init died (a crash, a limit): E's init is paddockd's newest child
E=$(create '{"image":"test/base:1"}')
kill -9 "$(pgrep -n -P "$DPID" -x paddock-init)"
for _ in $(seq 50); do
	[ "$(j "$(body_of "$(api GET "/v1/sandboxes/$E")")" 'd["state"]')" = stopped ] && break
	sleep 0.1
done
r=$(api POST "/v1/sandboxes/$E/snapshot" -d '{"name":"ended"}')
expect_eq "a sandbox that has ended: 409" 409 "$(status_of "$r")"
expect_match "...saying so" "has ended or is ending" "$(body_of "$r")"
expect_eq "bad requests changed nothing in the store" "$before" "$(store_state)"
expect_eq "...and the parent runs on" ok "$(sh_in "$P" 'echo ok')"

# ---- removal of a snapshot in use ----
r=$(api DELETE "/v1/images/work:1")
expect_eq "DELETE of a snapshot a sandbox runs on: 409" 409 "$(status_of "$r")"
expect_match "...saying it is in use" "in use by a running sandbox" "$(body_of "$r")"
out=$("$PADDOCK" image rm work:1 2>&1)
expect_match "paddock image rm says the same" "in use by a running sandbox" "$out"
expect_eq "...and C still reads it" "VERSION = 1" "$(sh_in "$C" 'cat /usr/local/lib/python3/site-packages/tool/__init__.py')"

# ---- a paddockd restart: snapshots stay, adopted sandboxes can be snapshot ----
kill -TERM "$DPID"
wait "$DPID"
start_daemon || { not_ok "paddockd restarts"; finish; }
r=$(api GET /v1/images)
expect_eq "after a restart GET /v1/images lists the snapshots" "True True" \
	"$(j "$(body_of "$r")" '"docker.io/library/work:1" in [i["name"] for i in d["images"]], "docker.io/library/work:fork" in [i["name"] for i in d["images"]]' | tr -d "(),'")"
N=$(create '{"image":"work:1"}')
expect_eq "...and a sandbox made from one sees its files" "VERSION = 1" \
	"$(sh_in "$N" 'cat /usr/local/lib/python3/site-packages/tool/__init__.py')"
r=$(api DELETE "/v1/images/work:1")
expect_eq "...and a sandbox it adopted holds its image again: DELETE is 409" 409 "$(status_of "$r")"
r=$(api POST "/v1/sandboxes/$P/snapshot" -d '{"name":"work:adopted"}')
expect_eq "a sandbox adopted by the restarted paddockd can be snapshot" 201 "$(status_of "$r")"
r=$(api DELETE "/v1/sandboxes/$N?wait=1")
r=$(api DELETE "/v1/sandboxes/$C?wait=1")
r=$(api DELETE "/v1/images/docker.io%2Flibrary%2Fwork%3A1")
expect_eq "once no sandbox runs on it, DELETE /v1/images/REF removes it (204)" 204 "$(status_of "$r")"
r=$(api GET "/v1/images/work:fork")
expect_eq "...and the fork's snapshot, sharing its base layer, stays" "200 2" \
	"$(status_of "$r") $(j "$(body_of "$r")" 'len(d["layers"])')"

# ---- a template built with setup commands: its files are a layer of its image ----
pt() { "$PADDOCK" template --socket "$SOCK" "$@"; }
printf '{"image":"test/base:1","user":"root","env":{"TOOL":"hammer"}}' >"$T_TMP/tb.json"
n_before=$(j "$(body_of "$(api GET /v1/sandboxes)")" 'len(d["sandboxes"])')
out=$(pt build tb "$T_TMP/tb.json" --setup 'mkdir -p /usr/local/tool && echo v1 > /usr/local/tool/version' \
	--setup 'echo two > /usr/local/tool/second' 2>"$T_TMP/build.err")
expect_eq "paddock template build: exit 0, the template's name" "0 tb" "$? $out"
expect_match "...says the image it made" "image templates/tb:[0-9]+ \\(sha256:" "$(cat "$T_TMP/build.err")"
expect_match "...the image is in the store" "docker.io/templates/tb:" "$("$PADDOCK" image ls)"
T=$(create '{"template":"tb"}')
expect_eq "a sandbox of the template has the setup's files and the spec's env" "v1 two hammer" \
	"$(sh_in "$T" 'cat /usr/local/tool/version /usr/local/tool/second; echo $TOOL' | flat)"
api DELETE "/v1/sandboxes/$T?wait=1" >/dev/null
expect_eq "...and the builder's sandbox is gone" "$n_before" \
	"$(j "$(body_of "$(api GET /v1/sandboxes)")" 'len(d["sandboxes"])')"
out=$(pt build tb2 "$T_TMP/tb.json" --setup 'echo one' --setup 'echo broke >&2; exit 3' 2>&1)
expect_eq "a setup command that fails: exit 1" 1 "$?"
expect_match "...naming it and its status, with its output" "broke.*--setup 2 \\('echo broke >&2; exit 3'\\) ended with status 3" "$(echo $out)"
expect_match "...and no template was stored" "no template 'tb2'" "$(pt show tb2 2>&1)"
expect_eq "...nor a sandbox left" "$n_before" "$(j "$(body_of "$(api GET /v1/sandboxes)")" 'len(d["sandboxes"])')"
printf '{"env":{"A":"1"}}' >"$T_TMP/noimage.json"
out=$(pt build tb3 "$T_TMP/noimage.json" --setup true 2>&1)
expect_match "a build whose spec names no image is refused" "must name an image" "$out"
out=$(pt build tb3 "$T_TMP/tb.json" 2>&1)
expect_match "a build without --setup is refused, pointing at put" "at least one --setup" "$out"

# ---- a full store (as root: a small tmpfs): the snapshot fails, nothing is lost ----
stop_all
if [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$SMALL"
	mount -t tmpfs -o size=12m tmpfs "$SMALL"
	PADDOCK_IMAGE_STORE=$SMALL/store "$PADDOCK" image import "$B/oci" --name test/base:1 >/dev/null
	PADDOCK_IMAGE_STORE=$SMALL/store start_daemon || { not_ok "paddockd starts"; finish; }
	export PADDOCK_IMAGE_STORE=$SMALL/store
	D=$(create '{"image":"test/base:1","user":"root","limits":{"disk":"64M"}}')
	# ~20 MB of the image's libc in the writable layer: more than the store has room for
	sh_in "$D" 'for f in /lib/*/libc.so.6 /usr/lib/*/libc.so.6; do [ -f "$f" ] && L=$f; done
		i=0; while [ $i -lt 10 ]; do cat "$L" >> /usr/local/lib/big; i=$((i+1)); done
		echo keep > /usr/local/lib/keep' >/dev/null
	before=$(store_state)
	r=$(api POST "/v1/sandboxes/$D/snapshot" -d '{"name":"full"}')
	expect_eq "a snapshot into a full store: 429 naming ENOSPC" "429 ENOSPC" \
		"$(status_of "$r") $(j "$(body_of "$r")" 'd["error"]["errno"]')"
	expect_eq "...the store is as it was (no layer, record or temporary file)" "$before" "$(store_state)"
	expect_eq "...and the sandbox runs on, its files intact" keep "$(sh_in "$D" 'cat /usr/local/lib/keep')"
	sh_in "$D" 'rm -f /usr/local/lib/big' >/dev/null
	r=$(api POST "/v1/sandboxes/$D/snapshot" -d '{"name":"full"}')
	expect_eq "...with room again, the same snapshot works" 201 "$(status_of "$r")"
	stop_all
	umount "$SMALL"
else
	ok "# SKIP a full store needs a tmpfs of its own (root)"
fi

finish
