#!/usr/bin/env python3
"""Red team round 27: start a pkforge-executor in a temp dir (loopback, token, host only) and
send each given source file as an Evaluate (allreduce, host, world 2, tiny, correctness only);
print the status, message and compiler output. Extra flags after --flags.
  /tmp/fz/bin/python scripts/fuzz/r27_send.py executor/testdata/r27_compile_probe.src [--flags -O2 ...]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.argv, _argv = sys.argv[:1], sys.argv
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_lib as F  # noqa: E402
from r27_cache_poison import free_port, start_executor  # noqa: E402
sys.argv = _argv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--flags", nargs="*", default=[])
    ap.add_argument("--bin", default=os.path.join(F.REPO, "build-ci/bin"))
    ap.add_argument("--full", action="store_true", help="print the whole compiler output")
    a = ap.parse_args()
    top = tempfile.mkdtemp(prefix="r27-send-")
    os.chmod(top, 0o711)
    tok = os.path.join(top, "exec.tok")
    with open(tok, "w") as f:
        f.write("r27-exec-token-CANARY-%d" % os.getpid())
    os.chmod(tok, 0o600)
    log = os.path.join(top, "executor.log")
    proc = None
    try:
        proc, stub, md = start_executor(a.bin, os.path.join(top, "exec"), free_port(), tok, log)
        for path in a.sources:
            src = open(path).read()
            req = F.ev_req(source=src, extra_flags=a.flags)
            res = None
            try:
                for m in stub.Evaluate(req, metadata=md, timeout=300):
                    if m.HasField("result"):
                        res = m.result
            except F.grpc.RpcError as err:
                print(f"{path}: rpc {err.code().name}: {err.details()}")
                continue
            name = res.DESCRIPTOR.fields_by_name['status'].enum_type.values_by_number[res.status].name
            out = res.compile.output
            print(f"== {path}: {name}: {res.message[:300]!r}")
            print(out if a.full else out[:3000])
            if open(tok).read() in str(res):
                print("!! the executor token is in the result")
        print("executor alive:", proc.poll() is None)
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(30)
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
