"""pkforge.read_db on the database the real orchestrator wrote (conftest.py):
live, as a read-only copy in a read-only folder, and as older schema versions."""
import json
import os
import pathlib
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

import pkforge


def _copy(src: pathlib.Path, dst: pathlib.Path) -> None:
    """A consistent copy of a live WAL database (sqlite3 .backup), left in WAL mode."""
    s, d = pkforge.connect_ro(src, immutable=False), sqlite3.connect(dst, isolation_level=None)
    s.backup(d)
    s.close()
    assert d.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    d.close()  # the last close merges and removes the -wal
    assert not pathlib.Path(str(dst) + "-wal").exists()


def _make_read_only(path: pathlib.Path) -> None:
    path.chmod(0o444)
    path.parent.chmod(0o555)


def test_read_live_database(daemons, finished_job, tmp_path):
    job, events = finished_job
    db = pkforge.read_db(daemons["db"])  # the orchestrator still has it open
    assert db.schema_version == 5
    row = db.job(job.id)
    assert row["state"] == "succeeded"
    assert row["problem"] == "allreduce" and row["world_size"] == 2
    ev = db.evaluations[db.evaluations["job_id"] == job.id]
    assert len(ev[ev["role"] == "search"]) == job.evaluations
    # The final fresh re-measurement is a row of its own and the job's result.
    assert list(ev[ev["role"] == "final"]["id"]) == [job.final_evaluation_id]
    assert row["final_evaluation_id"] == job.final_evaluation_id
    assert row["final_speedup"] == pytest.approx(job.final_speedup)
    assert row["other_settings_evaluations"] == job.other_settings_evaluations
    assert int((~ev["comparable"]).sum()) == job.other_settings_evaluations
    assert set(ev["candidate_sha256"]) <= set(db.candidates["sha256"])
    assert list(db.events[db.events["job_id"] == job.id]["seq"]) == [e.seq for e in events]
    assert list(db.events[db.events["job_id"] == job.id]["type"]) == [
        e.WhichOneof("payload") for e in events]
    assert set(db.turns.columns) >= {"id", "job_id", "turn_index", "elapsed_ms", "note"}
    assert "attempts" in db.llm_calls.columns

    curves = pkforge.best_so_far(db.evaluations)
    active = pkforge.best_so_far(db.evaluations, axis="active")
    if job.HasField("best_speedup"):
        assert curves[curves["job_id"] == job.id]["best_speedup"].max() == pytest.approx(
            job.best_speedup)
        assert row["best_speedup"] == pytest.approx(job.best_speedup)
        assert (active["t_s"].values <= curves["t_s"].values + 1e-9).all()
        assert curves["best_speedup"].is_monotonic_increasing
    import matplotlib
    matplotlib.use("Agg")
    ax = pkforge.plot_best_so_far(curves, end_s=job.elapsed_ms / 1000.0, title="pytest")
    assert len(ax.get_lines()) == curves["job_id"].nunique()
    ax.figure.savefig(tmp_path / "plateau.png")
    assert (tmp_path / "plateau.png").stat().st_size > 0

    # The connection read_db uses cannot write.
    with pkforge.connect_ro(daemons["db"]) as conn:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("UPDATE jobs SET label = 'x'")


_READER = r"""
import json, sys, pkforge
path = sys.argv[1]
out = {"uid": __import__("os").geteuid()}
db = pkforge.read_db(path)
out["jobs"] = list(db.jobs["id"])
out["evaluations"] = len(db.evaluations)
out["events"] = len(db.events)
try:
    pkforge.read_db(path, immutable=False)
    out["plain_ro"] = "ok"
except Exception as e:
    out["plain_ro"] = str(e)
print(json.dumps(out))
"""


