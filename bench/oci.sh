#!/bin/bash
# paddock as an OCI runtime (docs/oci.md) beside runc, crun and gVisor's runsc, under one
# engine, Podman, in one run (interleaved rounds, p50/p90, ratios to the first that works):
#   bench/oci.sh [ROUNDS]      (default 20; as root)
# 1. Container start: `podman run --rm --network none IMAGE /bin/true`, whole (Podman,
#    conmon and the runtime's create, start and delete).
# 2. A short Python job in the same image: JSON and SHA-256 over ~5 MB, ~0.1 s of CPU.
# The image is a Debian root made from this machine's own python3 package and what it
# depends on (tests/integration/mkimage.py debroot). Each runtime gets the same Podman flags;
# --ulimit keeps the process's limits within this machine's hard limits (runc and crun
# refuse to raise them, paddock-oci lowers them). runsc runs with --network=none (it
# refuses the root network namespace otherwise) on its default platform. A runtime that
# cannot run here (Debian 12's crun 1.8 refuses a hybrid cgroup layout, v1 controllers with
# an empty v2 hierarchy) is reported and left out.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-20}
[ "$(id -u)" -eq 0 ] || { echo "bench/oci.sh: run as root" >&2; exit 1; }
"$top/dev/deps" --oci --bench >/dev/null
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" "$top" >/dev/null
ninja -C "$top/build" src/oci/paddock-oci bench/spawn >/dev/null
OCI=$top/build/src/oci/paddock-oci
ws=$(mktemp -d /tmp/pdbench-oci.XXXXXX)
IMG=localhost/paddock-bench-oci:$$
cleanup() {
	podman rm -f -a --filter "ancestor=$IMG" >/dev/null 2>&1 || true
	podman rmi -f "$IMG" >/dev/null 2>&1 || true
	rm -rf "$ws"
}
trap cleanup EXIT

python3 "$top/tests/integration/mkimage.py" debroot "$ws/root" python3 dash coreutils >/dev/null
cat >"$ws/root/job.py" <<'PY'
import hashlib, json
d = [{"i": i, "s": str(i) * 8, "f": i / 7} for i in range(40000)]
b = json.dumps(d).encode()
for _ in range(20):
    b = hashlib.sha256(b).digest() + b[:2000000]
print(len(json.loads(json.dumps(d))), hashlib.sha256(b).hexdigest()[:8])
PY
tar -C "$ws/root" -c . | podman import - "$IMG" >/dev/null 2>&1
nofile=$(ulimit -Hn)
common="run --rm --network none --ulimit nofile=$nofile:$nofile --ulimit nproc=4096:4096 $IMG"
runc="podman --runtime /usr/bin/runc $common"
crun="podman --runtime /usr/bin/crun $common"
paddock="podman --runtime $OCI $common"
runsc="podman --runtime /usr/bin/runsc --runtime-flag network=none $common"
start=() job=()
for r in runc crun paddock runsc; do
	cmd=${!r}
	name=$r; [ "$r" = paddock ] && name=paddock-oci
	if ! $cmd python3 /job.py >/dev/null 2>&1; then
		echo "# $name cannot run here: $($cmd python3 /job.py 2>&1 | tail -n1)"
		continue
	fi
	start+=("$name=$cmd /bin/true")
	job+=("$name=$cmd python3 /job.py")
done
echo "# $(uname -r), $(nproc) cores; podman $(podman --version | cut -d' ' -f3), runc $(runc --version | head -n1 | cut -d' ' -f3)," \
	"$(crun --version | head -n1), runsc $(runsc --version 2>/dev/null | head -n1 | cut -d' ' -f3); image $(du -sm "$ws/root" | cut -f1) MiB"
echo "## container start: podman run --rm IMAGE /bin/true, $rounds rounds, interleaved"
"$top/build/bench/spawn" "$rounds" "${start[@]}"
echo "## a short Python job: podman run --rm IMAGE python3 /job.py, $rounds rounds, interleaved"
"$top/build/bench/spawn" "$rounds" "${job[@]}"
