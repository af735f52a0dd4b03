#!/bin/bash
# Shared by the OCI runtime's tests (sourced after lib.sh): paddock-oci, a root made from
# this machine's own files, bundles, and the engines (Podman, containerd, Docker from
# Debian's packages) started here with their state below $T_TMP, talking to nothing but
# this machine. docs/oci.md is what they check.

OCI=${PADDOCK_OCI:?PADDOCK_OCI must point at paddock-oci}
MKIMAGE=$(dirname "${BASH_SOURCE[0]}")/mkimage.py
OCI_ROOT=$T_TMP/ociroot
oci() { "$OCI" --root "$OCI_ROOT" "$@"; }

# oci_image DIR [PROG...]: a small root (sh and friends, and the programs named)
oci_image() {
	local dir=$1
	shift
	python3 "$MKIMAGE" root "$dir" sh cat id ls sleep echo grep env tty touch mkdir wc "$@" \
		>/dev/null || return 1
	mkdir -p "$dir/etc" "$dir/root" "$dir/data" "$dir/run" "$dir/var"
	ln -sfn /run "$dir/var/run"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$dir/etc/passwd"
	printf 'root:x:0:\n' >"$dir/etc/group"
	echo image-file >"$dir/data/from-image"
}

# oci_bundle DIR ROOTFS [PATCH]: a bundle whose config.json is what `runc spec` writes, with a
# writable root, `sh -c "$CMD"` as its process (CMD from the environment) and PATCH (Python
# statements over `c`, the config) applied
oci_bundle() {
	local dir=$1 rootfs=$2 patch=${3:-pass}
	mkdir -p "$dir"
	ln -sfn "$rootfs" "$dir/rootfs"
	python3 - "$dir/config.json" "$patch" <<'PY'
import json, os, sys
path, patch = sys.argv[1], sys.argv[2]
caps = ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
c = {
    "ociVersion": "1.0.2",
    "process": {
        "terminal": False, "user": {"uid": 0, "gid": 0},
        "args": ["sh", "-c", os.environ.get("CMD", "true")],
        "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"],
        "cwd": "/",
        "capabilities": {k: caps for k in ("bounding", "effective", "permitted", "ambient")},
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
        "noNewPrivileges": True,
    },
    "root": {"path": "rootfs", "readonly": False},
    "hostname": "runc",
    "mounts": [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
         "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs",
         "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
         "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]},
    ],
    "linux": {
        "resources": {"devices": [{"allow": False, "access": "rwm"}]},
        "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
        "maskedPaths": ["/proc/acpi", "/proc/kcore", "/sys/firmware"],
        "readonlyPaths": ["/proc/bus", "/proc/sys"],
    },
}
exec(patch)
json.dump(c, open(path, "w"), indent=1)
PY
}

# what runs of this test's containers: live supervisors (this test's paddock-oci, whatever
# the engine named it with) and their children, the sandboxes' inits (zombies are not
# running: the orphaned supervisors of `create` wait below run.sh's subreaper)
oci_procs() {
	ps -e -o pid=,ppid=,stat=,args= | awk -v oci="$OCI" '
		$4 == "awk" { next }
		$3 !~ /^Z/ && $4 == oci { sup[$1] = 1; print $1, $4, $5; next }
		$3 !~ /^Z/ && $4 == "paddock-init" { init[$1] = $2 }
		END { for (p in init) if (init[p] in sup) print p, "paddock-init" }' || true
}

# alive PID: running (a zombie waiting for run.sh's subreaper is not)
alive() { ps -o stat= -p "$1" 2>/dev/null | grep -qv '^Z'; }

# ---- engines ------------------------------------------------------------------------------

ENGINE_PIDS=()
stop_engines() {
	local p i
	# the last started first: dockerd before the containerd it uses
	for ((i = ${#ENGINE_PIDS[@]} - 1; i >= 0; i--)); do
		p=${ENGINE_PIDS[$i]}
		kill "$p" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	done
	for p in "${ENGINE_PIDS[@]}"; do
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	ENGINE_PIDS=()
}

# start_containerd: containerd with root, state and socket below $T_TMP (no CRI); CTR is
# ctr on it
start_containerd() {
	local d=$T_TMP/containerd
	command -v containerd >/dev/null || return 1
	mkdir -p "$d"
	cat >"$d/config.toml" <<EOT
version = 2
root = "$d/root"
state = "$d/state"
[grpc]
  address = "$d/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  disable = true
EOT
	containerd --config "$d/config.toml" >"$d/log" 2>&1 &
	ENGINE_PIDS+=($!)
	CTR=(ctr --address "$d/containerd.sock")
	for _ in $(seq 100); do "${CTR[@]}" version >/dev/null 2>&1 && return 0; sleep 0.1; done
	diag "containerd did not start:" "$(tail -5 "$d/log")"
	return 1
}

# start_dockerd: dockerd on containerd's socket, no bridge, no iptables, a "paddock" runtime
start_dockerd() {
	local d=$T_TMP/docker
	command -v dockerd >/dev/null || return 1
	mkdir -p "$d"
	cat >"$d/daemon.json" <<EOT
{"runtimes": {"paddock": {"path": "$OCI"}},
 "bridge": "none", "iptables": false, "ip6tables": false, "ip-forward": false, "ip-masq": false,
 "data-root": "$d/data", "exec-root": "$d/exec", "pidfile": "$d/docker.pid",
 "hosts": ["unix://$d/docker.sock"], "containerd": "$T_TMP/containerd/containerd.sock"}
EOT
	dockerd --config-file "$d/daemon.json" >"$d/log" 2>&1 &
	ENGINE_PIDS+=($!)
	DOCKER=(/usr/bin/docker -H "unix://$d/docker.sock")
	for _ in $(seq 200); do "${DOCKER[@]}" version >/dev/null 2>&1 && return 0; sleep 0.1; done
	diag "dockerd did not start:" "$(tail -5 "$d/log")"
	return 1
}
