"""The client against a real orchestrator + executor (conftest.py)."""
import grpc
import pytest

import pkforge
from pkforge.v1 import common_pb2, orchestrator_pb2 as pb


def test_search_job_runs_to_the_end_and_reads_back(client, finished_job):
    job, events = finished_job
    assert job.state == pb.JOB_STATE_SUCCEEDED, job
    assert job.evaluations >= 1
    assert job.spec.problem == "allreduce" and job.spec.world_size == 2
    # The watch saw every event once, in order, ending with the terminal state.
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].HasField("state_changed")
    assert events[-1].state_changed.state == pb.JOB_STATE_SUCCEEDED
    finished = [e for e in events if e.HasField("evaluation_finished")]
    # The search's evaluations and the job's final fresh re-measurement.
    assert len(finished) == job.evaluations + 1
    assert [e.evaluation_finished.final_measurement for e in finished].count(True) == 1
    assert job.HasField("final_speedup") and job.final_evaluation_id

    assert job.id in [j.id for j in client.jobs(label="pytest")]
    df = client.jobs_df(label="pytest")
    assert list(df["id"]) == [job.id]
    assert df.loc[0, "state"] == "JOB_STATE_SUCCEEDED"

    traj = client.trajectory(job.id, include_sources=True)
    assert len(traj.evaluations) == job.evaluations + 1
    assert traj.evaluations[-1].final_measurement
    assert any("pkf_" in c.source for c in traj.candidates)
    tdf = client.trajectory_df(job.id)
    assert len(tdf) == job.evaluations + 1
    assert int(tdf["other_settings"].sum()) == job.other_settings_evaluations
    assert client.jobs_df(label="pytest").loc[0, "final_speedup"] == pytest.approx(
        job.final_speedup)
    assert set(tdf["status"]) <= set(common_pb2.EvaluationResult.Status.keys())
    if job.HasField("best_speedup"):
        assert tdf["best_so_far"].max() == pytest.approx(job.best_speedup)

    report = client.plateau([job.id], budgets_s=[1, 1000])
    assert [j.job_id for j in report.jobs] == [job.id]
    curves = pkforge.plateau_curves(report)
    assert set(curves["job_id"]) <= {job.id}
    if job.HasField("best_speedup"):
        assert curves["best_speedup"].max() == pytest.approx(job.best_speedup)

    # Cancelling a finished job returns it unchanged.
    assert client.cancel(job.id, "too late").state == pb.JOB_STATE_SUCCEEDED


def test_watch_resumes_from_after_seq(client, finished_job):
    job, events = finished_job
    k = len(events) // 2
    tail = list(client.watch(job.id, after_seq=k))
    assert [e.seq for e in tail] == [e.seq for e in events[k:]]
    assert tail == events[k:]
    replay = list(client.watch(job.id, follow=False))
    assert replay == events


class _Broken(grpc.RpcError):
    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return "connection reset (test)"


def test_watch_reopens_a_broken_stream_without_loss_or_repeat(client, finished_job):
    job, events = finished_job
    real = client.stub.WatchJob
    calls = []

    def flaky(request, metadata=None):
        calls.append(request.after_seq)
        stream = real(request, metadata=metadata)
        if len(calls) == 1:  # the first stream breaks after two events
            def broken():
                for i, item in enumerate(stream):
                    if i == 2:
                        raise _Broken()
                    yield item
            return broken()
        return stream

    client.stub.WatchJob = flaky
    try:
        seen = list(client.watch(job.id, retry_delay_s=0))
    finally:
        client.stub.WatchJob = real
    assert seen == events
    assert calls == [0, 2]


def test_token_is_required_and_sent(daemons):
    with pkforge.Client(daemons["target"]) as anonymous:
        with pytest.raises(grpc.RpcError) as err:
            anonymous.jobs()
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pkforge.Client(daemons["target"], token="wrong") as wrong:
        with pytest.raises(grpc.RpcError) as err:
            wrong.jobs()
        assert err.value.code() in (grpc.StatusCode.UNAUTHENTICATED,
                                    grpc.StatusCode.PERMISSION_DENIED)
    with pkforge.Client(daemons["target"], token=daemons["token"]) as ok:
        ok.jobs()


def test_tls_to_a_plaintext_port_fails_clearly(daemons, tmp_path):
    # The daemons here serve plaintext; a TLS client must fail, not hang.
    with pkforge.Client(daemons["target"], tls=True, token=daemons["token"],
                        timeout_s=5) as c:
        with pytest.raises(grpc.RpcError) as err:
            c.jobs()
        assert err.value.code() in (grpc.StatusCode.UNAVAILABLE,
                                    grpc.StatusCode.DEADLINE_EXCEEDED)
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(ValueError, match="not a PEM certificate"):
        pkforge.Client(daemons["target"], ca_file=str(bad))


def test_cancel_stops_a_running_job(client):
    spec = pkforge.job_spec("allreduce", backend="host", world_size=1, size="tiny",
                            agent="search", budget_s=600, label="pytest-cancel")
    job = client.submit(spec)
    # Wait for the job to start (an event-driven wait: the watch stream).
    for ev in client.watch(job.id):
        if ev.HasField("state_changed") and ev.state_changed.state == pb.JOB_STATE_RUNNING:
            break
    client.cancel(job.id, "pytest")
    final = client.wait(job.id)
    assert final.state == pb.JOB_STATE_CANCELLED


def test_bad_input_names_the_field(client):
    with pytest.raises(ValueError, match="backend"):
        pkforge.job_spec(backend="tpu")
    with pytest.raises(grpc.RpcError) as err:
        client.get_job("../etc/passwd")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_tls_with_the_servers_ca(daemons, tls_orchestrator):
    t = tls_orchestrator
    with pkforge.Client(t["target"], ca_file=t["ca"], token=daemons["token"]) as c:
        assert c.jobs() == []
        assert len(c.executors()) == 1
    with pkforge.Client(t["target"], ca_file=t["ca"]) as no_token:
        with pytest.raises(grpc.RpcError) as err:
            no_token.jobs()
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # A client trusting another CA, or speaking plaintext, gets no answer.
    for kwargs in ({"ca_file": t["other_ca"]}, {}):
        with pkforge.Client(t["target"], token=daemons["token"], timeout_s=5, **kwargs) as c:
            with pytest.raises(grpc.RpcError) as err:
                c.jobs()
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE, kwargs
