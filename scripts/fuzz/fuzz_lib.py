"""The shared part of the API fuzz battery (api_fuzz.py): protobuf stubs
generated from the repo's protos, the options (ARGS, filled by api_fuzz.py's
main), findings and canary scanning, the daemon targets and call helpers.
"""
import argparse
import concurrent.futures as cf
import os
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def gen_stubs():
    out = tempfile.mkdtemp(prefix="pkforge-fuzz-stubs-")
    from grpc_tools import protoc
    import grpc_tools
    inc = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    protos = ["pkforge/v1/common.proto", "pkforge/v1/executor.proto", "pkforge/v1/orchestrator.proto"]
    rc = protoc.main(["protoc", "-I" + os.path.join(REPO, "proto"), "-I" + inc,
                      "--python_out=" + out, "--grpc_python_out=" + out] + protos)
    if rc != 0:
        sys.exit("protoc failed")
    sys.path.insert(0, out)


gen_stubs()
import grpc  # noqa: E402
from pkforge.v1 import common_pb2 as c  # noqa: E402
from pkforge.v1 import executor_pb2 as e  # noqa: E402
from pkforge.v1 import executor_pb2_grpc as eg  # noqa: E402
from pkforge.v1 import orchestrator_pb2 as o  # noqa: E402
from pkforge.v1 import orchestrator_pb2_grpc as og  # noqa: E402

# The options of this run: api_fuzz.py main() fills this same object.
ARGS = argparse.Namespace()
FINDINGS = []
CANARIES = []
LOG_LOCK = threading.Lock()


def log(*a):
    with LOG_LOCK:
        print(*a, flush=True)


def finding(kind, what):
    FINDINGS.append((kind, what))
    log(f"  !! FINDING [{kind}] {what}")


def scan(label, text):
    if not text:
        return
    for cn in CANARIES:
        if cn and cn in text:
            finding("leak", f"{label}: reply contains canary {cn!r}")


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def threads(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return None


def fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


class Target:
    def __init__(self, name, addr, token, pid):
        self.name, self.addr, self.token, self.pid = name, addr, token, pid
        opts = [("grpc.max_receive_message_length", 256 << 20),
                ("grpc.max_send_message_length", 256 << 20),
                ("grpc.max_metadata_size", 1 << 20)]
        self.opts = opts
        self.channel = grpc.insecure_channel(addr, options=opts)

    def md(self, token=None):
        t = self.token if token is None else token
        return [("authorization", "Bearer " + t)] if t else []

    def new_channel(self):
        return grpc.insecure_channel(self.addr, options=self.opts)

    def alive(self):
        if self.pid is None:
            return True
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        # a zombie counts as dead
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().split(")")[-1].split()[0] != "Z"
        except OSError:
            return False

    def stats(self):
        return dict(rss_kb=rss_kb(self.pid), threads=threads(self.pid), fds=fds(self.pid))


def call(label, fn, req, md, timeout=20, expect_ok=None):
    """Unary call; returns (code, message, reply, seconds). Scans for leaks."""
    t0 = time.time()
    try:
        reply, callobj = fn.with_call(req, metadata=md, timeout=timeout)
        code, msg = grpc.StatusCode.OK, ""
        scan(label, str(reply))
        for k, v in (callobj.trailing_metadata() or ()):
            scan(label + " trailer", f"{k}={v}")
    except grpc.RpcError as err:
        reply = None
        code, msg = err.code(), err.details() or ""
        scan(label, msg)
        for k, v in (err.trailing_metadata() or ()):
            scan(label + " trailer", f"{k}={v!r}")
    dt = time.time() - t0
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        finding("hang", f"{label}: no answer within {timeout}s")
    if code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN):
        finding("internal", f"{label}: {code.name} {msg[:200]!r}")
    if expect_ok is True and code != grpc.StatusCode.OK:
        finding("rejected", f"{label}: expected OK, got {code.name} {msg[:200]!r}")
    if expect_ok is False and code == grpc.StatusCode.OK:
        finding("accepted", f"{label}: expected an error, got OK")
    log(f"  {label}: {code.name} {dt:.2f}s {msg[:160]!r}")
    return code, msg, reply, dt


def stream(label, fn, req, md, timeout=60, cancel_after=None):
    """Server-streaming call; returns (code, message, [replies], seconds)."""
    t0 = time.time()
    out = []
    it = fn(req, metadata=md, timeout=timeout)
    try:
        for m in it:
            out.append(m)
            scan(label, str(m))
            if cancel_after is not None and len(out) >= cancel_after:
                it.cancel()
                break
        code, msg = it.code(), it.details() or ""
    except grpc.RpcError as err:
        code, msg = err.code(), err.details() or ""
    scan(label, msg)
    dt = time.time() - t0
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        finding("hang", f"{label}: stream not done within {timeout}s")
    if code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN):
        finding("internal", f"{label}: {code.name} {msg[:200]!r}")
    log(f"  {label}: {code.name if code else None} {len(out)} msgs {dt:.2f}s {msg[:160]!r}")
    return code, msg, out, dt


def check_alive(targets, group):
    for t in targets:
        if t is None:
            continue
        if not t.alive():
            finding("crash", f"{t.name} died during group {group}")
        else:
            log(f"  [{t.name}] after {group}: {t.stats()}")


# ---------------------------------------------------------------- executor

def candidate_source(name):
    # A self-contained candidate from the executor's tests (C++ raw string).
    text = open(os.path.join(REPO, "executor/testing_candidates.h")).read()
    start = text.index(f"constexpr const char* {name} = R\"(") + len(f"constexpr const char* {name} = R\"(")
    return text[start:text.index(')";', start)]


HOST_SRC = candidate_source("kAllreduce")


def ev_req(**kw):
    r = e.EvaluateRequest(problem="allreduce", backend=c.BACKEND_HOST, world_size=2,
                          dtype=c.DTYPE_F32, size=c.SizeSpec(preset="tiny"), source=HOST_SRC,
                          trials=1, warmup_iters=1, timed_iters=4, timeout_s=20, skip_timing=True)
    for k, v in kw.items():
        if k == "size":
            r.size.CopyFrom(v)
        elif isinstance(v, list):
            getattr(r, k).extend(v)
        else:
            setattr(r, k, v)
    return r
