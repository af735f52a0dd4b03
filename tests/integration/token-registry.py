#!/usr/bin/env python3
"""A registry front with docker's bearer-token authentication, for test-image.sh:

  token-registry.py PORT BACKEND USER PASSWORD

listens on 127.0.0.1:PORT. /v2/... answers 401 with a Bearer challenge unless the request
carries the token; /token hands the token out for USER:PASSWORD (basic auth) and the
challenge's service and scope. Authorized requests are relayed to the registry at BACKEND
(host:port, plain http). Prints "token-ok PATH" for each request the token let through and
"password-leak" if the password ever reaches /v2.
"""
import base64
import http.server
import json
import secrets
import sys
import urllib.error
import urllib.request

port, backend, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
token = secrets.token_hex(16)
realm = f"http://127.0.0.1:{port}/token"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        if self.path.startswith("/token"):
            want = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
            if auth != want or "scope=repository%3A" not in self.path:
                return self.reply(401)
            return self.reply(200, json.dumps({"token": token}).encode(),
                              [("Content-Type", "application/json")])
        if password in auth or base64.b64encode(password.encode()).decode() in auth:
            print("password-leak", flush=True)
        if auth != "Bearer " + token:
            repo = self.path[4:].split("/manifests/")[0].split("/blobs/")[0]
            challenge = f'Bearer realm="{realm}",service="test",scope="repository:{repo}:pull"'
            return self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"token"}]}',
                              [("WWW-Authenticate", challenge)])
        print("token-ok", self.path, flush=True)
        req = urllib.request.Request(f"http://{backend}{self.path}",
                                     headers={"Accept": self.headers.get("Accept", "*/*")})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                body, status, h = r.read(), r.status, r.headers
        except urllib.error.HTTPError as e:
            body, status, h = e.read(), e.code, e.headers
        keep = [(k, h[k]) for k in ("Content-Type", "Docker-Content-Digest") if h.get(k)]
        self.reply(status, body, keep)


http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
