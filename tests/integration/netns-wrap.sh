#!/bin/bash
# Runs a command inside the test's own network: called by run.sh (as root) inside
# `unshare --net`, so this network namespace is new and has nothing but lo. It adds the
# test servers' addresses to lo, starts egress-servers.py on them, runs the command (the
# test, as root or under setpriv), stops the servers and exits with the command's status.
#
# The addresses are public-class (so the policy treats them as the internet) but exist only
# here: even a wrong proxy cannot send a packet off this machine.
#   11.22.33.1   allowed.test git.test *.wild.test api.test evil.test
#                http 80, https 443, echo 7, banner 22 (speaks first), udp 9999, git 8080
#   11.22.33.2   denied.test                        http 80, https 443
#   10.0.0.5     private.test                       http 80 (RFC 1918)
#   169.254.169.254 metadata.test                   http 80 (cloud metadata)
#   127.0.0.1    loopback.test                      http 8099 (the supervisor's own loopback)
# EGRESS_DIR (from run.sh, world-readable): ca.pem, hosts (the resolver override),
# requests.jsonl.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ip link set lo up
for a in 11.22.33.1 11.22.33.2 10.0.0.5 169.254.169.254; do
	ip addr add "$a/32" dev lo
done
: "${EGRESS_DIR:?run.sh sets EGRESS_DIR}"
mkdir -p "$EGRESS_DIR"
chmod 755 "$EGRESS_DIR"
cat >"$EGRESS_DIR/hosts" <<'HOSTS'
11.22.33.1 allowed.test git.test www.wild.test api.wild.test deny.wild.test api.test evil.test
11.22.33.2 denied.test
10.0.0.5 private.test
169.254.169.254 metadata.test
127.0.0.1 loopback.test
HOSTS
chmod 644 "$EGRESS_DIR/hosts"
/usr/bin/python3 "$here/egress-servers.py" --dir "$EGRESS_DIR" \
	--names allowed.test,git.test,www.wild.test,denied.test,api.test,evil.test \
	--http 11.22.33.1:80,11.22.33.2:80,10.0.0.5:80,169.254.169.254:80,127.0.0.1:8099 \
	--https 11.22.33.1:443,11.22.33.2:443 --echo 11.22.33.1:7 --banner 11.22.33.1:22 \
	--udp 11.22.33.1:9999 \
	--git 11.22.33.1:8080 >"$EGRESS_DIR/servers.log" 2>&1 &
servers=$!
for _ in $(seq 100); do
	[ -e "$EGRESS_DIR/ready" ] && break
	sleep 0.1
done
if [ ! -e "$EGRESS_DIR/ready" ]; then
	echo "not ok - the test servers did not start"
	sed 's/^/# /' "$EGRESS_DIR/servers.log"
	kill "$servers" 2>/dev/null
	exit 1
fi
chmod -R a+rX "$EGRESS_DIR"
"$@"
status=$?
kill "$servers" 2>/dev/null
wait "$servers" 2>/dev/null
exit $status
