#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety) over every daemon source
# that holds annotated shared state: each .cc under common/ rpc/ sandbox/
# storage/ agent/ executor/ orchestrator/ convert/ (tests excluded) that
# includes, or whose own header includes, absl/synchronization/mutex.h. Each
# is compiled with -fsyntax-only, with the flags the build directory's
# compile_commands.json gives it (so its generated headers must exist: build
# first), and any thread-safety warning is an error.
#
#   scripts/thread-safety.sh [BUILD_DIR]     # default build-ci
#
# The annotations (ABSL_GUARDED_BY, ABSL_EXCLUSIVE_LOCKS_REQUIRED, ...) are
# only checked on absl::Mutex: libstdc++'s std::mutex carries no capability
# attribute. Needs clang++ (scripts/install-deps.sh installs it); exits 77
# (ctest: skipped) without it. ctest runs it as thread_safety_check.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build-ci}"
CLANG="${PKFORGE_CLANGXX:-$(command -v clang++ || true)}"
if [[ -z "$CLANG" ]]; then
  echo "thread-safety.sh: clang++ not found; skipped" >&2
  exit 77
fi
if [[ ! -f "$BUILD/compile_commands.json" ]]; then
  echo "thread-safety.sh: $BUILD/compile_commands.json missing (configure the build first)" >&2
  exit 1
fi
exec python3 - "$CLANG" "$BUILD/compile_commands.json" "$(nproc)" <<'PY'
import concurrent.futures, json, os, re, shlex, subprocess, sys

clang, db, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
root = os.getcwd()
folders = ("common/", "rpc/", "sandbox/", "storage/", "agent/", "executor/", "orchestrator/",
           "convert/")
uses = re.compile(r'#include "absl/synchronization/mutex.h"')

def annotated(path):
    texts = [path] + [path[:-3] + ".h"]
    return any(os.path.exists(t) and uses.search(open(t, errors="replace").read()) for t in texts)

def command(entry):
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out, skip = [clang, "-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety"], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        # gcc-only or not ours to judge here: only thread-safety is an error.
        if a in ("-c", "-MD", "-Werror") or a.startswith("-Wshadow=") or a.endswith(("/c++", "/g++")):
            continue
        out.append(a)
    return out

# A unity build (the ci preset) lists its batch files, not the sources: each
# source a batch includes is checked alone with the batch's flags.
unity = re.compile(r'^#include "(/[^"]+\.cc)"$', re.M)

def expanded(e):
    if not re.search(r"/Unity/unity_\d+_cxx\.cxx$", e["file"]):
        return [e]
    out = []
    for src in unity.findall(open(e["file"], errors="replace").read()):
        f = dict(e, file=src)
        if "command" in e:
            f["command"] = " ".join(shlex.quote(src if a == e["file"] else a)
                                    for a in shlex.split(e["command"]))
        else:
            f["arguments"] = [src if a == e["file"] else a for a in e["arguments"]]
        out.append(f)
    return out

entries = []
for e in (f for raw in json.load(open(db)) for f in expanded(raw)):
    rel = os.path.relpath(e["file"], root)
    if rel.startswith(folders) and rel.endswith(".cc") and not rel.endswith(("_test.cc", "_bench.cc")) \
            and "/testing/" not in rel and annotated(rel):
        entries.append((rel, e))

def check(item):
    rel, e = item
    r = subprocess.run(command(e), cwd=e["directory"], capture_output=True, text=True)
    return rel, r.returncode, r.stderr

if not entries:
    print("thread-safety.sh: no annotated daemon source in the compile database", flush=True)
    sys.exit(1)
failed = 0
with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
    for rel, rc, err in pool.map(check, sorted(entries)):
        tsa = [l for l in err.splitlines() if "thread-safety" in l]
        if rc != 0 and (tsa or "error" in err):
            failed += 1
            print(f"FAIL {rel}\n{err}", flush=True)
        else:
            print(f"ok   {rel}", flush=True)
print(f"thread-safety.sh: {len(entries)} files, {failed} failed")
sys.exit(1 if failed else 0)
PY
