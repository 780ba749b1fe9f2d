#!/usr/bin/env python3
"""Makes a container root filesystem offline, from what this machine has.

No registry is reachable from our machines, so images are built from scratch:
the files of Debian packages *installed on this host* (the dependency closure
of the packages named, through dpkg's Depends/Pre-Depends), plus the shared
libraries of the binaries named (ldd), plus directories copied as they are
(e.g. a pkforge .deb unpacked with dpkg -x). Documentation, man pages and
locales are left out. The result is a plain directory for `podman import` /
`docker import`.

  mkrootfs.py --out DIR [--packages P ...] [--binaries F ...] [--tree SRC ...] [--files F ...]
              [--exclude-packages P ...]

Exits non-zero naming the package or file when something is missing (never a
partial image without saying so).
"""
import argparse
import os
import re
import shutil
import stat
import subprocess
import sys

SKIP_PREFIXES = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/locale/",
                 "/usr/share/lintian/", "/usr/share/bug/", "/usr/share/bash-completion/")
# Package management and init plumbing: declared as (pre-)dependencies by many
# packages but never run inside these images.
NEVER = {"dpkg", "debconf", "perl-base", "install-info", "init-system-helpers", "adduser",
         "lsb-base", "sensible-utils", "debianutils", "passwd", "login", "systemd", "udev",
         "libpam-runtime", "cdebconf", "debconf-2.0", "awk", "mawk", "gpgv", "tar"}


def installed_version(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Version}", pkg],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.startswith("install ok installed"):
        return None
    return r.stdout.split("\t", 1)[1]


def providers(virtual):
    # Installed packages that Provide a virtual name (e.g. libc-dev -> libc6-dev).
    r = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Provides}\t${Status}\n"],
                       capture_output=True, text=True, check=True)
    out = []
    for line in r.stdout.splitlines():
        name, provides, status = (line.split("\t") + ["", ""])[:3]
        if "installed" not in status or "not-installed" in status:
            continue
        names = [p.strip().split(" ")[0] for p in provides.split(",") if p.strip()]
        if virtual in names:
            out.append(name)
    return out


def depends(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", pkg],
                       capture_output=True, text=True, check=True)
    groups = []
    for group in r.stdout.split(","):
        group = group.strip()
        if not group:
            continue
        alts = [re.sub(r"\s*\(.*?\)|\s*\[.*?\]|:any|:native", "", a).strip() for a in group.split("|")]
        groups.append([a for a in alts if a])
    return groups


def closure(roots, exclude):
    seen, todo = set(), list(roots)
    while todo:
        pkg = todo.pop()
        if pkg in seen or pkg in exclude:
            continue
        if installed_version(pkg) is None:
            cands = providers(pkg)
            if not cands:
                sys.exit(f"mkrootfs: package '{pkg}' is not installed on this host "
                         "(scripts/install-deps.sh installs what the images need)")
            pkg = cands[0]
            if pkg in seen:
                continue
        seen.add(pkg)
        for alts in depends(pkg):
            if any(a in NEVER or a in exclude for a in alts):
                continue
            chosen = next((a for a in alts if installed_version(a) is not None or providers(a)), None)
            if chosen is None:
                sys.exit(f"mkrootfs: no installed package satisfies '{' | '.join(alts)}' (for {pkg})")
            todo.append(chosen)
    return sorted(seen)


def place(out, path):
    """Copies host path (file or symlink) to out, through canonical parent dirs."""
    parent = os.path.realpath(os.path.dirname(path))
    dest_dir = out + parent
    os.makedirs(dest_dir, exist_ok=True)
    dest = os.path.join(dest_dir, os.path.basename(path))
    if os.path.lexists(dest):
        return
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(path), dest)
        target = os.path.join(parent, os.readlink(path))
        if os.path.lexists(target) and not os.path.isdir(target):
            place(out, target)  # the file a library symlink names
    elif stat.S_ISREG(st.st_mode):
        shutil.copy2(path, dest)


def package_files(pkg):
    r = subprocess.run(["dpkg-query", "-L", pkg], capture_output=True, text=True, check=True)
    for p in r.stdout.splitlines():
        if not p.startswith("/") or p.startswith(SKIP_PREFIXES) or p == "/.":
            continue
        if os.path.lexists(p) and not (os.path.isdir(p) and not os.path.islink(p)):
            yield p


def ldd_libs(binary):
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mkrootfs: ldd {binary} failed: {r.stderr.strip()}")
    for line in r.stdout.splitlines():
        m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)", line)
        if m:
            yield m.group(1)
        elif "not found" in line:
            sys.exit(f"mkrootfs: {binary}: {line.strip()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--packages", nargs="*", default=[])
    ap.add_argument("--exclude-packages", nargs="*", default=[])
    ap.add_argument("--binaries", nargs="*", default=[])
    ap.add_argument("--tree", nargs="*", default=[], help="directories copied to / as they are")
    ap.add_argument("--files", nargs="*", default=[], help="host files copied at their paths")
    a = ap.parse_args()

    out = os.path.abspath(a.out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out + "/usr")
    # Debian 12 is merged-/usr: /bin, /lib, /lib64, /sbin are links into /usr.
    for d in ("bin", "lib", "lib64", "sbin"):
        os.makedirs(f"{out}/usr/{d}", exist_ok=True)
        os.symlink(f"usr/{d}", f"{out}/{d}")
    for d, mode in (("tmp", 0o1777), ("var/tmp", 0o1777), ("etc", 0o755), ("root", 0o700),
                    ("proc", 0o755), ("sys", 0o755), ("dev", 0o755), ("run", 0o755)):
        os.makedirs(f"{out}/{d}", exist_ok=True)
        os.chmod(f"{out}/{d}", mode)

    pkgs = closure(a.packages, set(a.exclude_packages)) if a.packages else []
    for pkg in pkgs:
        for p in package_files(pkg):
            place(out, p)
    for b in a.binaries:
        for lib in ldd_libs(b):
            place(out, lib)
    for f in a.files:
        if not os.path.exists(f):
            sys.exit(f"mkrootfs: {f} does not exist on this host")
        place(out, f)
    for t in a.tree:
        shutil.copytree(t, out, symlinks=True, dirs_exist_ok=True)

    # Users the daemons and the sandbox name: root, and nobody (65534) whom
    # candidate ranks started by root drop to.
    with open(f"{out}/etc/passwd", "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    with open(f"{out}/etc/group", "w") as f:
        f.write("root:x:0:\nnogroup:x:65534:\n")
    with open(f"{out}/etc/nsswitch.conf", "w") as f:
        f.write("passwd: files\ngroup: files\nhosts: files dns\n")
    size = sum(os.lstat(os.path.join(d, n)).st_size for d, _, ns in os.walk(out) for n in ns)
    print(f"mkrootfs: {out}: {len(pkgs)} packages, {size / 2**20:.0f} MiB")
    if pkgs:
        print("mkrootfs: packages: " + " ".join(pkgs))


if __name__ == "__main__":
    main()
