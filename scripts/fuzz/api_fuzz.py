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
import sys

from fuzz_lib import *  # noqa: F401,F403
from fuzz_lib import ARGS, CANARIES, FINDINGS
from fuzz_orch import orch_auth, orch_crash, orch_jobs, orch_plateau, orch_semantics, orch_submit


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


GROUPS = {
    "exec_auth": ("x", exec_auth), "exec_fields": ("x", exec_fields), "exec_listproblems": ("x", exec_listproblems),
    "exec_sources": ("x", exec_sources), "exec_streams": ("x", exec_streams),
    "orch_auth": ("y", orch_auth), "orch_submit": ("y", orch_submit), "orch_semantics": ("y", orch_semantics),
    "orch_plateau": ("y", orch_plateau), "orch_jobs": ("y", orch_jobs),
    "orch_crash": ("y", orch_crash),  # destructive: never part of "all"
}


def main():
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
    vars(ARGS).update(vars(ap.parse_args()))
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
