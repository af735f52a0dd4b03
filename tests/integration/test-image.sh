#!/bin/bash
# Images end to end (docs/images.md): made here from this machine's own files, pushed to a
# registry on 127.0.0.1 with skopeo, pulled, imported (OCI layout, its tar, a docker
# archive), run with --image, whiteouts and opaque directories applied, the image's config
# as defaults, removed; hostile images and bad references refused with clear errors, and
# nothing written outside the store.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/image-lib.sh"
need_image_tools htpasswd zstd
trap 'stop_servers; rm -rf "$T_TMP"' EXIT

B=$T_TMP/build
mkdir -p "$B"
# layer 1: a root with a shell and a few tools; etc/removeme and data/old, both gone in layer 2
python3 "$MKIMAGE" root "$B/root1" sh cat ls id touch mkdir rm stat readlink chown sleep env wc grep
mkdir -p "$B/root1/data" "$B/root1/app"
echo one >"$B/root1/etc/motd"
echo bye >"$B/root1/etc/removeme"
echo old >"$B/root1/data/old"
# layer 2, as a tar of its own: a whiteout, an opaque directory, a changed file
python3 - "$B/layer2.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    def add(name, data=None, kind=tarfile.REGTYPE, mode=0o644):
        ti = tarfile.TarInfo(name); ti.type = kind; ti.mode = mode
        if data is not None:
            ti.size = len(data); t.addfile(ti, io.BytesIO(data))
        else:
            t.addfile(ti)
    add("etc", kind=tarfile.DIRTYPE, mode=0o755)
    add("etc/motd", b"two\n")
    add("etc/.wh.removeme", b"")
    add("data", kind=tarfile.DIRTYPE, mode=0o755)
    add("data/.wh..wh..opq", b"")
    add("data/new", b"new\n")
PY
python3 "$MKIMAGE" layout "$B/oci" --layer "$B/root1" --layer-tar "$B/layer2.tar" \
	--workdir /app --env PATH=/usr/bin:/bin --env GREETING=from-image \
	--cmd '["sh","-c","echo default command; pwd"]' >/dev/null
python3 "$MKIMAGE" layout "$B/oci-zstd" --zstd --layer "$B/root1" --ref test/zstd:1 >/dev/null
chmod -R a+rX "$B"

start_registry reg || { not_ok "registry starts"; finish; }
REG_OPEN=$REG
push "$B/oci" "$REG/test/base:1" && ok "skopeo pushed a gzip image" || not_ok "skopeo pushed a gzip image"
push "$B/oci-zstd" "$REG/test/zstd:1" && ok "...and a zstd one" || not_ok "...and a zstd one"

# ---- pull ----
out=$("$PADDOCK" image pull "$REG/test/base:1" 2>&1)
expect_match "image pull" "^pulled $REG/test/base:1 \(sha256:[0-9a-f]{64}, 2 layers\)" "$out"
out=$("$PADDOCK" image pull "$REG/test/zstd:1" 2>&1)
expect_match "image pull of zstd layers" "^pulled $REG/test/zstd:1" "$out"
layers=$(ls "$PADDOCK_IMAGE_STORE/layers" | grep -vc json)
expect_eq "the layer both images share is unpacked once" 2 "$layers"
out=$("$PADDOCK" image ls)
expect_match "image ls lists both" "$REG/test/base:1 .*$REG/test/zstd:1|$REG/test/zstd:1 .*$REG/test/base:1" "$(echo $out)"
out=$("$PADDOCK" image inspect --json "$REG/test/base:1")
n=$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["layers"]), d["config"]["WorkingDir"], d["os"])')
expect_eq "image inspect --json" "2 /app linux" "$n"
digest=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifest"])')
out=$("$PADDOCK" image pull "$REG/test/base@$digest" 2>&1)
expect_match "pull by digest" "^pulled" "$out"

# ---- run ----
run_sb out st --image "$REG/test/base:1" -- sh -c 'cat /etc/motd; [ -e /etc/removeme ] || echo gone; ls /data; id -u; pwd; echo "$GREETING"'
expect_eq "run --image: top layer wins, whiteout and opaque dir applied, WorkingDir, Env" "two
gone
new
1000
/app
from-image" "$out"
run_sb out st --image "$REG/test/base:1" -- sh -c 'cat /etc/nsswitch.conf'
expect_match "an image without /etc/nsswitch.conf gets paddock's (names resolve through hosts, then DNS)" \
	"hosts: files dns" "$out"
