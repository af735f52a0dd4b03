#!/bin/bash
# Workspaces, binds, --rootfs, and the spec on the command line.
. "$(dirname "$0")/lib.sh"

alice=$TEST_USER
own() { give_to_user "$@"; }

ws="$T_TMP/ws"
mkdir -p "$ws"
echo "from host" >"$ws/in.txt"
# an ordinary directory of an unprivileged user (0755): as root it is idmapped so its owner
# is the sandbox user inside; rootless the invoker is the sandbox user anyway
chmod 755 "$ws"
own "$ws"
run_sb out st --workspace "$ws" -- sh -c 'cat /workspace/in.txt; echo "from sandbox" > /workspace/out.txt; pwd; stat -c %U /workspace/in.txt'
expect_eq "--workspace is the host directory, read-write, owned by the sandbox user" "from host
/workspace
user" "$out"
expect_eq "files written inside reach the host" "from sandbox" "$(cat "$ws/out.txt" 2>&1)"
expect_eq "... owned by the workspace's owner on the host" "$(stat -c %u "$ws")" "$(stat -c %u "$ws/out.txt" 2>&1)"
out=$(cd "$ws" && "$PADDOCK" run --workspace . -- cat /workspace/in.txt 2>&1)
expect_eq "--workspace . is the current directory" "from host" "$out"

run_sb out st -- sh -c 'echo private > /workspace/p.txt; ls /workspace'
expect_eq "default workspace is private and empty" "p.txt" "$out"
run_sb out st -- ls -A /workspace
expect_eq "... and gone afterwards" "" "$out"

data="$T_TMP/data"
mkdir -p "$data"
echo "ro data" >"$data/f"
chmod 777 "$data"
run_sb out st --ro-bind "$data:/data" -- sh -c 'cat /data/f; echo x > /data/g 2>&1 || echo denied'
expect_match "--ro-bind is readable" "^ro data" "$out"
expect_match "--ro-bind is not writable" "denied$" "$out"
[ ! -e "$data/g" ] && ok "nothing was written through a ro bind" || not_ok "ro bind written"

own "$data"
run_sb out st --bind "$data" -- sh -c "echo rw > $data/g && cat $data/g"
expect_eq "--bind SRC mounts at the same path, writable" "rw" "$out"

out_dir="$T_TMP/outdir"
mkdir -p "$out_dir"
chmod 755 "$out_dir"
own "$out_dir"
run_sb out st --bind "$out_dir:/out" -- sh -c 'echo result > /out/r.txt && stat -c %U /out'
expect_eq "a read-write bind of an ordinary directory is the sandbox user's" "user" "$out"
expect_eq "... and what the sandbox writes there is the owner's on the host" \
	"$(stat -c %u "$out_dir")" "$(stat -c %u "$out_dir/r.txt" 2>&1)"

# ---- nothing made inside comes out privileged ----
# The attack: copy a binary into the workspace and make it set-id; on the host, anyone who
# runs it would become the workspace's owner (root, if it were root's).
run_sb out st --workspace "$ws" -- sh -c 'cp /usr/bin/id /workspace/x; chmod 6755 /workspace/x
	echo "chmod=$?"; install -m 4755 /usr/bin/id /workspace/y; echo "install=$?"
	python3 -c "import os; os.open(\"/workspace/z\", os.O_CREAT | os.O_WRONLY, 0o4755)" 2>&1 |
		tail -n 1; mkdir -m 2755 /workspace/d; echo "mkdir=$?"'
expect_match "chmod 6755 inside a workspace is refused" "chmod=1" "$out"
expect_match "install -m 4755 is refused" "install=1" "$out"
expect_match "open(O_CREAT, 04755) is refused" "PermissionError|Operation not permitted" "$out"
expect_match "mkdir -m 2755 is refused" "mkdir=1" "$out"
setid=$(find "$ws" -perm /6000 2>&1)
expect_eq "... nothing in the workspace is set-id on the host" "" "$setid"
expect_eq "... and the copy is the owner's, not root's" "$(stat -c %u:%g "$ws")" \
	"$(stat -c %u:%g "$ws/x" 2>&1)"
