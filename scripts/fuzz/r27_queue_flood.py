#!/usr/bin/env python3
"""Red team round 27: the orchestrator's job queue has no bound, per client or in all.

Starts a pkforge-executor and a pkforge-orchestrator (--max-concurrent-jobs 1) in a temp dir,
keeps the one job slot busy with a long replay job, then submits N replay jobs of ~3.9 MiB of
sources each (just under the 4 MiB message limit) and prints the orchestrator's RSS and the
database size every 10 jobs. Everything is cancelled and stopped at the end.
  /tmp/fz/bin/python scripts/fuzz/r27_queue_flood.py [--jobs 60]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.argv, _argv = sys.argv[:1], sys.argv
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_lib as F  # noqa: E402
from r27_cache_poison import free_port, start_executor  # noqa: E402
sys.argv = _argv
o, c = F.o, F.c


def rss_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) >> 10
    return -1


def spec(sources, max_eval):
    s = o.JobSpec(problem="allreduce", backend=c.BACKEND_HOST, world_size=2, dtype=c.DTYPE_F32,
                  size=c.SizeSpec(preset="tiny"), label="r27 flood")
    s.agent.kind = o.AGENT_KIND_REPLAY
    for name, src in sources:
        s.agent.replay_sources.add(name=name, source=src)
    s.budget.max_evaluations = max_eval
    s.eval.trials = 1
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=60)
    ap.add_argument("--bin", default=os.path.join(F.REPO, "build-ci/bin"))
    a = ap.parse_args()
    top = tempfile.mkdtemp(prefix="r27-flood-")
    os.chmod(top, 0o711)
    etok, otok = os.path.join(top, "exec.tok"), os.path.join(top, "orch.tok")
    for p, t in ((etok, "r27-exec-token-1234567"), (otok, "r27-orch-token-1234567")):
        with open(p, "w") as f:
            f.write(t)
        os.chmod(p, 0o600)
    procs = []
    try:
        ep = free_port()
        ex, _, _ = start_executor(a.bin, os.path.join(top, "exec"), ep, etok, os.path.join(top, "executor.log"))
        procs.append(ex)
        op = free_port()
        orch = subprocess.Popen([os.path.join(a.bin, "pkforge-orchestrator"), "--listen", f"127.0.0.1:{op}",
                                 "--db", os.path.join(top, "traj.db"), "--executor", f"127.0.0.1:{ep}",
                                 "--executor-token-file", etok, "--token-file", otok,
                                 "--max-concurrent-jobs", "1"],
                                stdout=open(os.path.join(top, "orchestrator.log"), "w"), stderr=subprocess.STDOUT)
        procs.append(orch)
        st = F.og.OrchestratorStub(F.grpc.insecure_channel(f"127.0.0.1:{op}",
                                   options=[("grpc.max_send_message_length", 8 << 20)]))
        md = [("authorization", "Bearer " + open(otok).read())]
        for _ in range(100):
            try:
                st.ListJobs(o.ListJobsRequest(), metadata=md, timeout=2)
                break
            except F.grpc.RpcError:
                time.sleep(0.2)
        time.sleep(1.5)  # the executor's first health check
        blocker = st.SubmitJob(o.SubmitJobRequest(spec=spec(
            [(f"b{i}.cc", F.HOST_SRC + f"\n// {i}\n") for i in range(500)], 500)), metadata=md, timeout=30)
        print("blocker", blocker.id, "rss", rss_mb(orch.pid), "MiB", flush=True)
        pad = "/" * ((1 << 20) - len(F.HOST_SRC) - 4000)
        ids = [blocker.id]
        t0 = time.time()
        for j in range(a.jobs):
            srcs = [(f"j{j}s{k}.cc", F.HOST_SRC + f"\n// {j} {k}\n//" + pad + "\n") for k in range(4)]
            try:
                job = st.SubmitJob(o.SubmitJobRequest(spec=spec(srcs, 4)), metadata=md, timeout=30)
                ids.append(job.id)
            except F.grpc.RpcError as err:
                print(f"job {j}: {err.code().name} {err.details()[:200]}", flush=True)
                break
            if j + 1 in (1, 2):
                cli = subprocess.run([os.path.join(a.bin, "pkforge"), "jobs", "--orchestrator", f"127.0.0.1:{op}",
                                      "--token-file", otok], capture_output=True, text=True, timeout=60)
                print(f"after {j + 1} big job(s): `pkforge jobs` rc {cli.returncode}: "
                      f"{(cli.stdout + cli.stderr).strip().splitlines()[-1][:200]!r}", flush=True)
            if (j + 1) % 10 == 0:
                db = sum(os.path.getsize(os.path.join(top, f)) for f in os.listdir(top) if f.startswith("traj.db"))
                print(f"{j + 1} jobs queued in {time.time() - t0:.1f} s: orchestrator rss {rss_mb(orch.pid)} MiB, "
                      f"database {db >> 20} MiB", flush=True)
        states = {}
        for jid in ids[:1] + ids[-1:]:
            states[jid] = o.JobState.Name(st.GetJob(o.GetJobRequest(job_id=jid), metadata=md, timeout=10).state)
        print("states (first, last):", states, flush=True)
        for jid in reversed(ids):
            try:
                st.CancelJob(o.CancelJobRequest(job_id=jid, reason="r27 done"), metadata=md, timeout=10)
            except F.grpc.RpcError:
                pass
        print("cancelled; rss", rss_mb(orch.pid), "MiB; alive", orch.poll() is None, flush=True)
        # The stored jobs stay: every later read that lists jobs loads their whole specs.
        import threading
        peak = [0]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_mb(orch.pid))
                time.sleep(0.01)
        threading.Thread(target=sample, daemon=True).start()
        for label, fn, req in [
                ("AnalyzePlateau(all jobs)", st.AnalyzePlateau, o.AnalyzePlateauRequest()),
                ("AnalyzePlateau(label)", st.AnalyzePlateau, o.AnalyzePlateauRequest(jobs=o.JobSelector(label="r27 flood"))),
                ("ListJobs(page 1000)", st.ListJobs, o.ListJobsRequest(page_size=1000))]:
            before = rss_mb(orch.pid)
            peak[0] = before
            t1 = time.time()
            try:
                r = fn(req, metadata=md, timeout=120)
                what = f"OK {r.ByteSize() >> 10} KiB reply"
            except F.grpc.RpcError as err:
                what = f"{err.code().name} {err.details()[:120]!r}"
            time.sleep(0.05)
            print(f"{label}: {what} in {time.time() - t1:.2f} s; orchestrator rss {before} -> peak "
                  f"{peak[0]} MiB", flush=True)
        stop.set()
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
