#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The far side of the egress integration tests: servers a sandbox's traffic may reach.

Runs inside a network namespace the test made, on addresses the test added to that
namespace's lo (public-class addresses that exist nowhere else, so nothing can leave the
machine). This script never connects anywhere itself. Standard library only; run it with
/usr/bin/python3.

    egress-servers.py --dir DIR [--names N1,N2,...]
                      [--http ADDR:PORT[,...]] [--https ADDR:PORT[,...]]
                      [--echo ADDR:PORT[,...]] [--banner ADDR:PORT[,...]]
                      [--udp ADDR:PORT[,...]] [--git ADDR:PORT[,...]]

Each listener option may be repeated; an IPv6 address is written [ADDR]:PORT.

At start, in DIR:
  ca.pem, ca-key.pem          a test CA (EC P-256), made with the openssl CLI
  server.pem, server-key.pem  a server certificate signed by it: DNS SANs for --names, IP
                              SANs for the --https addresses
  git/repo.git                a bare repository, one commit: README "paddock-egress-test"
  requests.jsonl              emptied; then one JSON line per request or connection
  ready                       written (JSON: pid, listeners) once every listener is up;
                              removed again on exit
Runs until SIGTERM or SIGINT, then exits 0.

HTTP (--http) and HTTPS (--https, the same handler in TLS):
  GET /               200 "hello from <Host> via <listen addr:port>\\n"
  GET /bytes/N        N bytes (0 <= N <= 2 GiB), Content-Length set, sent in 64 KiB chunks
  GET /echo-headers   the request headers as a JSON object (repeated names joined by ", "),
                      ?as= a server that echoes in another shape: "chunked" (in chunks of
                      7 bytes), "gzip" (Content-Encoding: gzip whatever the request asked
                      for), "negotiated" (gzip only when Accept-Encoding allows it),
                      "base64", "hex" (the JSON encoded, as text/plain)
  POST /echo          the request body back (Content-Length or chunked); its first
                      4 KiB recorded as {"event": "body", "body": ...}
An absolute-form target (GET http://host/path) is routed by its path. Records:
  {"server": "http"|"https", "listen", "peer", "method", "path", "host", "headers", ["sni"]}
  a TLS connection that carried no request (a failed handshake, a client that refused the
  certificate): {"server": "https", "listen", "peer", "sni", "error"}, without "method"
Echo (--echo), TCP: echoes bytes until EOF; {"server": "echo", "listen", "peer"} per connection.
Banner (--banner), TCP, a server that speaks first as ssh, SMTP and MySQL do: sends
  "SSH-2.0-paddock-test\r\n" at once, then echoes until EOF; {"server": "banner", ...}.
UDP (--udp): {"server": "udp", "listen", "peer", "bytes": n} per datagram; no answer.
Git (--git): DIR/git served read-only over dumb HTTP, so that
  `git clone http://NAME:PORT/repo.git` works; {"server": "git", ...} as for http.
"""

import argparse
import base64
import gzip
import http.server
import json
import os
import shutil
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

CHUNK = 64 << 10
BYTES_MAX = 2 << 30
BODY_MAX = 256 << 20
IO_TIMEOUT = 60


class Log:
    """requests.jsonl: one write() per line, O_APPEND, so lines from threads never mix."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC,
                          0o644)
        self.lock = threading.Lock()

    def write(self, **record):
        line = json.dumps({"ts": round(time.time(), 3), **record}) + "\n"
        with self.lock:
            os.write(self.fd, line.encode())


def parse_addr(text):
    """"ADDR:PORT" or "[ADDR6]:PORT" -> (family, addr, port, "addr:port" as written)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected ADDR:PORT, got '{text}'")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        shown = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
        return family, host, int(port), shown
    raise argparse.ArgumentTypeError(f"expected a numeric address in '{text}'")


def addr_list(values):
    return [parse_addr(a) for v in values or [] for a in v.split(",") if a]


def peer(addr):
    return f"[{addr[0]}]:{addr[1]}" if ":" in addr[0] else f"{addr[0]}:{addr[1]}"


# ---- certificates ------------------------------------------------------------------------

OPENSSL_CNF = """\
[req]
distinguished_name = dn
prompt = no
[dn]
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
subjectAltName = {sans}
"""


def run(argv, input=None, **kw):
    r = subprocess.run(argv, input=input, stdin=None if input is not None else subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"egress-servers: {argv[0]} {argv[1]} failed: {r.stderr.strip()}")
    return r.stdout


def make_certs(d, names, https):
    sans = [f"DNS:{n}" for n in names] + [f"IP:{a[1]}" for a in https]
    if not sans:
        sans = ["DNS:localhost"]
    cnf = os.path.join(d, "openssl.cnf")
    with open(cnf, "w") as f:
        f.write(OPENSSL_CNF.format(sans=", ".join(sans)))
    p = lambda name: os.path.join(d, name)  # noqa: E731
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run(["openssl", "req", "-config", cnf, "-x509", *key, "-keyout", p("ca-key.pem"),
         "-out", p("ca.pem"), "-days", "3650", "-subj", "/CN=paddock egress test CA",
         "-extensions", "ca_ext"])
    run(["openssl", "req", "-config", cnf, "-new", *key, "-keyout", p("server-key.pem"),
         "-out", p("server.csr"), "-subj", f"/CN={names[0] if names else 'localhost'}"])
    run(["openssl", "x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"),
         "-CAkey", p("ca-key.pem"), "-set_serial", "0x" + os.urandom(8).hex(),
         "-days", "825", "-extfile", cnf, "-extensions", "server_ext", "-out", p("server.pem")])
    os.unlink(p("server.csr"))


# ---- git ---------------------------------------------------------------------------------

def make_repo(d):
    repo = os.path.join(d, "git", "repo.git")
    shutil.rmtree(repo, ignore_errors=True)
    os.makedirs(repo)
    date = "2025-01-01T00:00:00Z"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": d,
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_DIR": repo,
           "GIT_AUTHOR_NAME": "paddock", "GIT_AUTHOR_EMAIL": "paddock@test.invalid",
           "GIT_COMMITTER_NAME": "paddock", "GIT_COMMITTER_EMAIL": "paddock@test.invalid",
           "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    git = lambda *a, input=None: run(["git", *a], env=env, input=input).strip()  # noqa: E731
    git("init", "-q", "--bare", repo)
    blob = git("hash-object", "-w", "--stdin", input="paddock-egress-test\n")
    tree = git("mktree", input=f"100644 blob {blob}\tREADME\n")
    commit = git("commit-tree", tree, "-m", "paddock egress test")
    git("update-ref", "refs/heads/main", commit)
    git("symbolic-ref", "HEAD", "refs/heads/main")
    git("update-server-info")


# ---- servers -----------------------------------------------------------------------------

class Quiet:
    """A test peer's clients hang up mid-reply on purpose: no tracebacks for that."""

    def handle_error(self, request, client_address):
        e = sys.exc_info()[1]
        if isinstance(e, OSError):  # resets, timeouts, TLS alerts
            return
        print(f"egress-servers: {type(self).__name__} {peer(client_address)}: "
              f"{type(e).__name__}: {e}", file=sys.stderr)


def server_class(base, family):
    class Server(Quiet, base):
        address_family = family
        allow_reuse_address = True
        daemon_threads = True

        def server_bind(self):
            # not HTTPServer's: its socket.getfqdn() asks DNS, slow in a netns without it
            socketserver.TCPServer.server_bind(self)  # UDPServer's too
            self.server_name, self.server_port = self.server_address[:2]

    return Server


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IO_TIMEOUT

    def log_message(self, format, *args):
        pass

    def headers_dict(self):
        out = {}
        for k, v in self.headers.items():
            out[k] = f"{out[k]}, {v}" if k in out else v
        return out

    def parse_request(self):
        # every request that parses is recorded before it is answered, whatever the method
        if not super().parse_request():
            return False
        record = dict(server=self.server.kind, listen=self.server.listen,
                      peer=peer(self.client_address), method=self.command, path=self.path,
                      host=self.headers.get("Host"), headers=self.headers_dict())
        if self.server.kind == "https":
            record["sni"] = getattr(self.connection, "paddock_sni", None)
            self.connection.paddock_requests = getattr(self.connection, "paddock_requests", 0) + 1
        self.server.log.write(**record)
        return True

    def route(self):
        path = self.path
        if "://" in path:
            path = urllib.parse.urlsplit(path).path or "/"
        return path.split("?", 1)[0]

    def reply(self, code, body, ctype="text/plain; charset=utf-8"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        path = self.route()
        if path == "/":
            self.reply(200, f"hello from {self.headers.get('Host', '')} via "
                            f"{self.server.listen}\n".encode())
        elif path == "/echo-headers":
            self.echo_headers()
        elif path.startswith("/bytes/"):
            self.send_bytes(path[len("/bytes/"):])
        else:
            self.send_error(404)

    do_HEAD = do_GET

    def echo_headers(self):
        body = json.dumps(self.headers_dict()).encode() + b"\n"
        query = urllib.parse.urlsplit(self.path).query
        shape = urllib.parse.parse_qs(query).get("as", [""])[0]
        if shape == "chunked":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if self.command != "HEAD":
                for i in range(0, len(body), 7):
                    part = body[i:i + 7]
                    self.wfile.write(b"%x;n=%d\r\n%s\r\n" % (len(part), i, part))
                self.wfile.write(b"0\r\nX-Trailer: " + body.strip() + b"\r\n\r\n")
            return
        accept = self.headers.get("Accept-Encoding", "")
        if shape == "gzip" or (shape == "negotiated" and "gzip" in accept):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            data = gzip.compress(body)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            return
        if shape == "base64":
            return self.reply(200, base64.b64encode(body) + b"\n")
        if shape == "hex":
            return self.reply(200, body.hex().encode() + b"\n")
        self.reply(200, body, "application/json")

    def send_bytes(self, arg):
        if not arg.isdigit() or int(arg) > BYTES_MAX:
            return self.send_error(400, f"expected /bytes/N with N <= {BYTES_MAX}")
        n = int(arg)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        if self.command == "HEAD":
            return
        chunk = memoryview(bytes(CHUNK))
        while n > 0:
            k = min(n, CHUNK)
            self.wfile.write(chunk[:k])
            n -= k

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size = int(self.rfile.readline(64).split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(body)
                if len(body) + size > BODY_MAX:
                    raise ValueError("body too big")
                body += self.rfile.read(size)
                self.rfile.readline(8)
        n = int(self.headers.get("Content-Length", "0"))
        if not 0 <= n <= BODY_MAX:
            raise ValueError("body too big")
        return self.rfile.read(n)

    def do_POST(self):
        try:
            body = self.read_body()
        except ValueError as e:
            self.close_connection = True
            return self.send_error(400, str(e))
        if self.route() != "/echo":
            return self.send_error(404)
        # what arrived, for tests that check a body was (or was not) rewritten on the way
        self.server.log.write(server=self.server.kind, listen=self.server.listen,
                              event="body", body=body[:4096].decode("utf-8", "replace"))
        self.reply(200, body, self.headers.get("Content-Type", "application/octet-stream"))


def http_server(family, kind, listen, log, addr, ctx=None):
    base = server_class(http.server.ThreadingHTTPServer, family)

    class Server(base):
        def finish_request(self, request, client_address):
            if ctx is None:
                return super().finish_request(request, client_address)
            # the handshake runs in the connection's thread, never in the accept loop
            request.settimeout(IO_TIMEOUT)
            tls = ctx.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
            error = "no request"
            try:
                tls.do_handshake()
                self.RequestHandlerClass(tls, client_address, self)
            except (ssl.SSLError, OSError) as e:
                error = str(e)
            finally:
                tls.close()
            if not getattr(tls, "paddock_requests", 0):
                # a handshake that failed, or a client that hung up (one that refused our
                # certificate, say) before a request: still, which name did it ask for?
                log.write(server=kind, listen=listen, peer=peer(client_address),
                          sni=getattr(tls, "paddock_sni", None), error=error)

    srv = Server(addr, Handler)
    srv.kind, srv.listen, srv.log = kind, listen, log
    return srv


def tls_context(d):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, "server.pem"), os.path.join(d, "server-key.pem"))
    ctx.set_alpn_protocols(["http/1.1"])

    def sni(sock, name, _ctx):
        sock.paddock_sni = name  # read back after the handshake, or when it fails

    ctx.sni_callback = sni
    return ctx


class EchoHandler(socketserver.BaseRequestHandler):
    def handle(self):
        s = self.request
        self.server.log.write(server=self.server.kind, listen=self.server.listen,
                              peer=peer(self.client_address))
        s.settimeout(IO_TIMEOUT)
        while data := s.recv(CHUNK):
            s.sendall(data)
        s.shutdown(socket.SHUT_WR)


class BannerHandler(EchoHandler):
    def handle(self):
        self.request.sendall(b"SSH-2.0-paddock-test\r\n")
        super().handle()


class UDPHandler(socketserver.BaseRequestHandler):
    def handle(self):
        self.server.log.write(server="udp", listen=self.server.listen,
                              peer=peer(self.client_address), bytes=len(self.request[0]))


class GitHandler(http.server.SimpleHTTPRequestHandler):
    """Static files of DIR/git: GET and HEAD only, what a dumb-HTTP clone asks for."""

    def log_message(self, format, *args):
        pass

    def parse_request(self):
        if not super().parse_request():
            return False
        self.server.log.write(server="git", listen=self.server.listen,
                              peer=peer(self.client_address), method=self.command,
                              path=self.path, host=self.headers.get("Host"),
                              headers=Handler.headers_dict(self))
        return True


def main():
    ap = argparse.ArgumentParser(description="servers for the egress integration tests")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--names", action="append", default=[],
                    help="DNS names for the server certificate, comma-separated")
    for opt in ("http", "https", "echo", "banner", "udp", "git"):
        ap.add_argument("--" + opt, action="append", metavar="ADDR:PORT[,...]")
    a = ap.parse_args()
    try:
        listen = {k: addr_list(getattr(a, k))
                  for k in ("http", "https", "echo", "banner", "udp", "git")}
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    names = [n for v in a.names for n in v.split(",") if n]
    d = os.path.abspath(a.dir)
    os.makedirs(d, exist_ok=True)
    ready = os.path.join(d, "ready")
    if os.path.exists(ready):
        os.unlink(ready)

    make_certs(d, names, listen["https"])
    if listen["git"]:
        make_repo(d)
    log = Log(os.path.join(d, "requests.jsonl"))
    ctx = tls_context(d) if listen["https"] else None

    # From here on SIGTERM and SIGINT wait for sigwait() below, in every thread.
    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    servers = []
    try:
        for kind in ("http", "https"):
            for fam, host, port, shown in listen[kind]:
                servers.append(http_server(fam, kind, shown, log, (host, port),
                                           ctx if kind == "https" else None))
        for kind, handler in (("echo", EchoHandler), ("banner", BannerHandler)):
            for fam, host, port, shown in listen[kind]:
                servers.append(server_class(socketserver.ThreadingTCPServer, fam)(
                    (host, port), handler))
                servers[-1].listen, servers[-1].kind = shown, kind
        for fam, host, port, shown in listen["udp"]:
            servers.append(server_class(socketserver.UDPServer, fam)((host, port), UDPHandler))
            servers[-1].listen = shown
        git_dir = os.path.join(d, "git")
        for fam, host, port, shown in listen["git"]:
            handler = lambda *args: GitHandler(*args, directory=git_dir)  # noqa: E731
            servers.append(server_class(http.server.ThreadingHTTPServer, fam)(
                (host, port), handler))
            servers[-1].listen = shown
    except OSError as e:
        sys.exit(f"egress-servers: listen: {e}")
    for s in servers:
        s.log = log
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.1},
                         daemon=True).start()

    with open(ready + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "listen": {k: [x[3] for x in v]
                                                   for k, v in listen.items()}}, f)
        f.write("\n")
    os.rename(ready + ".tmp", ready)

    signal.sigwait(stop)
    stoppers = [threading.Thread(target=s.shutdown) for s in servers]
    for t in stoppers:
        t.start()
    for t in stoppers:
        t.join()
    for s in servers:
        s.server_close()
    os.unlink(ready)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # SIGINT while the certificates are being made
        sys.exit(130)
