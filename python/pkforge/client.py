"""A small client for the pkforge Orchestrator API (proto/pkforge/v1).

Connection settings mirror the `pkforge` CLI (cli/remote.h): target
HOST:PORT, else $PKFORGE_ORCHESTRATOR, else 127.0.0.1:50061; a bearer token
(token=..., token_file=..., or $PKFORGE_TOKEN_FILE) sent as
"authorization: Bearer <token>"; TLS when a CA is given (ca_file=...,
root_certificates=..., or $PKFORGE_TLS_CA) or tls=True (system roots).

Every method returns the v1 protobuf messages (pkforge.v1.orchestrator_pb2);
the *_df helpers return pandas DataFrames. A Client is safe to share between
threads (gRPC channels are); close() it or use it as a context manager.
"""
from __future__ import annotations

import os
import time
from typing import Iterable, Iterator, Optional, Sequence, Union

import grpc
import pandas as pd
from google.protobuf import json_format

from pkforge.v1 import common_pb2 as common
from pkforge.v1 import orchestrator_pb2 as pb
from pkforge.v1 import orchestrator_pb2_grpc as pb_grpc

DEFAULT_TARGET = "127.0.0.1:50061"
TERMINAL_STATES = {
    pb.JOB_STATE_SUCCEEDED,
    pb.JOB_STATE_FAILED,
    pb.JOB_STATE_CANCELLED,
    pb.JOB_STATE_INTERRUPTED,
}
# A watch stream broken by one of these is resumed from the last seq seen.
_RESUMABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}


