#!/bin/bash
# Shared by the image tests (sourced after lib.sh): a registry on loopback, images made
# here from this machine's own files (tests/integration/mkimage.py), pushed with skopeo.
# Nothing is fetched from anywhere: the registry listens on 127.0.0.1 only.

MKIMAGE=$(dirname "${BASH_SOURCE[0]}")/mkimage.py
export PADDOCK_IMAGE_STORE=$T_TMP/store
# skopeo wants a home for its caches and auth file; its auth file below XDG_RUNTIME_DIR, not
# /run/containers/UID (root's 0700 once Podman has run as root: unreadable to the test's
# uid). Not REGISTRY_AUTH_FILE: docker-registry reads REGISTRY_* as its own configuration.
export HOME=$T_TMP/home
export XDG_RUNTIME_DIR=$HOME/run
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"

need_image_tools() {
	local t
	for t in docker-registry skopeo python3 "$@"; do
		command -v "$t" >/dev/null || unavailable "$t is not installed (dev/deps --test)"
	done
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_registry NAME [AUTH_YAML]: docker-registry (distribution v2) on 127.0.0.1; sets
# REG (host:port). Stopped by stop_servers.
SERVER_PIDS=()
start_registry() {
	local dir=$T_TMP/$1 port
	port=$(free_port)
	mkdir -p "$dir/data"
	cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
${2:-}
EOF
	docker-registry serve "$dir/config.yml" >"$dir/log" 2>&1 &
	SERVER_PIDS+=($!)
	REG=127.0.0.1:$port
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://$REG/v2/" && return 0
		sleep 0.05
	done
	diag "the registry did not start:" "$(cat "$dir/log")"
	return 1
}

stop_servers() {
	local p
	for p in "${SERVER_PIDS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	SERVER_PIDS=()
}

# push LAYOUT REF [skopeo args]: an OCI layout to the registry
push() {
	local layout=$1 ref=$2
	shift 2
	# its auth file in our home, not /run/containers/$UID, which a root podman or skopeo
	# elsewhere on the machine may have made unreadable to a rootless run (drwx------ root);
	# for skopeo alone: docker-registry reads REGISTRY_* as its own configuration
	REGISTRY_AUTH_FILE=$HOME/auth.json \
		skopeo --insecure-policy copy -q --dest-tls-verify=false "$@" "oci:$layout" "docker://$ref" \
		>"$T_TMP/skopeo.log" 2>&1 || { diag "skopeo:" "$(cat "$T_TMP/skopeo.log")"; return 1; }
}
