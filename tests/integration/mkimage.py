#!/usr/bin/env python3
"""Builds small OCI images for the image tests, from nothing but this machine's files.

  mkimage.py root DIR PROG...        a root with these programs (and their libraries,
                                     found with ldd) in DIR/usr/bin, merged-/usr links
  mkimage.py debroot DIR PKG...      a Debian root from this machine's own installed packages:
                                     PKG and what they depend on, recursively (files from
                                     dpkg -L, their status and file lists), for apt and dpkg
                                     to run in (no mirror needed)
  mkimage.py layout OUT [options]    an OCI image layout in OUT (oci-layout, index.json,
                                     blobs/sha256/...) with one layer per --layer
      --layer DIR          a directory, tarred (owners 0:0 unless --keep-owners)
      --layer-tar FILE     a tar file as it is (gzip-compressed into the blob)
      --env NAME=VALUE     config Env          --workdir DIR   config WorkingDir
      --entrypoint JSON    config Entrypoint   --cmd JSON      config Cmd
      --ref NAME           the index's org.opencontainers.image.ref.name
      --zstd               layers compressed with zstd (the zstd program)
      --uncompressed       layers as plain tars
      --keep-owners        the files' own owners instead of 0:0
      --owner PATH=UID:GID an entry's owner in the tar
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile


def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def make_root(dest, progs):
    libs = set()
    os.makedirs(os.path.join(dest, "usr/bin"), exist_ok=True)
    os.makedirs(os.path.join(dest, "usr/lib"), exist_ok=True)
    for name in ("bin", "lib", "lib64", "sbin"):
        target = "usr/" + name
        os.makedirs(os.path.join(dest, target), exist_ok=True)
        if not os.path.lexists(os.path.join(dest, name)):
            os.symlink(target, os.path.join(dest, name))
    for prog in progs:
        path = shutil.which(prog)
        if not path:
            sys.exit(f"mkimage: no program {prog}")
        shutil.copy2(os.path.realpath(path), os.path.join(dest, "usr/bin", prog))
        out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            for p in parts:
                if p.startswith("/"):
                    libs.add(p)
    for lib in libs:
        real = os.path.realpath(lib)
        # keep the directory layout the loader expects (/lib64/ld-linux..., /lib/x86_64-...)
        rel = lib.lstrip("/")
        if rel.startswith("lib64/") or rel.startswith("lib/"):
            rel = "usr/" + rel
        dst = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(real, dst)
    for d in ("etc", "tmp", "root", "var"):
        os.makedirs(os.path.join(dest, d), exist_ok=True)
    os.chmod(os.path.join(dest, "tmp"), 0o1777)


def installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return r.returncode == 0 and "install ok installed" in r.stdout


def deps_of(pkg):
    out = subprocess.run(["dpkg-query", "-W", "-f=${Depends},${Pre-Depends}", pkg],
                         capture_output=True, text=True).stdout
    names = []
    for clause in out.split(","):
        clause = clause.strip()
        if not clause:
            continue
        for alt in clause.split("|"):
            name = alt.strip().split()[0].split(":")[0]
            if installed(name):
                names.append(name)
                break
    return names


def make_debroot(dest, wanted):
    todo, seen = list(wanted), []
    while todo:
        p = todo.pop()
        if p in seen or not installed(p):
            continue
        seen.append(p)
        todo.extend(deps_of(p))
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                          text=True).stdout.strip()
    os.makedirs(dest, exist_ok=True)
    # the merged-/usr links of a Debian root first: "/lib/x" lands in usr/lib
    for name in ("bin", "sbin", "lib", "lib64"):
        os.makedirs(os.path.join(dest, "usr", name), exist_ok=True)
        if not os.path.lexists(os.path.join(dest, name)):
            os.symlink("usr/" + name, os.path.join(dest, name))
    status = []
    info = os.path.join(dest, "var/lib/dpkg/info")
    os.makedirs(info, exist_ok=True)
    for p in sorted(seen):
        status.append(subprocess.run(["dpkg-query", "-s", p], capture_output=True,
                                     text=True).stdout.strip() + "\n")
        files = subprocess.run(["dpkg-query", "-L", p], capture_output=True,
                               text=True).stdout.splitlines()
        for f in files:
            if not f.startswith("/") or f.startswith("/usr/share/doc") or \
                    f.startswith("/usr/share/man") or f.startswith("/usr/share/locale"):
                continue
            src = f
            dst = os.path.join(dest, f.lstrip("/"))
            if os.path.islink(src):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                if not os.path.lexists(dst):
                    os.symlink(os.readlink(src), dst)
            elif os.path.isdir(src):
                os.makedirs(dst, exist_ok=True)
            elif os.path.isfile(src):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(src, dst)
        for ext in ("list", "md5sums"):
            for name in (f"{p}.{ext}", f"{p}:{arch}.{ext}"):
                src = os.path.join("/var/lib/dpkg/info", name)
                if os.path.exists(src):
                    shutil.copy2(src, os.path.join(info, name))
    with open(os.path.join(dest, "var/lib/dpkg/status"), "w") as f:
        f.write("\n".join(status))
    for d in ("var/lib/dpkg/updates", "var/lib/dpkg/triggers", "var/lib/apt/lists/partial",
              "var/cache/apt/archives/partial", "var/log/apt", "etc/apt/apt.conf.d",
              "etc/apt/preferences.d", "etc/apt/sources.list.d", "tmp", "root", "home"):
        os.makedirs(os.path.join(dest, d), exist_ok=True)
    os.chmod(os.path.join(dest, "tmp"), 0o1777)
    for name in ("arch", "available", "diversions", "statoverride"):
        open(os.path.join(dest, "var/lib/dpkg", name if name != "arch" else "arch"), "a").close()
    open(os.path.join(dest, "etc/passwd"), "w").write(
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    open(os.path.join(dest, "etc/group"), "w").write("root:x:0:\nnogroup:x:65534:\n")
    print(" ".join(sorted(seen)))


def tar_dir(path, keep_owners, owners):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        def fix(ti):
            if not keep_owners:
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
            name = ti.name[2:] if ti.name.startswith("./") else ti.name
            if name in owners:
                ti.uid, ti.gid = owners[name]
            return ti
        for entry in sorted(os.listdir(path)):
            t.add(os.path.join(path, entry), arcname=entry, filter=fix)
    return buf.getvalue()


def compress(data, how):
    if how == "gzip":
        return gzip.compress(data, mtime=0), "application/vnd.oci.image.layer.v1.tar+gzip"
    if how == "zstd":
        out = subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True)
        return out.stdout, "application/vnd.oci.image.layer.v1.tar+zstd"
    return data, "application/vnd.oci.image.layer.v1.tar"


def write_blob(out, data):
    d = sha(data)
    with open(os.path.join(out, "blobs/sha256", d[7:]), "wb") as f:
        f.write(data)
    return d


def make_layout(out, args):
    layers, env, workdir, entrypoint, cmd, ref = [], [], None, None, None, None
    how, keep_owners, owners = "gzip", False, {}
    i = 0
    while i < len(args):
        a = args[i]
        v = args[i + 1] if i + 1 < len(args) else None
        if a == "--layer":
            layers.append(("dir", v)); i += 2
        elif a == "--layer-tar":
            layers.append(("tar", v)); i += 2
        elif a == "--env":
            env.append(v); i += 2
        elif a == "--workdir":
            workdir = v; i += 2
        elif a == "--entrypoint":
            entrypoint = json.loads(v); i += 2
        elif a == "--cmd":
            cmd = json.loads(v); i += 2
        elif a == "--ref":
            ref = v; i += 2
        elif a == "--owner":
            p, ids = v.split("="); u, g = ids.split(":"); owners[p] = (int(u), int(g)); i += 2
        elif a == "--zstd":
            how = "zstd"; i += 1
        elif a == "--uncompressed":
            how = "none"; i += 1
        elif a == "--keep-owners":
            keep_owners = True; i += 1
        else:
            sys.exit(f"mkimage: unknown option {a}")
    os.makedirs(os.path.join(out, "blobs/sha256"), exist_ok=True)
    descs, diff_ids = [], []
    for kind, src in layers:
        raw = tar_dir(src, keep_owners, owners) if kind == "dir" else open(src, "rb").read()
        diff_ids.append(sha(raw))
        blob, mt = compress(raw, how)
        descs.append({"mediaType": mt, "digest": write_blob(out, blob), "size": len(blob)})
    cfg = {"Env": env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    if workdir:
        cfg["WorkingDir"] = workdir
    if entrypoint is not None:
        cfg["Entrypoint"] = entrypoint
    if cmd is not None:
        cfg["Cmd"] = cmd
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    config = json.dumps({"architecture": arch, "os": "linux", "config": cfg,
                         "rootfs": {"type": "layers", "diff_ids": diff_ids},
                         "created": "2026-01-01T00:00:00Z"}, sort_keys=True).encode()
    cdesc = {"mediaType": "application/vnd.oci.image.config.v1+json",
             "digest": write_blob(out, config), "size": len(config)}
    manifest = json.dumps({"schemaVersion": 2,
                           "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": cdesc, "layers": descs}, sort_keys=True).encode()
    mdesc = {"mediaType": "application/vnd.oci.image.manifest.v1+json",
             "digest": write_blob(out, manifest), "size": len(manifest)}
    if ref:
        mdesc["annotations"] = {"org.opencontainers.image.ref.name": ref}
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [mdesc]}, f)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    print(sha(config))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    if sys.argv[1] == "root":
        make_root(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "debroot":
        make_debroot(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "layout":
        make_layout(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)
