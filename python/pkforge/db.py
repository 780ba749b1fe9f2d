"""Read-only access to a pkforge trajectory database (storage/schema.md).

read_db() never creates, migrates or writes the file: the connection is
SQLite's read-only mode (URI ``file:...?mode=ro``), plus ``immutable=1`` when
asked or, by default, when the file cannot change under us (no write
permission on it or its folder, and no ``-wal`` file holding commits) -- the
only way SQLite reads a WAL-mode file in a folder it cannot write.
Files of schema versions 1..5 are read; columns added by later versions are
filled as the migrations fill them (see SCHEMA_VERSIONS).
"""
from __future__ import annotations

import dataclasses
import os
import pathlib
import sqlite3
import urllib.parse
from typing import Optional

import pandas as pd

# The versions this reader understands (PRAGMA user_version), as the C++ store.
SCHEMA_VERSIONS = (1, 2, 3, 4, 5)

TABLES = ("jobs", "turns", "llm_calls", "candidates", "evaluations", "events")

# Row order of each table: creation order (ids are time-sortable; rowid for
# the rest), evaluations in the elapsed order analyses use.
_ORDER = {
    "jobs": "id",
    "turns": "job_id, turn_index",
    "llm_calls": "job_id, elapsed_ms, rowid",
    "candidates": "first_seen_wall_us, sha256",
    "evaluations": "job_id, elapsed_ms, rowid",
    "events": "rowid",
}


def _writable(path: pathlib.Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    # No write bit at all counts as read-only even for root, who passes
    # os.access(W_OK) regardless: whoever made it 0444 meant it not to change.
    return bool(mode & 0o222) and os.access(path, os.W_OK)


def _wal_has_commits(path: pathlib.Path) -> bool:
    wal = pathlib.Path(str(path) + "-wal")
    try:
        return wal.stat().st_size > 0
    except OSError:
        return False


def connect_ro(path, immutable: Optional[bool] = None) -> sqlite3.Connection:
    """A read-only sqlite3 connection to the file at `path`.

    immutable: True adds immutable=1 (no locks, the -wal ignored: only for a
    file nothing writes); False never does; None decides as described above.
    """
    p = pathlib.Path(path).absolute()
    if not p.is_file():
        raise FileNotFoundError(f"database {path} does not exist")
    if immutable is None:
        immutable = not _wal_has_commits(p) and (not _writable(p) or not _writable(p.parent))
    elif immutable and _wal_has_commits(p):
        raise ValueError(f"{p}-wal holds commits not yet in the file: immutable=1 would miss them")
    query = "mode=ro&immutable=1" if immutable else "mode=ro"
    uri = "file:" + urllib.parse.quote(str(p)) + "?" + query
    return sqlite3.connect(uri, uri=True)


def _columns(conn: sqlite3.Connection, table: str) -> set:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


@dataclasses.dataclass
class Database:
    """The tables of one trajectory database as DataFrames (storage/schema.md)."""

    path: str
    schema_version: int
    jobs: pd.DataFrame
    turns: pd.DataFrame
    llm_calls: pd.DataFrame
    candidates: pd.DataFrame
    evaluations: pd.DataFrame
    events: pd.DataFrame

    def job(self, job_id: str) -> pd.Series:
        rows = self.jobs[self.jobs["id"] == job_id]
        if rows.empty:
            raise KeyError(f"job {job_id} is not in {self.path}")
        return rows.iloc[0]


def read_db(path, immutable: Optional[bool] = None) -> Database:
    """Reads every table of the database at `path`, read-only.

    Raises FileNotFoundError for a missing file (nothing is created) and
    ValueError for a file that is not a trajectory database or is newer
    than SCHEMA_VERSIONS.
    """
    conn = connect_ro(path, immutable)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            raise ValueError(f"{path} is not a pkforge trajectory database (user_version 0)")
        if version > SCHEMA_VERSIONS[-1]:
            raise ValueError(
                f"{path} has schema version {version}; this reader knows up to "
                f"{SCHEMA_VERSIONS[-1]} (upgrade the pkforge Python package)"
            )
        frames = {}
        for table in TABLES:
            frames[table] = pd.read_sql_query(
                f"SELECT * FROM {table} ORDER BY {_ORDER[table]}", conn
            )
        _fill_later_columns(frames, conn)
    finally:
        conn.close()
    ev = frames["evaluations"]
    ev["correct"] = ev["correct"].astype(bool)
    ev["comparable"] = ev["comparable"].astype(bool)
    _add_job_results(frames["jobs"], ev)
    return Database(path=str(path), schema_version=version, **frames)


def _fill_later_columns(frames: dict, conn: sqlite3.Connection) -> None:
    """Columns of versions 2-5 on an older file, as the migrations fill them."""
    jobs = frames["jobs"]
    job_columns = _columns(conn, "jobs")
    if "best_speedup" not in job_columns:
        # v2's backfill: the first correct evaluation (insertion order) with
        # the highest speedup.
        best = pd.read_sql_query(
            "SELECT job_id, id, speedup FROM evaluations WHERE correct = 1 AND speedup IS NOT NULL "
            "ORDER BY job_id, speedup DESC, rowid ASC", conn
        ).drop_duplicates("job_id").set_index("job_id")
        jobs["best_speedup"] = jobs["id"].map(best["speedup"])
        jobs["best_evaluation_id"] = jobs["id"].map(best["id"])
    if "client_request_id" not in job_columns:  # v4
        jobs["client_request_id"] = ""
    if "attempts" not in _columns(conn, "llm_calls"):  # v3
        frames["llm_calls"]["attempts"] = 1
    if "role" not in _columns(conn, "evaluations"):  # v5
        ev = frames["evaluations"]
        ev["timed_iters"] = 0
        ev["trials"] = 0
        ev["comparable"] = 1
        ev["role"] = "search"


def _add_job_results(jobs: pd.DataFrame, ev: pd.DataFrame) -> None:
    """Per job, as the API's Job: its result (the latest final re-measurement,
    role 'final') and its search evaluations at other settings than its own
    (comparable 0: successive-halving rungs, kept off the best-so-far axis)."""
    final = ev[ev["role"] == "final"].drop_duplicates("job_id", keep="last").set_index("job_id")
    jobs["final_evaluation_id"] = jobs["id"].map(final["id"]).fillna("")
    jobs["final_status"] = jobs["id"].map(final["status"]).fillna("")
    jobs["final_speedup"] = jobs["id"].map(final["speedup"])
    other = ev[(ev["role"] == "search") & ~ev["comparable"]]
    jobs["other_settings_evaluations"] = (
        jobs["id"].map(other.groupby("job_id").size()).fillna(0).astype(int))
    jobs["other_settings_best_speedup"] = jobs["id"].map(
        other[other["correct"]].groupby("job_id")["speedup"].max())
