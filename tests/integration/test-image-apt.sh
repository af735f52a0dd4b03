#!/bin/bash
# apt-get as root inside (docs/images.md): a Debian image made from this machine's own
# installed packages (apt, dpkg and what they depend on, with their dpkg status: mkimage.py
# debroot; no mirror is reached), a package made here with dpkg-deb, in an apt repository
# made with apt-ftparchive, served on 127.0.0.1 and reached through the egress allowlist.
# The package installs in the sandbox; nothing on the host or in the image store changes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/image-lib.sh"
for t in dpkg-deb apt-ftparchive python3; do
	command -v "$t" >/dev/null || unavailable "$t is not installed (dev/deps --test)"
done
trap 'stop_servers; rm -rf "$T_TMP"' EXIT

B=$T_TMP/build
mkdir -p "$B/repo" "$B/pkg/DEBIAN" "$B/pkg/usr/bin"
python3 "$MKIMAGE" debroot "$B/root" apt dpkg coreutils dash diffutils libc-bin grep >/dev/null ||
	{ not_ok "a Debian root from this machine's packages"; finish; }
# debconf's hook names a program the image lacks
rm -f "$B/root/etc/apt/apt.conf.d/70debconf"
port=$(free_port)
echo "deb [trusted=yes] http://apt.test:$port/ ./" >"$B/root/etc/apt/sources.list"
# as root a whole id range exists: apt drops to _apt to download, as on a machine
[ "$MODE" = root ] && echo '_apt:x:42:65534::/nonexistent:/usr/sbin/nologin' >>"$B/root/etc/passwd"
python3 "$MKIMAGE" layout "$B/oci" --uncompressed --layer "$B/root" >/dev/null
out=$("$PADDOCK" image import --name test/debian:12 "$B/oci" 2>&1)
expect_match "a Debian image from this machine's packages" "^imported" "$out"
touch "$T_TMP/imported"

printf 'Package: hello-paddock\nVersion: 1.0\nArchitecture: all\nMaintainer: paddock tests <tests@paddock.invalid>\nDescription: made by test-image-apt.sh\n' \
	>"$B/pkg/DEBIAN/control"
printf '#!/bin/sh\necho hello from the package\n' >"$B/pkg/usr/bin/hello-paddock"
chmod 755 "$B/pkg/usr/bin/hello-paddock"
dpkg-deb --root-owner-group --build "$B/pkg" "$B/repo/hello-paddock_1.0_all.deb" >/dev/null
(cd "$B/repo" && apt-ftparchive packages . >Packages && apt-ftparchive release . >Release)
python3 -m http.server --bind 127.0.0.1 "$port" --directory "$B/repo" >"$T_TMP/http.log" 2>&1 &
SERVER_PIDS+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/Release" && break; sleep 0.05; done
echo "127.0.0.1 apt.test" >"$T_TMP/hosts"

NET=(--resolve-hosts "$T_TMP/hosts" --allow "apt.test:$port" --allow "127.0.0.1/32:$port")
run_sb out st --image test/debian:12 --user root "${NET[@]}" -- sh -c '
apt-get -q update >/dev/null 2>&1 || echo "update failed"
apt-get -q install -y hello-paddock >/dev/null 2>&1 || echo "install failed"
hello-paddock
dpkg-query -W -f="\${Status}\n" hello-paddock'
expect_eq "apt-get install as root inside, through the egress allowlist" "hello from the package
install ok installed" "$out"

run_sb out st --image test/debian:12 --user root --resolve-hosts "$T_TMP/hosts" \
	--allow other.test -- sh -c 'apt-get -q update 2>&1 | grep -c "^Err"'
expect_match "without the repository allowed, apt cannot reach it" "^[1-9]" "$out"
run_sb out st --image test/debian:12 "${NET[@]}" -- sh -c 'apt-get -q update >/dev/null 2>&1
apt-get -q install -y hello-paddock >/dev/null 2>&1; command -v hello-paddock || echo not installed'
expect_eq "as the sandbox user, apt-get cannot install" "not installed" "$out"

run_sb out st --image test/debian:12 -- sh -c 'command -v hello-paddock || echo absent'
expect_eq "a new sandbox from the image starts without the package" "absent" "$out"
dpkg-query -W hello-paddock >/dev/null 2>&1 && not_ok "the host has the package" ||
	ok "the host's dpkg database is unchanged"
[ ! -e /usr/bin/hello-paddock ] && ok "...and so is its /usr" || not_ok "/usr/bin/hello-paddock on the host"
expect_eq "the image's layers are unchanged" "" \
	"$(find "$PADDOCK_IMAGE_STORE/layers" -newer "$T_TMP/imported" 2>/dev/null | head -3)"

stop_servers
finish
