"""Best-so-far (plateau) curves as DataFrames, and a matplotlib plot helper.

best_so_far() computes the curves from read_db()'s evaluations exactly as the
C++ analysis does (storage/plateau_loader.cc): time is elapsed seconds since
the job started, or "active" seconds (elapsed minus the executor queue time
of the evaluations finished so far); a step is recorded where a correct,
timed evaluation beats the best so far. plateau_curves() flattens the curves
of an AnalyzePlateau report (Client.plateau) into the same long format.
"""
from __future__ import annotations

from typing import Optional

import pandas as pd

CURVE_COLUMNS = ["job_id", "t_s", "best_speedup"]


def _active_seconds(ev: pd.DataFrame) -> pd.Series:
    """Per evaluation: elapsed minus queueing so far, never decreasing, <= elapsed."""
    out = pd.Series(0.0, index=ev.index)
    for _, g in ev.groupby("job_id", sort=False):
        queued_ms, prev = 0.0, 0.0
        # Evaluations finishing at the same instant share their queue times.
        for elapsed_ms, same in g.groupby("elapsed_ms", sort=True):
            queued_ms += same["queue_ms"].clip(lower=0).sum()
            elapsed_s = max(0, int(elapsed_ms)) / 1000.0
            active = min(elapsed_s, max(prev, elapsed_s - queued_ms / 1000.0))
            out.loc[same.index] = active
            prev = active
    return out


def best_so_far(evaluations: pd.DataFrame, axis: str = "elapsed") -> pd.DataFrame:
    """Steps of each job's best correct speedup over time.

    evaluations: read_db(...).evaluations (or any frame with job_id,
    elapsed_ms, queue_ms, correct, speedup). axis: "elapsed" or "active".
    Returns columns job_id, t_s, best_speedup, evaluation_id: one row per
    improvement, in time order per job.
    """
    if axis not in ("elapsed", "active"):
        raise ValueError(f"axis: expected 'elapsed' or 'active', got {axis!r}")
    ev = evaluations.sort_values(["job_id", "elapsed_ms"], kind="stable")
    if ev.empty:
        return pd.DataFrame(columns=CURVE_COLUMNS + ["evaluation_id"])
    t = _active_seconds(ev) if axis == "active" else ev["elapsed_ms"].clip(lower=0) / 1000.0
    ok = ev["correct"].astype(bool) & ev["speedup"].notna()
    # One axis: the search's evaluations at the job's own settings (not the
    # rungs timed with other iteration counts, not the final re-measurement).
    if "comparable" in ev:
        ok &= ev["comparable"].astype(bool)
    if "role" in ev:
        ok &= ev["role"] == "search"
    rows = []
    for job_id, g in ev[ok].groupby("job_id", sort=False):
        best = 0.0
        for idx, e in g.iterrows():
            if e["speedup"] > best:
                best = float(e["speedup"])
                rows.append((job_id, float(t.loc[idx]), best, e["id"]))
    return pd.DataFrame(rows, columns=CURVE_COLUMNS + ["evaluation_id"])


def plateau_curves(report) -> pd.DataFrame:
    """The best-so-far steps of a v1 PlateauReport (Client.plateau with
    include_curves) in long format: job_id, problem, model, strategy,
    agent_kind, label, t_s, best_speedup."""
    rows = []
    for j in report.jobs:
        for p in j.curve:
            rows.append((j.job_id, j.problem, j.model, j.strategy, j.agent_kind, j.label,
                         p.t_s, p.best_speedup))
    return pd.DataFrame(rows, columns=["job_id", "problem", "model", "strategy", "agent_kind",
                                       "label", "t_s", "best_speedup"])


def plot_best_so_far(curves: pd.DataFrame, ax=None, by: str = "job_id",
                     end_s: Optional[float] = None, log_x: bool = False, title: str = "",
                     xlabel: str = "time since job start (s)"):
    """Step plot of best-so-far curves, one line per value of `by`.

    curves: best_so_far() or plateau_curves() output. end_s extends each line
    to that time (e.g. the budget). Returns the matplotlib Axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for key, g in curves.groupby(by, sort=True):
        g = g.sort_values("t_s")
        xs, ys = list(g["t_s"]), list(g["best_speedup"])
        if end_s is not None and xs and end_s > xs[-1]:
            xs.append(end_s)
            ys.append(ys[-1])
        ax.step(xs, ys, where="post", label=str(key))
    ax.set_xlabel(xlabel)  # say "active time (s)" for axis="active" curves
    ax.set_ylabel("best speedup so far (x)")
    if log_x:
        ax.set_xscale("log")
    if title:
        ax.set_title(title)
    if curves[by].nunique() <= 12:
        ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax
