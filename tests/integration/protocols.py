#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Run inside a sandbox by test-egress.sh and test-secrets.sh: protocols that are not HTTP,
through each way out (CONNECT, SOCKS5, transparent), to the test servers of netns-wrap.sh:
  allowed.test:22  speaks first ("SSH-2.0-paddock-test"), then echoes (as ssh, SMTP, MySQL)
  allowed.test:7   echoes what the client sends first (a binary protocol, a text protocol)
Prints one line per case, "VIA KIND: ok ..." or "VIA KIND: failed ...", with how long the
first answer took."""
import socket
import sys
import time

HOST = "allowed.test"


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise OSError(f"closed after {data!r}")
        data += chunk
    return data


def open_via(via, port):
    if via == "connect":
        s = socket.create_connection(("127.0.0.1", 3128), timeout=6)
        s.sendall(f"CONNECT {HOST}:{port} HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n".encode())
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += recv_exact(s, 1)
        if not head.startswith(b"HTTP/1.1 200"):
            raise OSError(f"CONNECT answered {head!r}")
    elif via == "socks":
        s = socket.create_connection(("127.0.0.1", 1080), timeout=6)
        s.sendall(b"\x05\x01\x00")
        if recv_exact(s, 2) != b"\x05\x00":
            raise OSError("SOCKS5 greeting refused")
        name = HOST.encode()
        s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + port.to_bytes(2, "big"))
        if recv_exact(s, 10)[1] != 0:
            raise OSError("SOCKS5 request refused")
    else:
        s = socket.create_connection((HOST, port), timeout=6)
    return s


def server_first(via, linger):
    t0 = time.monotonic()
    s = open_via(via, 22)
    t1 = time.monotonic()
    banner = recv_exact(s, 22)
    ms = (time.monotonic() - (t0 if via == "transparent" else t1)) * 1000
    if banner != b"SSH-2.0-paddock-test\r\n":
        raise OSError(f"banner {banner!r}")
    msg = b"SSH-2.0-client\r\n\x00\x01binary\xff"
    s.sendall(msg)
    if recv_exact(s, len(msg)) != msg:
        raise OSError("no echo")
    if linger:
        time.sleep(linger)
        s.sendall(b"later")
        if recv_exact(s, 5) != b"later":
            raise OSError("no echo later")
    s.close()
    return f"banner after {ms:.0f} ms" + (f", still open after {linger} s" if linger else "")


def client_first(via):
    out = []
    for msg in (b"\x00\x00\x00\x08\x04\xd2\x16\x2f", b"SET k v\r\n"):
        s = open_via(via, 7)
        t = time.monotonic()
        s.sendall(msg)
        if recv_exact(s, len(msg)) != msg:
            raise OSError("no echo")
        out.append(f"{(time.monotonic() - t) * 1000:.0f} ms")
        s.close()
    return "echo after " + " and ".join(out)


for via in sys.argv[1:] or ("connect", "socks", "transparent"):
    for kind, fn in (("server-first", lambda: server_first(via, 3.2 if via == "connect" else 0)),
                     ("client-first", lambda: client_first(via))):
        try:
            print(f"{via} {kind}: ok {fn()}", flush=True)
        except (OSError, socket.timeout) as e:
            print(f"{via} {kind}: failed {e!r}", flush=True)
