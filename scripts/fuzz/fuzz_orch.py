"""The orchestrator groups of the API fuzz battery (api_fuzz.py): auth,
job submission fields, job semantics, plateau queries, job streams, crash.
"""
import os
import threading
import time

from fuzz_lib import *  # noqa: F401,F403
from fuzz_lib import ARGS, FINDINGS  # noqa: F401


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
