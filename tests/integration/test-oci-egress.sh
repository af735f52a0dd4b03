#!/bin/bash
# run.sh: netns
# The egress allowlist and a brokered secret for a container that Podman starts under
# paddock-oci with the annotations (docs/oci.md), in the test's own network (netns-wrap.sh:
# its servers exist only in this namespace). The process sees a placeholder; the HTTPS server
# for api.test receives the real value; destinations no rule allows are refused. Rootless
# (Podman would need /etc/subuid ranges for the test's uid), paddock-oci runs the same
# bundle itself.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/oci-lib.sh"

: "${EGRESS_DIR:?run.sh runs this test inside netns-wrap.sh}"
[ "$MODE" = rootless ] || command -v podman >/dev/null ||
	unavailable "podman is not installed (dev/deps --oci)"
REQ=$EGRESS_DIR/requests.jsonl
REAL="ghp_R3alS3cr3tV4lue0123456789abcdefXYZ"
IMG=localhost/paddock-oci-egress:$$
[ -d /run/paddock-oci ] || made_run_root=1
cleanup() {
	# rootless runs no Podman (a podman run as the test's uid would leave its runtime dir)
	if [ "$MODE" = root ]; then
		podman rm -f -a --filter "ancestor=$IMG" >/dev/null 2>&1
		podman rmi -f "$IMG" >/dev/null 2>&1
	fi
	[ "${made_run_root:-0}" = 1 ] && rmdir /run/paddock-oci 2>/dev/null
	rm -rf "$T_TMP"
}
trap cleanup EXIT

oci_image "$T_TMP/img" curl || { not_ok "make a root with curl"; finish; }
ANN='{"dev.paddock.network.mode": "allowlist", "dev.paddock.network.allow": "allowed.test api.test", "dev.paddock.secret.API_KEY": "api.test"}'
# crun CMD: a container with the annotations and API_KEY in its environment, running CMD
if [ "$MODE" = root ]; then
	tar -C "$T_TMP/img" -c . | podman import - "$IMG" >/dev/null 2>&1
	PM=(podman --runtime "$OCI" --runtime-flag "resolve-hosts=$EGRESS_DIR/hosts"
		--runtime-flag "upstream-ca=$EGRESS_DIR/ca.pem")
	A=(--network none)
	while read -r k v; do A+=(--annotation "$k=$v"); done < <(python3 -c 'import json,sys
for k, v in json.loads(sys.argv[1]).items(): print(k, v)' "$ANN")
	crun() { "${PM[@]}" run --rm "${A[@]}" -e "API_KEY=$REAL" "$IMG" sh -c "$1" 2>&1; }
else
	crun() {
		rm -rf "$T_TMP/b"
		CMD=$1 oci_bundle "$T_TMP/b" "$T_TMP/img" "c['annotations'] = $ANN; c['process']['env'].append('API_KEY=$REAL')"
		"$OCI" --root "$OCI_ROOT" --resolve-hosts "$EGRESS_DIR/hosts" \
			--upstream-ca "$EGRESS_DIR/ca.pem" run --bundle "$T_TMP/b" "e$RANDOM" 2>&1
	}
fi
C='curl -sS -m 5'

out=$(crun "$C http://allowed.test/; echo; echo rc=\$?")
expect_match "an allowed destination is reached" "rc=0" "$out"
expect_match "...through paddock's proxy" '"host": "allowed.test"' "$(grep allowed.test "$REQ" | tail -n1)"
out=$(crun "$C http://denied.test/ 2>&1")
expect_match "a destination no rule allows is refused" "egress to denied.test:80 is blocked" "$out"
expect_eq "...and never reached" "" "$(grep '"host": "denied.test' "$REQ")"
out=$(crun "$C --noproxy '*' http://11.22.33.2/ 2>&1")
expect_match "...also by address, ignoring the proxy variables (transparent)" "egress to 11.22.33.2:80 is blocked" "$out"

out=$(crun "$C -H \"Authorization: Bearer \$API_KEY\" https://api.test/echo-headers; echo; echo ph=\$API_KEY")
PH=$(sed -n 's/^ph=//p' <<<"$out")
expect_match "the process sees a placeholder of the value's shape" '^ghp_[A-Za-z0-9]{34}$' "$PH"
expect_no_match "...not the value" "$REAL" "$out"
expect_match "the HTTPS server for api.test got the real value" "Bearer $REAL" "$(grep '"/echo-headers"' "$REQ" | tail -n1)"
out=$(crun 'grep -ac R3alS3cr3t /proc/self/environ')
expect_eq "the value is in no environment inside" 0 "$(tail -n1 <<<"$out")"
finish
