#!/usr/bin/env python3
"""Writes the seed corpus of fuzz-image-unpack and fuzz-image-manifest (run from anywhere;
the seeds are kept in git, this says how they were made)."""
import gzip
import io
import json
import os
import subprocess
import tarfile

here = os.path.dirname(os.path.abspath(__file__))
unpack = os.path.join(here, "corpus/image-unpack")
manifest = os.path.join(here, "corpus/image-manifest")


def tar(entries, fmt=tarfile.PAX_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for e in entries:
            ti = tarfile.TarInfo(e["name"])
            ti.type = e.get("type", tarfile.REGTYPE)
            ti.mode = e.get("mode", 0o644)
            ti.linkname = e.get("link", "")
            ti.mtime = 1700000000
            data = e.get("data", b"")
            if ti.type == tarfile.REGTYPE:
                ti.size = len(data)
            if ti.type in (tarfile.CHRTYPE, tarfile.BLKTYPE):
                ti.devmajor, ti.devminor = 1, 3
            t.addfile(ti, io.BytesIO(data) if ti.type == tarfile.REGTYPE else None)
    return buf.getvalue()


F = lambda n, d=b"x", **k: dict(name=n, data=d, **k)
D = lambda n, **k: dict(name=n, type=tarfile.DIRTYPE, mode=k.pop("mode", 0o755), **k)
S = lambda n, to: dict(name=n, type=tarfile.SYMTYPE, link=to)
H = lambda n, to: dict(name=n, type=tarfile.LNKTYPE, link=to)

seeds = {
    "basic": [D("usr"), D("usr/bin"), F("usr/bin/a", b"#!/bin/sh\n"), S("bin", "usr/bin")],
    "whiteouts": [D("etc"), F("etc/.wh.passwd", b""), D("var"), F("var/.wh..wh..opq", b""),
                  F("var/new")],
    "hardlink": [F("a", b"data"), H("b", "a")],
    "escape-dotdot": [F("../x"), F("a/../../y")],
    "escape-symlink": [S("l", "/etc"), F("l/passwd")],
    "escape-symlink-rel": [S("l", "../../.."), D("l/x")],
    "escape-hardlink": [H("x", "/etc/passwd"), H("y", "../outside/z")],
    "devices": [dict(name="dev/null", type=tarfile.CHRTYPE, mode=0o666),
                dict(name="dev/sda", type=tarfile.BLKTYPE, mode=0o600),
                dict(name="fifo", type=tarfile.FIFOTYPE)],
    "setid": [F("su", mode=0o4755), F("sg", mode=0o2755), D("sticky", mode=0o1777)],
    "readonly-dir": [D("ro", mode=0o555), F("ro/f"), D("ro/sub", mode=0o500), F("ro/sub/g")],
    "replace": [D("a"), F("a/x"), F("a"), D("a"), S("b", "a"), F("b")],
    "long-names": [F("d/" + "n" * 200 + "/" + "m" * 120), S("s", "t" * 3000)],
    "absolute": [F("/etc/hosts"), F("./etc/x"), F("//a//b")],
}
for name, entries in seeds.items():
    raw = tar(entries)
    open(os.path.join(unpack, name + ".tar"), "wb").write(raw)
open(os.path.join(unpack, "basic.tar.gz"), "wb").write(gzip.compress(tar(seeds["basic"]), mtime=0))
z = subprocess.run(["zstd", "-q", "-c"], input=tar(seeds["whiteouts"]), capture_output=True)
if z.returncode == 0:
    open(os.path.join(unpack, "whiteouts.tar.zst"), "wb").write(z.stdout)
open(os.path.join(unpack, "gnu.tar"), "wb").write(tar(seeds["basic"], tarfile.GNU_FORMAT))
open(os.path.join(unpack, "truncated.tar.gz"), "wb").write(
    gzip.compress(tar(seeds["basic"]), mtime=0)[:60])

d = lambda c: "sha256:" + c * 64
docs = {
    "index.json": {"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": d("a"),
         "size": 1, "platform": {"os": "linux", "architecture": "amd64"}}]},
    "manifest.json": {"schemaVersion": 2, "config": {"digest": d("b"), "size": 2},
                      "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                                  "digest": d("c"), "size": 3}]},
    "docker-list.json": {"schemaVersion": 2, "mediaType":
                         "application/vnd.docker.distribution.manifest.list.v2+json",
                         "manifests": [{"digest": d("d"), "size": 4,
                                        "platform": {"os": "linux", "architecture": "arm64",
                                                     "variant": "v8"}}]},
    "bad-digest.json": {"config": {"digest": "sha256:zz", "size": 1}, "layers": []},
    "schema1.json": {"schemaVersion": 1, "mediaType":
                     "application/vnd.docker.distribution.manifest.v1+prettyjws"},
}
for name, doc in docs.items():
    open(os.path.join(manifest, name), "w").write(json.dumps(doc))