def test_read_only_copy_in_read_only_folder(daemons, finished_job, workdir):
    job, events = finished_job
    folder = workdir / "ro-copy"
    folder.mkdir()
    path = folder / "pkforge.db"
    _copy(daemons["db"], path)
    _make_read_only(path)
    before, listing = path.read_bytes(), sorted(os.listdir(folder))
    # As root permissions do not bite: read as uid 65534 then, like a researcher.
    user = {"user": 65534, "group": 65534, "extra_groups": []} if os.geteuid() == 0 else {}
    r = subprocess.run([sys.executable, "-c", _READER, str(path)], capture_output=True,
                       text=True, timeout=120, cwd="/", **user)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["uid"] != 0
    assert job.id in out["jobs"]
    assert out["evaluations"] >= job.evaluations
    assert out["events"] >= len(events)
    # Without immutable SQLite cannot read a WAL file whose -shm it cannot create.
    assert "readonly" in out["plain_ro"] or "unable to open" in out["plain_ro"], out
    # In-process too (root: the auto rule still picks immutable for a 0444 file).
    db = pkforge.read_db(path)
    assert job.id in list(db.jobs["id"])
    assert path.read_bytes() == before
    assert sorted(os.listdir(folder)) == listing


def test_older_schema_versions_read_with_later_columns_filled(daemons, finished_job, workdir):
    job, _ = finished_job
    folder = workdir / "v2-copy"
    folder.mkdir()
    path = folder / "pkforge.db"
    _copy(daemons["db"], path)
    with sqlite3.connect(path) as conn:  # back to schema v2: no attempts, no client_request_id
        conn.executescript("""
            DELETE FROM evaluations WHERE role = 'final';
            ALTER TABLE evaluations DROP COLUMN timed_iters;
            ALTER TABLE evaluations DROP COLUMN trials;
            ALTER TABLE evaluations DROP COLUMN comparable;
            ALTER TABLE evaluations DROP COLUMN role;
            DROP INDEX jobs_by_client_request_id;
            ALTER TABLE jobs DROP COLUMN client_request_id;
            ALTER TABLE llm_calls DROP COLUMN attempts;
            PRAGMA user_version = 2;
        """)
    sqlite3.connect(path).close()
    _make_read_only(path)
    before = path.read_bytes()
    db = pkforge.read_db(path)
    assert db.schema_version == 2
    assert list(db.jobs["client_request_id"].unique()) == [""]
    assert "attempts" in db.llm_calls.columns
    # v5's columns as the migration fills them: comparable search evaluations.
    assert db.evaluations["comparable"].all() and set(db.evaluations["role"]) <= {"search"}
    assert db.job(job.id)["final_evaluation_id"] == ""
    assert job.id in list(db.jobs["id"])
    assert path.read_bytes() == before
    with pkforge.connect_ro(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2


def test_refusals(workdir, tmp_path):
    missing = tmp_path / "missing.db"
    with pytest.raises(FileNotFoundError):
        pkforge.read_db(missing)
    assert not missing.exists()
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="not a pkforge trajectory database"):
        pkforge.read_db(empty)
    newer = tmp_path / "newer.db"
    with sqlite3.connect(newer) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(ValueError, match="schema version 99"):
        pkforge.read_db(newer)
    with pytest.raises(ValueError, match="axis"):
        pkforge.best_so_far(pd.DataFrame(), axis="sideways")


def test_path_with_uri_characters(daemons, finished_job, workdir):
    job, _ = finished_job
    folder = workdir / "a ?b#c%41&mode=rw"
    folder.mkdir()
    path = folder / "t?.db"
    _copy(daemons["db"], path)
    for immutable in (None, False, True):
        assert job.id in list(pkforge.read_db(path, immutable=immutable).jobs["id"])


@pytest.mark.parametrize("axis", ["elapsed", "active"])
def test_best_so_far_matches_the_orchestrators_analysis(client, daemons, finished_job, axis):
    job, _ = finished_job
    db = pkforge.read_db(daemons["db"])
    ours = pkforge.best_so_far(db.evaluations[db.evaluations["job_id"] == job.id], axis=axis)
    theirs = pkforge.plateau_curves(client.plateau([job.id], axis=axis))
    assert ours["t_s"].tolist() == pytest.approx(theirs["t_s"].tolist())
    assert ours["best_speedup"].tolist() == pytest.approx(theirs["best_speedup"].tolist())
