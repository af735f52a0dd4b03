#!/bin/bash
# Checks the manifests with kubectl, offline (docs/kubernetes.md): `kubectl kustomize`
# renders them, and `kubectl apply --dry-run=client --validate=false` maps and prints every
# object. kubectl wants a server's discovery even for a client-side dry run: a stand-in on
# 127.0.0.1 answers discovery for the kinds used here and 404 for every object (so each is
# "created (dry run)"). Without a cluster's OpenAPI documents, fields are not checked
# against their schemas.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
command -v kubectl >/dev/null || { echo "validate.sh: kubectl is not installed" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
kubectl kustomize "$here" >"$tmp/all.yaml"
python3 - "$tmp/port" <<'PY' &
import http.server, json, socketserver, sys

groups = {  # group/version: [(plural, kind, namespaced)]
    "v1": [("namespaces", "Namespace", False), ("serviceaccounts", "ServiceAccount", True),
           ("configmaps", "ConfigMap", True)],
    "apps/v1": [("daemonsets", "DaemonSet", True)],
    "node.k8s.io/v1": [("runtimeclasses", "RuntimeClass", False)],
    "extensions.agents.x-k8s.io/v1alpha1": [("sandboxtemplates", "SandboxTemplate", True),
                                            ("sandboxwarmpools", "SandboxWarmPool", True)],
}

class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        p = self.path.split("?")[0].rstrip("/")
        if p == "/api":
            return self.send(200, {"kind": "APIVersions", "versions": ["v1"]})
        if p == "/apis":
            gs = {}
            for gv in groups:
                if "/" in gv:
                    g, v = gv.split("/")
                    gs.setdefault(g, []).append({"groupVersion": gv, "version": v})
            return self.send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": vs, "preferredVersion": vs[0]} for g, vs in gs.items()]})
        gv = p[len("/api/"):] if p.startswith("/api/") else p[len("/apis/"):]
        if gv in groups:
            return self.send(200, {"kind": "APIResourceList", "groupVersion": gv, "resources": [
                {"name": n, "singularName": k.lower(), "namespaced": ns, "kind": k,
                 "verbs": ["create", "get", "list", "patch", "update", "delete"]}
                for n, k, ns in groups[gv]]})
        return self.send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "reason": "NotFound", "code": 404, "message": "not found"})

srv = socketserver.TCPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(srv.server_address[1]))
srv.serve_forever()
PY
srv=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
cat >"$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "http://127.0.0.1:$(cat "$tmp/port")"}}]
contexts: [{name: local, context: {cluster: local, namespace: default}}]
current-context: local
users: []
EOF
KUBECONFIG=$tmp/kubeconfig kubectl apply --dry-run=client --validate=false -f "$tmp/all.yaml"