def _read_text(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{what} {path}: {e.strerror}") from e


def job_spec(problem: str = "allreduce", *, backend: str = "host", world_size: int = 1,
             size: str = "tiny", agent: str = "search", budget_s: float = 60,
             max_evaluations: int = 0, label: str = "", provider: str = "", model: str = "",
             seed: int = 0) -> pb.JobSpec:
    """A JobSpec with the CLI's `pkforge submit` vocabulary (backend host|cuda,
    size preset, agent search|llm|replay). Set further fields on the result."""
    spec = pb.JobSpec(problem=problem, world_size=world_size, label=label, seed=seed)
    backends = {"host": common.BACKEND_HOST, "cuda": common.BACKEND_CUDA}
    agents = {"search": pb.AGENT_KIND_SEARCH, "llm": pb.AGENT_KIND_LLM,
              "replay": pb.AGENT_KIND_REPLAY}
    if backend not in backends:
        raise ValueError(f"backend: expected host or cuda, got {backend!r}")
    if agent not in agents:
        raise ValueError(f"agent: expected search, llm or replay, got {agent!r}")
    spec.backend = backends[backend]
    spec.size.preset = size
    spec.agent.kind = agents[agent]
    if agent == "llm":
        spec.agent.llm.provider_name = provider
        spec.agent.llm.model = model
    spec.budget.wall_seconds = budget_s
    spec.budget.max_evaluations = max_evaluations
    return spec


class Client:
    def __init__(self, target: Optional[str] = None, *, token: Optional[str] = None,
                 token_file: Optional[str] = None, tls: bool = False,
                 ca_file: Optional[str] = None, root_certificates: Optional[bytes] = None,
                 timeout_s: float = 30.0, options: Sequence = ()):
        self.target = target or os.environ.get("PKFORGE_ORCHESTRATOR") or DEFAULT_TARGET
        self.timeout_s = timeout_s
        token_file = token_file or (None if token else os.environ.get("PKFORGE_TOKEN_FILE"))
        if token is None and token_file:
            token = _read_text(token_file, "token_file").decode().rstrip()
            if not token:
                raise ValueError(f"token_file {token_file}: is empty")
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        ca_file = ca_file or (None if root_certificates else os.environ.get("PKFORGE_TLS_CA"))
        if ca_file:
            root_certificates = _read_text(ca_file, "ca_file")
            if b"-----BEGIN CERTIFICATE-----" not in root_certificates:
                raise ValueError(f"ca_file {ca_file}: not a PEM certificate")
        if tls or root_certificates:
            creds = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.secure_channel(self.target, creds, options=list(options))
        else:
            self._channel = grpc.insecure_channel(self.target, options=list(options))
        self.stub = pb_grpc.OrchestratorStub(self._channel)

    # -- plumbing ---------------------------------------------------------
    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method, request, timeout_s: Optional[float] = None):
        return method(request, timeout=timeout_s or self.timeout_s, metadata=self._metadata)

    # -- jobs ---------------------------------------------------------------
    def submit(self, spec: Union[pb.JobSpec, dict], client_request_id: str = "") -> pb.Job:
        """Submits a job (spec: a JobSpec, or a dict in proto3 JSON form).
        Resubmitting with the same client_request_id returns the first job."""
        if isinstance(spec, dict):
            spec = json_format.ParseDict(spec, pb.JobSpec())
        return self._call(self.stub.SubmitJob,
                          pb.SubmitJobRequest(spec=spec, client_request_id=client_request_id))

    def get_job(self, job_id: str) -> pb.Job:
        return self._call(self.stub.GetJob, pb.GetJobRequest(job_id=job_id))

    def jobs(self, problem: str = "", model: str = "", label: str = "",
             state: int = pb.JOB_STATE_UNSPECIFIED) -> list:
        """Every job matching the filters (all pages), oldest first."""
        out, token = [], ""
        while True:
            resp = self._call(self.stub.ListJobs, pb.ListJobsRequest(
                problem=problem, model=model, label=label, state=state, page_size=1000,
                page_token=token))
            out.extend(resp.jobs)
            token = resp.next_page_token
            if not token:
                return out

    def jobs_df(self, **filters) -> pd.DataFrame:
        rows = []
        for j in self.jobs(**filters):
            rows.append({
                "id": j.id, "state": pb.JobState.Name(j.state), "problem": j.spec.problem,
                "backend": common.Backend.Name(j.spec.backend), "world_size": j.spec.world_size,
                "agent_kind": pb.AgentKind.Name(j.spec.agent.kind), "model": j.spec.agent.llm.model,
                "label": j.spec.label, "created_wall_us": j.created_wall_us,
                "elapsed_ms": j.elapsed_ms, "evaluations": j.evaluations, "tokens": j.tokens,
                "cost_usd": j.cost_usd,
                "best_speedup": j.best_speedup if j.HasField("best_speedup") else None,
                "best_candidate_sha256": j.best_candidate_sha256, "error": j.error,
                "stop_reason": j.stop_reason,
                # The job's result: one fresh re-measurement of its chosen
                # candidate (best_speedup is the best of many measurements).
                "final_speedup": j.final_speedup if j.HasField("final_speedup") else None,
                "final_evaluation_id": j.final_evaluation_id,
                "other_settings_evaluations": j.other_settings_evaluations,
            })
        return pd.DataFrame(rows)

    def cancel(self, job_id: str, reason: str = "") -> pb.Job:
        return self._call(self.stub.CancelJob, pb.CancelJobRequest(job_id=job_id, reason=reason))

    # -- events -------------------------------------------------------------
    def watch(self, job_id: str, after_seq: int = 0, follow: bool = True,
              heartbeats: bool = False, max_retries: int = 10,
              retry_delay_s: float = 0.5) -> Iterator:
        """Yields the job's events with seq > after_seq in order, then (follow)
        live ones until the job ends. A stream that breaks (orchestrator
        restart, network) is reopened with after_seq = the last seq seen, so
        nothing is lost or repeated; to resume later yourself, pass the last
        event's seq as after_seq. heartbeats=True also yields the
        WatchJobResponse.Heartbeat items."""
        last, retries = after_seq, 0
        while True:
            request = pb.WatchJobRequest(job_id=job_id, after_seq=last, no_follow=not follow)
            try:
                for item in self.stub.WatchJob(request, metadata=self._metadata):
                    retries = 0
                    if item.HasField("event"):
                        ev = item.event
                        if ev.seq <= last:
                            continue  # defensive: never repeat an event
                        last = ev.seq
                        yield ev
                        if (ev.HasField("state_changed")
                                and ev.state_changed.state in TERMINAL_STATES):
                            return
                    elif heartbeats:
                        yield item.heartbeat
                return  # the server ended the stream: the job ended or no_follow
            except grpc.RpcError as e:
                if e.code() not in _RESUMABLE or retries >= max_retries:
                    raise
                retries += 1
                time.sleep(retry_delay_s)

    def wait(self, job_id: str, after_seq: int = 0) -> pb.Job:
        """Follows the job until it ends and returns its final state."""
        for _ in self.watch(job_id, after_seq=after_seq):
            pass
        return self.get_job(job_id)

    # -- analysis -----------------------------------------------------------
    def trajectory(self, job_id: str, include_sources: bool = False,
                   include_llm_text: bool = False, include_results: bool = False):
        return self._call(self.stub.GetTrajectory, pb.GetTrajectoryRequest(
            job_id=job_id, include_sources=include_sources, include_llm_text=include_llm_text,
            include_results=include_results))

    def trajectory_df(self, job_id: str) -> pd.DataFrame:
        """The job's evaluations in elapsed order, with best-so-far.

        best_so_far is over the evaluations at the job's own settings
        (other_settings False: not a search rung timed with other iteration
        counts) of its search (final_measurement False: not the job's final
        re-measurement), as the orchestrator's curves."""
        rows, best = [], None
        for e in self.trajectory(job_id).evaluations:
            ok = e.status == common.EvaluationResult.OK and e.HasField("speedup")
            if ok and not e.other_settings and not e.final_measurement and (
                    best is None or e.speedup > best):
                best = e.speedup
            rows.append({
                "evaluation_id": e.id, "elapsed_s": e.elapsed_ms / 1000.0, "active_s": e.active_s,
                "status": common.EvaluationResult.Status.Name(e.status),
                "correct": e.status == common.EvaluationResult.OK,
                "speedup": e.speedup if e.HasField("speedup") else None, "best_so_far": best,
                "queue_ms": e.stages.queue_ms, "compile_ms": e.stages.compile_ms,
                "run_ms": e.stages.run_ms, "executor": e.executor,
                "candidate_sha256": e.candidate_sha256, "timed_iters": e.timed_iters,
                "trials": e.trials, "other_settings": e.other_settings,
                "final_measurement": e.final_measurement,
            })
        return pd.DataFrame(rows)

    def plateau(self, job_ids: Iterable[str] = (), *, problem: str = "", model: str = "",
                strategy: str = "", agent_kind: str = "", label: str = "", epsilon: float = 0,
                window_s: float = 0, axis: str = "elapsed", group_by: Sequence[str] = (),
                fast_p: Sequence[float] = (), budgets_s: Sequence[float] = (),
                include_curves: bool = True, include_svg: bool = False,
                timeout_s: float = 120):
        """AnalyzePlateau over explicit jobs or filters; see plateau_curves()."""
        if axis not in ("elapsed", "active"):
            raise ValueError(f"axis: expected 'elapsed' or 'active', got {axis!r}")
        req = pb.AnalyzePlateauRequest(
            jobs=pb.JobSelector(job_ids=list(job_ids), problem=problem, model=model,
                                strategy=strategy, agent_kind=agent_kind, label=label),
            epsilon=epsilon, window_s=window_s,
            axis=pb.TIME_AXIS_ACTIVE if axis == "active" else pb.TIME_AXIS_ELAPSED,
            group_by=list(group_by), fast_p=list(fast_p), budgets_s=list(budgets_s),
            include_curves=include_curves, include_svg=include_svg)
        return self._call(self.stub.AnalyzePlateau, req, timeout_s)

    def plateau_df(self, *args, **kwargs) -> pd.DataFrame:
        from pkforge.plateau import plateau_curves

        return plateau_curves(self.plateau(*args, include_curves=True, **kwargs))

    def problems(self):
        return self._call(self.stub.ListProblems, common.ListProblemsRequest()).problems

    def executors(self):
        return self._call(self.stub.ListExecutors, pb.ListExecutorsRequest()).executors