run_sb out st --image "$REG/test/base:1" --env GREETING=from-flag --cwd /tmp -- sh -c 'pwd; echo "$GREETING"'
expect_eq "flags beat the image's config" "/tmp
from-flag" "$out"
run_sb out st --image "$REG/test/base:1"
expect_eq "no command: the image's Cmd" "default command
/app" "$out"
run_sb out st --image "$REG/test/zstd:1" -- cat /etc/motd
expect_eq "the zstd image runs" "one" "$out"
run_sb out st --image "$REG/test/base:1" -- sh -c 'echo x > /tmp/t && echo x > /workspace/w && echo x > /etc/new && cat /tmp/t /workspace/w /etc/new | wc -l'
if [ "$MODE" = root ]; then
	expect_match "the user writes /tmp and /workspace, not root's /etc" "Permission denied" "$out"
else
	expect_eq "rootless, the whole image is the user's: it writes anywhere" "3" "$out"
fi
run_sb out st --image "$REG/test/base:1" --user root -- sh -c 'id -u; echo changed > /etc/motd; echo new > /usr/bin/added; cat /etc/motd /usr/bin/added'
expect_eq "--user root writes over the image" "0
changed
new" "$out"
before=$(find "$PADDOCK_IMAGE_STORE" -newer "$T_TMP/skopeo.log" -path '*/layers/*' | wc -l)
run_sb out st --image "$REG/test/base:1" -- cat /etc/motd
expect_eq "the store's layers are untouched by a sandbox's writes" "two" "$out"
expect_eq "...nothing in them changed" 0 "$(find "$PADDOCK_IMAGE_STORE/layers" -newer "$T_TMP/skopeo.log" -name added | wc -l)"
: "$before"

# ---- import ----
export PADDOCK_IMAGE_STORE=$T_TMP/store2
out=$("$PADDOCK" image import --name local/dir:1 "$B/oci" 2>&1)
expect_match "import an OCI layout directory" "^imported local/dir:1|^imported docker.io/local/dir:1" "$out"
tar -C "$B/oci" -cf "$B/oci.tar" .
out=$("$PADDOCK" image import --name local/tar:1 "$B/oci.tar" 2>&1)
expect_match "import an oci-archive tar" "^imported" "$out"
skopeo --insecure-policy copy -q "oci:$B/oci" "docker-archive:$B/docker.tar:local/docker:2" >/dev/null 2>&1
out=$("$PADDOCK" image import "$B/docker.tar" 2>&1)
expect_match "import a docker archive, named by its RepoTags" "^imported docker.io/local/docker:2" "$out"
run_sb out st --image local/docker:2 -- cat /etc/motd
expect_eq "...and run it" "two" "$out"

# ---- remove ----
"$PADDOCK" run --image local/docker:2 -- sleep 5 </dev/null >/dev/null 2>&1 &
sbpid=$!
for _ in $(seq 50); do [ -n "$(own_pids '^sleep 5$')" ] && break; sleep 0.1; done
out=$("$PADDOCK" image rm local/docker:2 2>&1)
expect_match "image rm of an image a sandbox runs: busy" "in use by a running sandbox" "$out"
kill -INT "$sbpid" 2>/dev/null
wait "$sbpid" 2>/dev/null
for name in local/dir:1 local/tar:1 local/docker:2; do "$PADDOCK" image rm "$name" >/dev/null 2>&1; done
expect_eq "image rm of every image leaves no layer" "" "$(ls "$PADDOCK_IMAGE_STORE/layers")"
expect_eq "...and no image" "" "$(ls "$PADDOCK_IMAGE_STORE/images")"

# ---- bad references, missing images ----
out=$("$PADDOCK" image pull 'Bad/Ref:x' 2>&1)
st=$?
expect_match "a bad reference: refused, naming the field" "image: expected lowercase path components" "$out"
expect_eq "...exit status 1" 1 "$st"
out=$("$PADDOCK" image pull "$REG/test/missing:1" 2>&1)
expect_match "an image the registry lacks" "no manifest for '$REG/test/missing:1' in the registry \(MANIFEST_UNKNOWN" "$out"
run_sb out st --pull never --image nosuch/image:1 -- true
expect_match "run --image of a missing image with --pull never" "no image 'nosuch/image:1' in the store" "$out"
expect_eq "...is paddock's failure, 125" 125 "$st"
run_sb out st --image "$REG/test/base:1" --rootfs / -- true
expect_match "image and rootfs exclude each other" 'expected either "image" or "rootfs"' "$out"

