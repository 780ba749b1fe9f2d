#!/usr/bin/env python3
"""Untrusted-client fuzz/attack battery for the pkforge gRPC APIs.

Talks to a running pkforge-executor and/or pkforge-orchestrator as an API
client would: malformed and out-of-range fields, huge and invalid strings,
path-like values, wrong/duplicate/oversized auth metadata, cancelled streams,
many concurrent streams. After every group it checks that the daemons are
still alive (by pid), reports their RSS, and scans every reply (messages,
status details, trailers) for canary strings (tokens, keys, file contents)
that must never come back.

Setup (stubs are generated from the repo's protos into a temp dir):
  python3 -m venv /tmp/fz && /tmp/fz/bin/pip install grpcio grpcio-tools
  /tmp/fz/bin/python scripts/fuzz/api_fuzz.py \
      --executor 127.0.0.1:51901 --exec-token-file exec.tok --exec-pid PID \
      --orchestrator 127.0.0.1:51902 --orch-token-file orch.tok --orch-pid PID \
      --canary sk-SECRET --canary 'FILE CONTENT' --groups all

scripts/fuzz/run_fuzz.sh starts a matching pair (and a fake LLM) on loopback, runs
this battery against them and stops them.
Loads are bounded (at most a few hundred concurrent streams, a few thousand
requests in all).
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

def _candidate(name):
    # A self-contained candidate from the executor's tests (C++ raw string).
    text = open(os.path.join(REPO, "executor/testing_candidates.h")).read()
    start = text.index(f"constexpr const char* {name} = R\"(") + len(f"constexpr const char* {name} = R\"(")
    return text[start:text.index(')";', start)]


HOST_SRC = _candidate("kAllreduce")


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


def exec_auth(x):
    log("== executor: auth and metadata")
    st = eg.ExecutorStub(x.channel)
    R = e.DescribeDeviceRequest()
    call("no token", st.DescribeDevice, R, [], expect_ok=False)
    call("wrong token", st.DescribeDevice, R, x.md("nope"), expect_ok=False)
    call("token without Bearer", st.DescribeDevice, R, [("authorization", x.token)])
    call("lowercase bearer", st.DescribeDevice, R, [("authorization", "bearer " + x.token)])
    call("token + trailing space", st.DescribeDevice, R, [("authorization", "Bearer " + x.token + " ")])
    call("token prefix", st.DescribeDevice, R, x.md(x.token[:-1]), expect_ok=False)
    call("dup auth, wrong first", st.DescribeDevice, R,
         [("authorization", "Bearer nope"), ("authorization", "Bearer " + x.token)])
    call("dup auth, right first", st.DescribeDevice, R,
         [("authorization", "Bearer " + x.token), ("authorization", "Bearer nope")])
    call("64 KiB auth header", st.DescribeDevice, R, [("authorization", "Bearer " + "A" * 65536)],
         expect_ok=False)
    call("900 KiB junk header", st.DescribeDevice, R,
         x.md() + [("x-junk", "B" * (900 << 10))])
    call("1000 headers", st.DescribeDevice, R, x.md() + [(f"x-h{i}", "v") for i in range(1000)])
    call("ok", st.DescribeDevice, R, x.md(), expect_ok=True)
    stream("Evaluate no token", st.Evaluate, ev_req(), [])
    call("ListProblems no token", st.ListProblems, e.ListProblemsRequest() if hasattr(e, "ListProblemsRequest") else c.ListProblemsRequest(), [], expect_ok=False)


def exec_fields(x):
    log("== executor: Evaluate field validation")
    st = eg.ExecutorStub(x.channel)
    md = x.md()
    nan = float("nan")
    cases = {
        "empty request": e.EvaluateRequest(),
        "unknown problem": ev_req(problem="nope"),
        "problem ../../etc/passwd": ev_req(problem="../../etc/passwd"),
        "problem /etc/passwd": ev_req(problem="/etc/passwd"),
        "problem 1 MiB": ev_req(problem="p" * (1 << 20)),
        "backend 99": ev_req(backend=99),
        "backend cuda (none)": ev_req(backend=c.BACKEND_CUDA),
        "world 0": ev_req(world_size=0),
        "world -1": ev_req(world_size=-1),
        "world 2^31-1": ev_req(world_size=2**31 - 1),
        "world 65": ev_req(world_size=65),
        "dtype 99": ev_req(dtype=99),
        "dtype -5": ev_req(dtype=-5),
        "dtype fp8": ev_req(dtype=c.DTYPE_FP8_E4M3),
        "preset bogus": ev_req(size=c.SizeSpec(preset="../x")),
        "preset 1MiB": ev_req(size=c.SizeSpec(preset="x" * (1 << 20))),
        "dims empty": ev_req(size=c.SizeSpec(dims=c.SizeSpec.Dims())),
        "dims unknown name": ev_req(size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"Z": 4}))),
        "dims neg": ev_req(size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": -4}))),
        "dims 0": ev_req(size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": 0}))),
        "dims 2^62": ev_req(size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": 2**62}))),
        "dims int64 max": ev_req(size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": 2**63 - 1}))),
        "dims int64 min": ev_req(size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": -2**63}))),
        "dims 1": ev_req(size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": 1}))),
        "dims 1000 names": ev_req(size=c.SizeSpec(dims=c.SizeSpec.Dims(values={f"d{i}": 1 for i in range(1000)}))),
        "source empty": ev_req(source=""),
        "source 1MiB+1": ev_req(source="a" * ((1 << 20) + 1)),
        "source 7MiB": ev_req(source="a" * (7 << 20)),
        "source 9MiB (over max msg)": ev_req(source="a" * (9 << 20)),
        "trials -1": ev_req(trials=-1),
        "trials 101": ev_req(trials=101),
        "warmup 2^31-1": ev_req(warmup_iters=2**31 - 1),
        "timed -1": ev_req(timed_iters=-1),
        "timeout NaN": ev_req(timeout_s=nan),
        "timeout inf": ev_req(timeout_s=float("inf")),
        "timeout -1": ev_req(timeout_s=-1.0),
        "timeout 1e-300": ev_req(timeout_s=1e-300),
        "timeout 601": ev_req(timeout_s=601),
        "sanitize 99": ev_req(sanitize=99),
        "sanitize memcheck host": ev_req(sanitize=c.SANITIZER_MEMCHECK),
        "profile host": ev_req(profile=True),
        "extra_flags -I/etc": ev_req(extra_flags=["-I/etc"]),
        "extra_flags @file": ev_req(extra_flags=["@/etc/passwd"]),
        "extra_flags -o": ev_req(extra_flags=["-o", "/tmp/x"]),
        "extra_flags -fplugin": ev_req(extra_flags=["-fplugin=/tmp/x.so"]),
        "extra_flags -B": ev_req(extra_flags=["-B/tmp"]),
        "extra_flags -wrapper": ev_req(extra_flags=["-wrapper", "/bin/sh"]),
        "extra_flags -specs": ev_req(extra_flags=["-specs=/etc/passwd"]),
        "extra_flags 10000": ev_req(extra_flags=["-O2"] * 10000),
        "client_tag 257": ev_req(client_tag="t" * 257),
        "client_tag newline": ev_req(client_tag="a\nFAKE LOG LINE"),
        "client_tag ansi": ev_req(client_tag="\x1b[31mred"),
        "client_tag u+2028": ev_req(client_tag="a\u2028b"),
        "client_tag bidi": ev_req(client_tag="a\u202eb"),
        "size_ladder 4": ev_req(size_ladder=["tiny", "default", "large", "tiny"], skip_timing=False),
        "size_ladder dup": ev_req(size_ladder=["tiny", "tiny"], skip_timing=False),
        "size_ladder bogus": ev_req(size_ladder=["../etc"], skip_timing=False),
        "size_ladder with skip_timing": ev_req(size_ladder=["default"]),
        "hidden shapes tiny": ev_req(hidden_shapes=True),
    }
    for label, req in cases.items():
        stream("Evaluate " + label, st.Evaluate, req, md, timeout=60)


def exec_sources(x):
    log("== executor: candidate sources (run through compile; host backend)")
    st = eg.ExecutorStub(x.channel)
    md = x.md()
    srcs = {
        "include /etc/passwd": '#include "/etc/passwd"\n',
        "include token file": f'#include "{os.path.abspath(ARGS.exec_token_file)}"\n' if ARGS.exec_token_file else "",
        "include ../../../etc/shadow": '#include "../../../../../../etc/shadow"\n',
        "include outside canary": f'#include "{ARGS.outside_file}"\n' if ARGS.outside_file else "",
        "include /proc/self/environ": '#include "/proc/self/environ"\n',
        # /dev/zero: the compiler grows to the compile sandbox's memory cap (8 GiB, ~40 s): --heavy only
        "include /dev/zero": '#include "/dev/zero"\n' if ARGS.heavy else "",
        "include /dev/stdin": '#include "/dev/stdin"\n',
        "embed token": f'const char x[] = {{\n#embed "{os.path.abspath(ARGS.exec_token_file)}"\n}};\n' if ARGS.exec_token_file else "",
        "incbin asm token": f'asm(".incbin \\"{os.path.abspath(ARGS.exec_token_file)}\\"");\n' if ARGS.exec_token_file else "",
        "asm incbin passwd": 'asm(".section .rodata\\n.incbin \\"/etc/passwd\\"\\n.previous");\n',
        "pragma GCC dependency": '#pragma GCC dependency "/etc/shadow"\n',
        "__has_include probe": '#if __has_include("/root/.ssh/id_rsa")\n#error HAS_ROOT_SSH_KEY\n#else\n#error NO_ROOT_SSH_KEY\n#endif\n',
        "error with __FILE__": '#error __FILE__\n',
        "template bomb": "template<int N> struct F { static const int v = F<N-1>::v + F<N-2>::v; };\n"
                         "template<> struct F<0>{static const int v=0;}; template<> struct F<1>{static const int v=1;};\n"
                         "int x = F<100000>::v;\n",
        "nul bytes": "int a;\x00\x00\x00int b;\n",
        "1 MiB of comment": "//" + "x" * ((1 << 20) - 3) + "\n",
        "only BOM": "\ufeff",
        "deep nesting": "int x = " + "(" * 50000 + "1" + ")" * 50000 + ";\n",
    }
    for label, src in srcs.items():
        if not src:
            continue
        code, msg, out, dt = stream("source " + label, st.Evaluate, ev_req(source=src), md, timeout=180)
        for m in out:
            if m.HasField("result"):
                r = m.result
                txt = r.compile.output + r.message
                log(f"     -> {e.EvaluationResult.Status.Name(r.status) if hasattr(e, 'EvaluationResult') else c.EvaluationResult.Status.Name(r.status)}: {txt[:300]!r}")
                # The compile sandbox has its own /etc/passwd: the host's first line must not show.
                host_passwd = open("/etc/passwd").readline().strip()
                for needle in [host_passwd, "HAS_ROOT_SSH_KEY"] + CANARIES:
                    if needle in txt:
                        finding("disclosure?", f"source {label}: compile output contains {needle!r}: {txt[:300]!r}")


def exec_streams(x):
    log("== executor: cancellation and concurrency")
    st = eg.ExecutorStub(x.channel)
    md = x.md()
    # cancel mid-stream after the first progress message, 20 times
    for i in range(20):
        stream(f"cancel after 1 msg #{i}", st.Evaluate, ev_req(client_tag=f"cancel{i}"), md, cancel_after=1)
    # close the whole channel mid-stream
    for i in range(10):
        ch = x.new_channel()
        s2 = eg.ExecutorStub(ch)
        it = s2.Evaluate(ev_req(client_tag=f"close{i}"), metadata=md, timeout=60)
        try:
            next(it)
        except Exception as err:  # noqa: BLE001
            log(f"  close #{i}: {err}")
        ch.close()
    time.sleep(1)
    # many concurrent streams with distinct tags, each cancelled by its deadline
    n = ARGS.concurrency
    before = x.stats()
    log(f"  {n} concurrent Evaluate streams (deadline 3 s) ...")

    def one(i):
        it = st.Evaluate(ev_req(client_tag=f"flood{i}", source=HOST_SRC + f"// {i}\n"), metadata=md, timeout=3)
        codes = None
        try:
            for _ in it:
                pass
            codes = it.code()
        except grpc.RpcError as err:
            codes = err.code()
        return codes

    with cf.ThreadPoolExecutor(max_workers=64) as pool:
        codes = list(pool.map(one, range(n)))
    hist = {}
    for cd in codes:
        hist[cd.name if cd else None] = hist.get(cd.name if cd else None, 0) + 1
    log(f"  flood codes: {hist}; before {before} after {x.stats()}")
    # after the flood: a normal evaluation must still finish promptly
    code, msg, out, dt = stream("evaluation after flood", st.Evaluate, ev_req(client_tag="afterflood"), md, timeout=240)
    if code != grpc.StatusCode.OK:
        finding("dos", f"evaluation after a flood of {n} cancelled streams: {code} after {dt:.1f}s")
    time.sleep(5)
    log(f"  settled: {x.stats()}")
    # remeasure concurrently (spawns a detached thread per call)
    def rem(i):
        try:
            st.DescribeDevice(e.DescribeDeviceRequest(remeasure=True), metadata=md, timeout=30)
            return "OK"
        except grpc.RpcError as err:
            return err.code().name
    with cf.ThreadPoolExecutor(max_workers=32) as pool:
        res = list(pool.map(rem, range(64)))
    log(f"  64 concurrent remeasure: {dict((k, res.count(k)) for k in set(res))}; {x.stats()}")


def exec_listproblems(x):
    log("== executor: ListProblems")
    st = eg.ExecutorStub(x.channel)
    md = x.md()
    LP = c.ListProblemsRequest
    for label, req in {
        "default": LP(),
        "world -1": LP(world_size=-1),
        "world 2^31-1": LP(world_size=2**31 - 1),
        "world 64 ref": LP(world_size=64, include_reference_source=True),
        "dtype 99": LP(world_size=2, dtype=99),
        "dims huge": LP(world_size=8, size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": 2**62, "M": 2**62, "K": 2**62}))),
        "dims neg": LP(world_size=8, size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": -1}))),
        "preset 1MiB": LP(world_size=2, size=c.SizeSpec(preset="x" * (1 << 20))),
        "dims 1000": LP(world_size=2, size=c.SizeSpec(dims=c.SizeSpec.Dims(values={("d" * 1000 + str(i)): 1 for i in range(1000)}))),
    }.items():
        call("ListProblems " + label, st.ListProblems, req, md, timeout=30)


# ------------------------------------------------------------ orchestrator

def spec(**kw):
    s = o.JobSpec(problem="allreduce", backend=c.BACKEND_HOST, world_size=2, dtype=c.DTYPE_F32,
                  size=c.SizeSpec(preset="tiny"))
    s.agent.kind = o.AGENT_KIND_REPLAY
    s.agent.replay_sources.add(name="a.cc", source=HOST_SRC)
    s.budget.max_evaluations = 1
    s.eval.trials = 1
    for k, v in kw.items():
        k_parts = k.split("__")
        obj = s
        for p in k_parts[:-1]:
            obj = getattr(obj, p)
        f = k_parts[-1]
        if callable(v):
            v(getattr(obj, f) if f else obj)
        elif isinstance(v, list):
            del getattr(obj, f)[:]
            getattr(obj, f).extend(v)
        elif hasattr(v, "CopyFrom"):
            getattr(obj, f).CopyFrom(v)
        else:
            setattr(obj, f, v)
    return s


def llm(**kw):
    def f(a):
        a.kind = o.AGENT_KIND_LLM
        del a.replay_sources[:]
        a.llm.provider_name = kw.pop("provider_name", "fake")
        a.llm.model = kw.pop("model", "m")
        for k, v in kw.items():
            setattr(a.llm, k, v)
    return f


def replay_dir(d):
    def f(a):
        del a.replay_sources[:]
        a.replay_dir = d
    return f


def orch_auth(y):
    log("== orchestrator: auth and metadata")
    st = og.OrchestratorStub(y.channel)
    R = o.ListJobsRequest()
    call("no token", st.ListJobs, R, [], expect_ok=False)
    call("wrong token", st.ListJobs, R, y.md("nope"), expect_ok=False)
    call("token w/o Bearer", st.ListJobs, R, [("authorization", y.token)])
    call("dup auth wrong first", st.ListJobs, R, [("authorization", "Bearer x"), ("authorization", "Bearer " + y.token)])
    call("dup auth right first", st.ListJobs, R, [("authorization", "Bearer " + y.token), ("authorization", "Bearer x")])
    call("900 KiB header", st.ListJobs, R, y.md() + [("x-junk", "B" * (900 << 10))])
    code, msg, out, dt = stream("WatchJob no token", st.WatchJob, o.WatchJobRequest(job_id="job_x"), [], timeout=10)
    if code == grpc.StatusCode.OK or out:
        finding("auth", "WatchJob without token streamed")
    for name, req in [("SubmitJob", o.SubmitJobRequest(spec=spec())), ("GetJob", o.GetJobRequest(job_id="x")),
                      ("CancelJob", o.CancelJobRequest(job_id="x")), ("GetTrajectory", o.GetTrajectoryRequest(job_id="x")),
                      ("AnalyzePlateau", o.AnalyzePlateauRequest()), ("ListProblems", c.ListProblemsRequest()),
                      ("ListExecutors", o.ListExecutorsRequest())]:
        call(name + " no token", getattr(st, name), req, [], expect_ok=False)


def orch_submit(y):
    log("== orchestrator: SubmitJob validation")
    st = og.OrchestratorStub(y.channel)
    md = y.md()
    nan, inf = float("nan"), float("inf")
    S = lambda **kw: o.SubmitJobRequest(spec=spec(**kw))  # noqa: E731
    cases = {
        "empty": o.SubmitJobRequest(),
        "problem traversal": S(problem="../../etc/passwd"),
        "problem 1MiB": S(problem="p" * (1 << 20)),
        "world -1": S(world_size=-1),
        "world 65": S(world_size=65),
        "backend 7": S(backend=7),
        "dtype 99": S(dtype=99),
        "dims neg": S(size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": -1}))),
        "dims huge": S(size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": 2**62}))),
        "wall NaN": S(budget__wall_seconds=nan),
        "wall inf": S(budget__wall_seconds=inf),
        "wall 1e308": S(budget__wall_seconds=1e308, budget__max_evaluations=0),
        "no budget": S(budget__max_evaluations=0),
        "max_tokens -1": S(budget__max_tokens=-1),
        "target NaN": S(budget__target_speedup=nan),
        "cost -inf": S(budget__max_cost_usd=-inf),
        "eval timeout NaN": S(eval__timeout_s=nan),
        "eval timeout 1e9": S(eval__timeout_s=1e9),
        "eval trials 101": S(eval__trials=101),
        "eval warmup 2^31-1": S(eval__warmup_iters=2**31 - 1),
        "eval sanitize 99": S(eval__sanitize=99),
        "size_ladder bogus": S(eval__size_ladder=["../x"]),
        "label 257": S(label="l" * 257),
        "label newline/ansi": S(label="a\n\x1b[31mb"),
        "label bidi": S(label="a\u202eb"),
        "agent kind 9": S(agent__kind=9),
        "replay no sources": S(agent=replay_dir("")),
        "replay dir /etc": S(agent=replay_dir("/etc")),
        "replay dir /root": S(agent=replay_dir("/root")),
        "replay dir ../../etc": S(agent=replay_dir("../../../../etc")),
        "replay dir nonexistent": S(agent=replay_dir("/nonexistent-dir-xyz")),
        "replay dir symlink escape": S(agent=replay_dir("escape")),
        "replay dir outside abs": S(agent=replay_dir(os.path.dirname(ARGS.outside_file) if ARGS.outside_file else "/tmp")),
        "replay dir file": S(agent=replay_dir("ok/naive_host.cc")),
        "replay dir NUL": S(agent=replay_dir("ok\x00/../../etc")) if False else S(agent=replay_dir("ok/../ok")),
        "replay dir 1MiB": S(agent=replay_dir("a/" * (1 << 19))),
        "replay dir 5000 chars": S(agent=replay_dir("a" * 5000)),
        "replay 1001 sources": S(agent=lambda a: [a.replay_sources.add(name=f"{i}", source="x") for i in range(1000)]),
        "replay source name ../../x": S(agent=lambda a: a.replay_sources.add(name="../../../tmp/pwn", source=HOST_SRC)),
        "replay source 1MiB+1": S(agent=lambda a: a.replay_sources.add(name="big", source="a" * ((1 << 20) + 1))),
        "replay source empty": S(agent=lambda a: a.replay_sources.add(name="empty", source="")),
        "replay sources + dir": S(agent=lambda a: setattr(a, "replay_dir", "ok")),
        "llm api_key_env HOME": S(agent=llm(api_key_env="HOME")),
        "llm api_key_env PKF_FUZZ_KEY": S(agent=llm(api_key_env="PKF_FUZZ_KEY")),
        "llm unknown provider": S(agent=llm(provider_name="../../etc/passwd")),
        "llm provider name 1MiB": S(agent=llm(provider_name="x" * (1 << 20))),
        "llm base_url evil": S(agent=llm(base_url="http://evil.example/v1")),
        "llm base_url file": S(agent=llm(base_url="file:///etc/passwd")),
        "llm base_url same+path": S(agent=llm(base_url="http://127.0.0.1:51903/v1/../../x")),
        "llm wrong kind": S(agent=llm(provider=o.PROVIDER_ANTHROPIC)),
        "llm provider enum 9": S(agent=llm(provider=9)),
        "llm no model": S(agent=llm(model="")),
        "llm model 1MiB": S(agent=llm(model="m" * (1 << 20))),
        "llm model newline": S(agent=llm(model="m\r\nX-Injected: 1")),
        "llm temperature NaN": S(agent=llm(temperature=nan)),
        "llm temperature -1e308": S(agent=llm(temperature=-1e308)),
        "llm max_tokens -1": S(agent=llm(max_tokens=-1)),
        "llm context_tokens 2^31-1": S(agent=llm(context_tokens=2**31 - 1)),
        "llm request_timeout NaN": S(agent=llm(request_timeout_s=nan)),
        "llm request_timeout -1": S(agent=llm(request_timeout_s=-1)),
        "llm request_timeout 1e308": S(agent=llm(request_timeout_s=1e308)),
        "llm client key not allowed": S(agent=llm(api_key="sk-client")),
        "llm client key allowed, header inj": S(agent=llm(provider_name="open", api_key="k\r\nX-Evil: 1")),
        "llm client key 1MiB": S(agent=llm(provider_name="open", api_key="k" * (1 << 20))),
        "strategy best_of_n n=2^31-1": S(agent=llm(), agent__strategy=lambda s: (setattr(s, "kind", o.STRATEGY_BEST_OF_N), setattr(s, "n", 2**31 - 1))),
        "strategy tree pop -1": S(agent=llm(), agent__strategy=lambda s: (setattr(s, "kind", o.STRATEGY_TREE), setattr(s, "population", -1))),
        "strategy kind 99": S(agent=llm(), agent__strategy=lambda s: setattr(s, "kind", 99)),
        "search bogus algo": S(agent__kind=o.AGENT_KIND_SEARCH, agent__search_algorithm="../../x"),
        "client_request_id 257": o.SubmitJobRequest(spec=spec(), client_request_id="r" * 257),
    }
    for label, req in cases.items():
        call("SubmitJob " + label, st.SubmitJob, req, md, timeout=30)


def orch_semantics(y):
    log("== orchestrator: ids, idempotency, watch, trajectory")
    st = og.OrchestratorStub(y.channel)
    md = y.md()
    for label, jid in {"empty": "", "traversal": "../../etc/passwd", "sql": "job_' OR '1'='1",
                       "1MiB": "j" * (1 << 20), "nul": "job_\x00x", "like %": "job_%", "unicode": "job_\u202e"}.items():
        call("GetJob " + label, st.GetJob, o.GetJobRequest(job_id=jid), md, timeout=15)
        call("CancelJob " + label, st.CancelJob, o.CancelJobRequest(job_id=jid), md, timeout=15)
        call("GetTrajectory " + label, st.GetTrajectory, o.GetTrajectoryRequest(job_id=jid), md, timeout=15)
        stream("WatchJob " + label, st.WatchJob, o.WatchJobRequest(job_id=jid), md, timeout=15)
    for label, req in {"page -1": o.ListJobsRequest(page_size=-1), "page 2^31-1": o.ListJobsRequest(page_size=2**31 - 1),
                       "token garbage": o.ListJobsRequest(page_token="!!!"), "token 1MiB": o.ListJobsRequest(page_token="A" * (1 << 20)),
                       "token sql": o.ListJobsRequest(page_token="' OR 1=1 --"), "state 99": o.ListJobsRequest(state=99),
                       "filter 257": o.ListJobsRequest(label="x" * 257), "filter %": o.ListJobsRequest(label="%"),
                       "filter _": o.ListJobsRequest(problem="_%")}.items():
        call("ListJobs " + label, st.ListJobs, req, md, timeout=15)
    # a real job to play with
    code, msg, job, _ = call("SubmitJob good", st.SubmitJob, o.SubmitJobRequest(spec=spec(), client_request_id="fz-rid-1"), md, expect_ok=True)
    if job is None:
        return
    jid = job.id
    # idempotency with another spec: same job back?
    code, msg, job2, _ = call("SubmitJob same rid, other spec", st.SubmitJob,
                              o.SubmitJobRequest(spec=spec(label="different", world_size=3), client_request_id="fz-rid-1"), md)
    if job2 is not None and job2.id == jid:
        finding("data-loss", "SubmitJob with an existing client_request_id and a different spec returns OK with the old job (the new spec is dropped silently)")
    # concurrent submits with one rid
    with cf.ThreadPoolExecutor(max_workers=16) as pool:
        res = list(pool.map(lambda i: call(f"concurrent rid #{i}", st.SubmitJob,
                                           o.SubmitJobRequest(spec=spec(), client_request_id="fz-rid-conc"), md), range(16)))
    ids = {r[2].id for r in res if r[2] is not None}
    if len(ids) > 1:
        finding("dup", f"16 concurrent SubmitJob with one client_request_id made {len(ids)} jobs")
    # watch: after_seq cases
    for label, a in {"-1": -1, "2^63-1": 2**63 - 1, "0": 0}.items():
        stream(f"WatchJob after_seq {label}", st.WatchJob, o.WatchJobRequest(job_id=jid, after_seq=a), md, timeout=120)
    stream("WatchJob no_follow", st.WatchJob, o.WatchJobRequest(job_id=jid, no_follow=True), md, timeout=20)
    call("GetTrajectory all", st.GetTrajectory, o.GetTrajectoryRequest(job_id=jid, include_sources=True, include_llm_text=True, include_results=True), md)
    call("CancelJob reason 513", st.CancelJob, o.CancelJobRequest(job_id=jid, reason="r" * 513), md)
    call("CancelJob finished", st.CancelJob, o.CancelJobRequest(job_id=jid, reason="again"), md)
    # many watchers, cancelled mid-stream
    n = ARGS.concurrency
    before = y.stats()
    code, msg, j3, _ = call("SubmitJob for watchers", st.SubmitJob, o.SubmitJobRequest(spec=spec(budget__max_evaluations=3)), md)
    if j3 is not None:
        def w(i):
            it = st.WatchJob(o.WatchJobRequest(job_id=j3.id), metadata=md, timeout=2)
            try:
                for _ in it:
                    pass
                return it.code().name
            except grpc.RpcError as err:
                return err.code().name
        with cf.ThreadPoolExecutor(max_workers=64) as pool:
            res = list(pool.map(w, range(n)))
        log(f"  {n} watchers: {dict((k, res.count(k)) for k in set(res))}; before {before} after {y.stats()}")
        time.sleep(3)
        log(f"  settled: {y.stats()}")


def orch_plateau(y):
    log("== orchestrator: AnalyzePlateau / ListProblems")
    st = og.OrchestratorStub(y.channel)
    md = y.md()
    A = o.AnalyzePlateauRequest
    nan = float("nan")
    for label, req in {
        "empty": A(),
        "epsilon NaN": A(epsilon=nan),
        "window -1": A(window_s=-1),
        "grid 1": A(grid_points=1),
        "grid 2000 curves svg": A(grid_points=2000, include_curves=True, include_svg=True),
        "fast_p NaN": A(fast_p=[nan]),
        "fast_p inf": A(fast_p=[float("inf")]),
        "budgets neg": A(budgets_s=[-1.0]),
        "budgets NaN": A(budgets_s=[nan]),
        "budgets 1e308": A(budgets_s=[1e308]),
        "fractions 2": A(fractions=[2.0]),
        "fractions NaN": A(fractions=[nan]),
        "group_by bogus": A(group_by=["password"]),
        "group_by 64 dup": A(group_by=["model"] * 64),
        "axis 9": A(axis=9),
        "10000 bogus ids": A(jobs=o.JobSelector(job_ids=["job_x"] * 10000)),
        "traversal id": A(jobs=o.JobSelector(job_ids=["../../etc/passwd"])),
        "label %": A(jobs=o.JobSelector(label="%")),
    }.items():
        call("AnalyzePlateau " + label, st.AnalyzePlateau, req, md, timeout=60)
    LP = c.ListProblemsRequest
    for label, req in {"default": LP(), "world 2^31-1 ref": LP(world_size=2**31 - 1, include_reference_source=True),
                       "dims huge": LP(world_size=8, size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"N": 2**62}))),
                       "dims name 1MiB": LP(world_size=8, size=c.SizeSpec(dims=c.SizeSpec.Dims(values={"n" * (1 << 20): 1})))}.items():
        call("ListProblems " + label, st.ListProblems, req, md, timeout=30)
    call("ListExecutors", st.ListExecutors, o.ListExecutorsRequest(), md)


def only_sources(srcs):
    def f(a):
        del a.replay_sources[:]
        for n, src in srcs:
            a.replay_sources.add(name=n, source=src)
    return f


def watch_to_end(st, md, jid, timeout=300):
    for _ in st.WatchJob(o.WatchJobRequest(job_id=jid), metadata=md, timeout=timeout):
        pass
    return st.GetJob(o.GetJobRequest(job_id=jid), metadata=md)


def orch_jobs(y):
    """Jobs whose outcome must match what happened (needs a live executor)."""
    log("== orchestrator: job outcomes")
    st = og.OrchestratorStub(y.channel)
    md = y.md()
    # 1. A replay source that is empty is accepted, then the job fails in storage.
    code, msg, job, _ = call("replay with an empty source", st.SubmitJob, o.SubmitJobRequest(
        spec=spec(agent=only_sources([("empty", ""), ("good", HOST_SRC)]), budget__max_evaluations=2)), md)
    if job is not None:
        j = watch_to_end(st, md, job.id)
        if j.state == o.JOB_STATE_FAILED:
            finding("validation", f"replay source '' accepted by SubmitJob, job then {o.JobState.Name(j.state)}: {j.stop_reason[:160]}")
    # 2. Cancelling a job during its last evaluation.
    hang = HOST_SRC.replace("/*PRE*/", "for(;;) usleep(100000);")
    code, msg, job, _ = call("replay hanging candidate", st.SubmitJob, o.SubmitJobRequest(
        spec=spec(agent=only_sources([("hang", hang + f"// {time.time()}\n")]), eval__timeout_s=60)), md)
    if job is not None:
        for _ in range(60):
            time.sleep(0.5)
            j = st.GetJob(o.GetJobRequest(job_id=job.id), metadata=md)
            if j.state == o.JOB_STATE_RUNNING and j.turns > 0:
                break
        time.sleep(3)
        code, msg, j, _ = call("CancelJob mid-evaluation", st.CancelJob, o.CancelJobRequest(job_id=job.id, reason="fuzz"), md)
        j = watch_to_end(st, md, job.id)
        if j.state != o.JOB_STATE_CANCELLED:
            finding("data-loss", f"job cancelled during its last evaluation ends {o.JobState.Name(j.state)} ({j.stop_reason!r}), not CANCELLED")
    # 3. The executor busy (max_in_flight): evaluations dropped, job 'succeeds'.
    if ARGS.executor and ARGS.hog_executor:
        x = Target("executor", ARGS.executor, open(ARGS.exec_token_file).read().strip(), None)
        xs = eg.ExecutorStub(x.channel)
        its = [xs.Evaluate(ev_req(source=hang + f"// hog {i} {time.time()}\n", timeout_s=20, client_tag=f"hog{i}"),
                           metadata=x.md(), timeout=60) for i in range(ARGS.hog_executor)]
        for it in its:
            next(it)
        code, msg, job, _ = call("job while the executor is full", st.SubmitJob,
                                 o.SubmitJobRequest(spec=spec(budget__max_evaluations=1)), md)
        if job is not None:
            j = watch_to_end(st, md, job.id)
            log(f"  victim: {o.JobState.Name(j.state)} evaluations={j.evaluations} {j.stop_reason!r}")
            if j.evaluations == 0:
                finding("data-loss", f"executor busy (RESOURCE_EXHAUSTED): the job's candidate was dropped; job {o.JobState.Name(j.state)} with 0 evaluations ({j.stop_reason!r})")
        for it in its:
            it.cancel()


def orch_crash(y):
    """DESTRUCTIVE: one SubmitJob that takes the orchestrator down (bad_alloc)."""
    log("== orchestrator: unbounded strategy.n (crashes an unfixed orchestrator)")
    st = og.OrchestratorStub(y.channel)

    def strat(s):
        s.kind = o.STRATEGY_BEST_OF_N
        s.n = 2**31 - 1
    call("best_of_n n=2^31-1, no max_evaluations", st.SubmitJob, o.SubmitJobRequest(
        spec=spec(agent=llm(), agent__strategy=strat, budget__max_evaluations=0, budget__max_turns=1,
                  budget__wall_seconds=60)), y.md())
    for _ in range(10):
        time.sleep(1)
        if not y.alive():
            break
        if (rss_kb(y.pid) or 0) > 2 << 20:
            finding("memory", "orchestrator above 2 GiB RSS after one SubmitJob (killed by the fuzzer)")
            os.kill(y.pid, 9)
            return

GROUPS = {
    "exec_auth": ("x", exec_auth), "exec_fields": ("x", exec_fields), "exec_listproblems": ("x", exec_listproblems),
    "exec_sources": ("x", exec_sources), "exec_streams": ("x", exec_streams),
    "orch_auth": ("y", orch_auth), "orch_submit": ("y", orch_submit), "orch_semantics": ("y", orch_semantics),
    "orch_plateau": ("y", orch_plateau), "orch_jobs": ("y", orch_jobs),
    "orch_crash": ("y", orch_crash),  # destructive: never part of "all"
}


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--executor")
    ap.add_argument("--exec-token-file")
    ap.add_argument("--exec-pid", type=int)
    ap.add_argument("--orchestrator")
    ap.add_argument("--orch-token-file")
    ap.add_argument("--orch-pid", type=int)
    ap.add_argument("--canary", action="append", default=[], help="string that must never come back")
    ap.add_argument("--outside-file", help="a file outside every data dir (its content is a canary)")
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--heavy", action="store_true", help="also the sources that take GiBs and tens of seconds")
    ap.add_argument("--hog-executor", type=int, default=0,
                    help="orch_jobs: hold this many Evaluate streams on the executor first (its max_in_flight)")
    ap.add_argument("--groups", default="all", help="comma list of " + ",".join(GROUPS))
    ARGS = ap.parse_args()
    read = lambda p: open(p).read().strip() if p else ""  # noqa: E731
    x = Target("executor", ARGS.executor, read(ARGS.exec_token_file), ARGS.exec_pid) if ARGS.executor else None
    y = Target("orchestrator", ARGS.orchestrator, read(ARGS.orch_token_file), ARGS.orch_pid) if ARGS.orchestrator else None
    CANARIES.extend(ARGS.canary)
    for t in (x, y):
        if t is not None and t.token:
            CANARIES.append(t.token)
    if ARGS.outside_file:
        CANARIES.append(open(ARGS.outside_file).read().strip())
    groups = [g for g in GROUPS if g != "orch_crash"] if ARGS.groups == "all" else ARGS.groups.split(",")
    for g in groups:
        which, fn = GROUPS[g]
        t = x if which == "x" else y
        if t is None:
            continue
        log(f"[{g}] start {t.stats()}")
        fn(t)
        check_alive([x, y], g)
    log(f"\n{len(FINDINGS)} finding(s)")
    for k, w in FINDINGS:
        log(f"  [{k}] {w}")
    return 1 if FINDINGS else 0


if __name__ == "__main__":
    sys.exit(main())
