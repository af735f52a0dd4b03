#!/bin/bash
# Images (docs/images.md), side by side in one run:
#   bench/image.sh [ROUNDS]      (default 200)
# 1. Cold start: `paddock run -- /bin/true` on the host's /usr against `paddock run --image`
#    of a Debian image (this machine's apt, dpkg, python3 and what they need: made here,
#    ~140 MB, ~70 packages), interleaved with bare fork+exec; p50/p90 and ratios. Target:
#    the image no slower than 1.1x the host's /usr.
# 2. Pull and unpack: the same image pushed (gzip) to docker-registry on 127.0.0.1 and pulled
#    into an empty store five times; import of its uncompressed OCI layout; MB/s of the
#    compressed blobs and of the files written.
# As root the store is idmapped per sandbox; rootless (run it as a user) it is the user's.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-200}
"$top/dev/deps" --test >/dev/null
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
ninja -C "$top/build" src/cli/paddock bench/spawn >/dev/null
P=$top/build/src/cli/paddock
MK=$top/tests/integration/mkimage.py
ws=$(mktemp -d /tmp/pdbench-image.XXXXXX)
reg_pid=
cleanup() {
	[ -n "$reg_pid" ] && kill "$reg_pid" 2>/dev/null && wait "$reg_pid" 2>/dev/null
	rm -rf "$ws"
}
trap cleanup EXIT
export HOME=$ws/home
mkdir -p "$HOME"

python3 "$MK" debroot "$ws/root" apt dpkg coreutils dash python3 >/dev/null
python3 "$MK" layout "$ws/oci" --layer "$ws/root" >/dev/null
python3 "$MK" layout "$ws/oci-plain" --uncompressed --layer "$ws/root" >/dev/null
"$P" image --store "$ws/store" import --name bench/debian:1 "$ws/oci" >/dev/null
files=$(du -sb "$ws/root" | cut -f1)
blob=$(find "$ws/oci/blobs" -type f -size +1M -printf '%s\n' | sort -n | tail -1)
echo "# $(uname -r), $(nproc) cores, uid $(id -u), image: $((files / 1048576)) MiB of files," \
	"$((blob / 1048576)) MiB gzip, $(ls "$ws/root/var/lib/dpkg/info" | grep -c '\.list$') packages"

echo "## cold start, $rounds rounds, interleaved"
"$top/build/bench/spawn" "$rounds" \
	"bare=/bin/true" \
	"host-usr=$P run -- /bin/true" \
	"image=$P run --image-store $ws/store --image bench/debian:1 -- /bin/true"

echo "## pull and unpack (docker-registry on 127.0.0.1, gzip layer), 5 times into an empty store"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$ws/reg"
printf 'version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
	"$ws/reg" "$port" >"$ws/reg.yml"
docker-registry serve "$ws/reg.yml" >/dev/null 2>&1 &
reg_pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/v2/" && break; sleep 0.05; done
skopeo --insecure-policy copy -q --dest-tls-verify=false "oci:$ws/oci" \
	"docker://127.0.0.1:$port/bench/debian:1" >/dev/null
python3 - "$P" "$ws" "$port" "$files" "$blob" <<'PY'
import shutil, statistics, subprocess, sys, time
p, ws, port, files, blob = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def timed(args):
    shutil.rmtree(f"{ws}/s", ignore_errors=True)
    t = time.monotonic()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t
pulls = [timed([p, "image", "--store", f"{ws}/s", "pull", f"127.0.0.1:{port}/bench/debian:1"]) for _ in range(5)]
imports = [timed([p, "image", "--store", f"{ws}/s", "import", f"{ws}/oci-plain"]) for _ in range(5)]
for name, t in (("pull (download, verify, gunzip, unpack)", pulls), ("import of an uncompressed layout", imports)):
    m = statistics.median(t)
    print(f"{name:42s} median {m*1000:7.0f} ms  {blob/m/1e6:7.1f} MB/s compressed  {files/m/1e6:7.1f} MB/s of files")
PY