# ---- hostile or damaged images ----
export PADDOCK_IMAGE_STORE=$T_TMP/store3
cp -r "$B/oci" "$B/corrupt"
blob=$(ls -S "$B/corrupt/blobs/sha256" | head -1)
chmod u+w "$B/corrupt/blobs/sha256/$blob"
printf 'X' | dd of="$B/corrupt/blobs/sha256/$blob" bs=1 seek=100 conv=notrunc 2>/dev/null
out=$("$PADDOCK" image import "$B/corrupt" 2>&1)
expect_match "a layer whose content is not its digest is refused" "layer 0: .*its content has digest sha256:" "$out"
mkdir -p "$B/evil" && touch "$T_TMP/outside.marker"
python3 - "$B/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    ti = tarfile.TarInfo("../../../outside-the-store"); ti.size = 4
    t.addfile(ti, io.BytesIO(b"evil"))
PY
python3 "$MKIMAGE" layout "$B/evil-oci" --layer-tar "$B/evil.tar" >/dev/null
out=$("$PADDOCK" image import "$B/evil-oci" 2>&1)
expect_match "a layer escaping with '..' is refused, naming the entry" "entry '../../../outside-the-store' has a '..' component" "$out"
expect_eq "...and wrote nothing outside" "" "$(find / -xdev -name outside-the-store 2>/dev/null | head -1)"
python3 - "$B/evil2.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    ti = tarfile.TarInfo("etc"); ti.type = tarfile.SYMTYPE; ti.linkname = "/etc"; t.addfile(ti)
    ti = tarfile.TarInfo("etc/paddock-evil"); ti.size = 4; t.addfile(ti, io.BytesIO(b"evil"))
PY
python3 "$MKIMAGE" layout "$B/evil2-oci" --layer-tar "$B/evil2.tar" >/dev/null
out=$("$PADDOCK" image import "$B/evil2-oci" 2>&1)
expect_match "a layer writing through its own symlink is refused" "goes through a symlink" "$out"
expect_eq "...and /etc is untouched" "" "$(ls /etc/paddock-evil 2>/dev/null)"
expect_eq "no temporary layer is left in the store" "" "$(ls "$PADDOCK_IMAGE_STORE/tmp")"

# ---- a registry with credentials ----
htpasswd -Bbn alice s3cret >"$T_TMP/htpasswd"
start_registry reg-auth "auth:
  htpasswd:
    realm: test
    path: $T_TMP/htpasswd" || { not_ok "registry with auth starts"; finish; }
push "$B/oci" "$REG/priv/base:1" --dest-creds alice:s3cret || not_ok "push with credentials"
out=$("$PADDOCK" image pull "$REG/priv/base:1" 2>&1)
expect_match "pull without credentials: the registry wants them" "wants credentials \(--creds USER:PASSWORD\)" "$out"
out=$("$PADDOCK" image pull --creds alice:wrong "$REG/priv/base:1" 2>&1)
expect_match "...wrong ones are refused" "refused the manifest .*\(401\)" "$out"
out=$("$PADDOCK" image pull --creds alice:s3cret "$REG/priv/base:1" 2>&1)
expect_match "...right ones pull (basic auth)" "^pulled $REG/priv/base:1" "$out"

# ---- token auth: a bearer-token front (tests/integration/token-registry.py) ----
tport=$(free_port)
python3 "$(dirname "$0")/token-registry.py" "$tport" "$REG_OPEN" alice s3cret >"$T_TMP/token.log" 2>&1 &
SERVER_PIDS+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$tport/v2/" && break; sleep 0.05; done
out=$("$PADDOCK" image pull "127.0.0.1:$tport/test/base:1" 2>&1)
expect_match "bearer token auth without credentials: refused" "token service answered 401" "$out"
out=$("$PADDOCK" image pull --creds alice:s3cret "127.0.0.1:$tport/test/base:1" 2>&1)
expect_match "bearer token auth: the token from the realm, then the pull" "^pulled 127.0.0.1:$tport/test/base:1" "$out"
expect_match "...the registry saw the token" "token-ok" "$(cat "$T_TMP/token.log")"
expect_no_match "...and never the password" "password-leak" "$(cat "$T_TMP/token.log")"

# ---- rootless: the user's own store ----
if [ "$MODE" = rootless ]; then
	unset PADDOCK_IMAGE_STORE
	out=$("$PADDOCK" image pull "$REG/priv/base:1" --creds alice:s3cret 2>&1)
	expect_match "rootless pulls into ~/.local/share/paddock/images" "^pulled" "$out"
	expect_eq "...which holds it" 1 "$(ls "$HOME/.local/share/paddock/images/images" | wc -l)"
fi

stop_servers
finish