run_sb out st --bind "$out_dir:/out" -- sh -c 'cp /usr/bin/id /out/x; chmod u+s /out/x; echo "st=$?"'
expect_match "the same in a read-write bind" "st=1" "$out"
expect_eq "... nothing there is set-id on the host" "" "$(find "$out_dir" -perm /6000 2>&1)"

if [ "$MODE" = root ]; then
	rootws="$T_TMP/rootws"
	mkdir -p "$rootws"
	chmod 777 "$rootws"
	run_sb out st --workspace "$rootws" -- sh -c 'echo x > /workspace/f'
	expect_eq "a root-owned workspace is refused" 125 "$st"
	expect_match "... naming the field, the owner and the fix" \
		"workspace: .*rootws' is owned by root: .*chown USER:GROUP" "$out"
	expect_eq "... and nothing was written" "" "$(ls -A "$rootws")"
	run_sb out st --bind "$rootws:/out" -- true
	expect_match "a root-owned read-write bind is refused, by its field" \
		"binds\[0\]\.source: .* is owned by root" "$out"
	chown "$alice:0" "$rootws"
	run_sb out st --workspace "$rootws" -- true
	expect_match "a directory of group root is refused too" "is owned by group root" "$out"
	run_sb out st --ro-bind "$rootws:/ro" -- true
	expect_eq "... read-only it is bound as it is" 0 "$st"
fi

run_sb out st --ro-bind "$T_TMP/missing:/x" -- true
expect_eq "missing bind source fails" 125 "$st"
expect_match "... naming the field" "binds\[0\]\.source" "$out"

run_sb out st --bind "$data:/proc/x" -- true
expect_eq "bind onto /proc is refused" 125 "$st"

out=$("$PADDOCK" run --print-spec --hostname h1 --env A=1 --timeout 2.5 -- true)
expect_match "--print-spec shows flags" '"hostname": "h1"' "$out"
expect_match "--print-spec shows env" '"A": "1"' "$out"
echo "$out" >"$T_TMP/spec.json"
out2=$("$PADDOCK" run --print-spec --spec "$T_TMP/spec.json")
expect_eq "--print-spec output is a loadable spec" "$out" "$out2"
run_sb out st --spec "$T_TMP/spec.json" --hostname h2 -- sh -c 'hostname; echo $A'
expect_eq "flags override the spec file" "h2
1" "$out"
echo '{"hostname": 5}' >"$T_TMP/bad.json"
run_sb out st --spec "$T_TMP/bad.json" -- true
expect_eq "bad spec is 125" 125 "$st"
expect_match "... naming the field" "hostname" "$out"

# a tiny image: dash and its libraries, plus an /etc entry of its own
root="$T_TMP/rootfs"
mkdir -p "$root/usr/bin" "$root/etc"
cp /bin/dash "$root/usr/bin/sh"
for lib in $(ldd /bin/dash | grep -o '/[^ ]*'); do
	mkdir -p "$root/usr$(dirname "$lib")" "$root$(dirname "$lib")" 2>/dev/null
	cp -L "$lib" "$root/usr$lib" 2>/dev/null
done
rm -rf "$root/lib" "$root/lib64"
ln -s usr/bin "$root/bin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
echo 'PRETTY_NAME="paddock test image"' >"$root/etc/os-release"
chmod -R a+rX "$T_TMP"
run_sb out st --rootfs "$root" -- /bin/sh -c 'read -r l </etc/os-release; echo "$l"; echo ok'
expect_eq "--rootfs is the base" 'PRETTY_NAME="paddock test image"
ok' "$out"
run_sb out st --rootfs "$root" -- python3 -c 1
expect_eq "host binaries are absent under --rootfs" 127 "$st"

finish
