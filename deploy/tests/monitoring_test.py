#!/usr/bin/env python3
"""deploy/monitoring against the real daemons.

Starts a pkforge-executor and a pkforge-orchestrator on loopback from the
sample configs in deploy/config (so those are checked too), runs one small
search job through them, scrapes both /metrics endpoints and checks:
  - every metric the Grafana dashboard and the alert rules name is exported
    by one of the daemons (histogram _bucket/_sum/_count resolved to their
    family; `up` is Prometheus' own);
  - every label those queries match or group on exists on that metric, and
    every label value they match is one the daemons produce;
  - every exported family is documented in docs/metrics.md;
  - the rule file and dashboard are well formed (and `promtool check rules`
    passes where promtool is installed).
Usage: monitoring_test.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

# Label values the daemons produce (storage/store.cc JobStateName,
# executor/pipeline.cc StatusLabel, the compile cache outcome, rejection reasons).
KNOWN_VALUES = {
    "state": {"queued", "running", "succeeded", "failed", "cancelled", "interrupted"},
    "status": {"OK", "COMPILE_ERROR", "SETUP_ERROR", "RUNTIME_ERROR", "TIMEOUT", "WRONG_OUTPUT",
               "CHEAT_DETECTED", "HARNESS_ERROR", "UNSPECIFIED"},
    "cache": {"hit", "miss"},
    "reason": {"unauthenticated", "invalid"},
}
ADDED_BY_PROMETHEUS = {"instance", "job", "le"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
            "bool", "offset", "inf", "nan"}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"monitoring_test: FAIL: {what}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_line(path, pattern, proc, limit_s):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        with open(path) as f:
            for line in f:
                m = re.search(pattern, line)
                if m:
                    return m
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    with open(path) as f:
        sys.exit(f"monitoring_test: FAIL: no '{pattern}' from {proc.args[0]}:\n{f.read()[-3000:]}")


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    families, series = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            families[name] = typ
        elif line and not line.startswith("#"):
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s", line)
            labels = dict(re.findall(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            series.setdefault(m.group(1), []).append(labels)
    return families, series


def family_of(name, families):
    if name in families:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and families.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return None


def parse_promql(expr):
    """-> [(metric, {label: [(op, value)]}), ...], [grouping label names]"""
    expr = re.sub(r"#.*", "", expr)
    refs, groups = [], []
    for m in re.finditer(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", expr):
        groups += [g.strip() for g in m.group(1).split(",") if g.strip()]
    stripped = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    stripped = re.sub(r"\[[^\]]*\]", " ", stripped)  # ranges
    for m in re.finditer(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?", stripped):
        name, matchers, call = m.group(1), m.group(2), m.group(3)
        if call or name.lower() in KEYWORDS or re.fullmatch(r"\d.*", name):
            continue
        if m.start() > 0 and (stripped[m.start() - 1] in "\"'$." or stripped[m.start() - 1].isdigit()):
            # inside a string, a $variable, or a number such as 1e-9
            continue
        labels = {}
        for lm in re.finditer(r'([a-zA-Z_]\w*)\s*(=~|!=|!~|=)\s*"([^"]*)"', matchers or ""):
            labels.setdefault(lm.group(1), []).append((lm.group(2), lm.group(3)))
        refs.append((name, labels))
    return refs, groups


def main():
    build, src = sys.argv[1], sys.argv[2]
    bin_dir = os.path.join(build, "bin")
    mon = os.path.join(src, "deploy", "monitoring")

    # --- the queries -------------------------------------------------------
    with open(os.path.join(mon, "grafana-dashboard.json")) as f:
        dash = json.load(f)
    exprs = []
    for p in dash["panels"]:
        check(p.get("targets"), f"panel '{p.get('title')}' has queries")
        check(p.get("datasource", {}).get("uid") == "${datasource}", f"panel '{p.get('title')}' uses $datasource")
        exprs += [(f"dashboard '{p['title']}'", t["expr"]) for t in p.get("targets", [])]
    for v in dash["templating"]["list"]:
        if v.get("type") == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            exprs.append((f"dashboard variable {v['name']}", re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", q)))
    with open(os.path.join(mon, "pkforge-alerts.yml")) as f:
        rules = yaml.safe_load(f)
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    for r in alerts:
        check(r.get("alert") and r.get("expr") and r.get("labels", {}).get("severity")
              and r.get("annotations", {}).get("summary"), f"alert rule complete: {r.get('alert')}")
        exprs.append((f"alert {r.get('alert')}", r["expr"]))
    names = {a["alert"] for a in alerts}
    for want in ("PkforgeExecutorDown", "PkforgeGpuUnhealthy", "PkforgeExecutorQueueDeep", "PkforgeJobFailureRate"):
        check(want in names, f"alert {want} exists")
    with open(os.path.join(mon, "prometheus.yml")) as f:
        prom = yaml.safe_load(f)
    jobs = {s["job_name"] for s in prom["scrape_configs"]}
    check({"pkforge-orchestrator", "pkforge-executor"} <= jobs, "scrape jobs for both daemons")
    check("pkforge-alerts.yml" in prom.get("rule_files", []), "prometheus.yml loads the alert rules")

    # --- the daemons ---------------------------------------------------------
    tmp = tempfile.mkdtemp(prefix="pkf_mon_")
    procs = []
    try:
        emet, omet = free_port(), free_port()
        elog = open(os.path.join(tmp, "executor.log"), "w")
        exe = subprocess.Popen([os.path.join(bin_dir, "pkforge-executor"),
                                "--config", os.path.join(src, "deploy/config/executor.json"),
                                "--listen", "127.0.0.1:0", "--metrics-listen", f"127.0.0.1:{emet}",
                                "--data-dir", os.path.join(tmp, "data"), "--gpus", "none", "--no-measure"],
                               stdout=elog, stderr=subprocess.STDOUT)
        procs.append(exe)
        eport = wait_for_line(elog.name, r"^pkforge-executor listening on 127\.0\.0\.1:(\d+)$", exe, 60).group(1)
        olog = open(os.path.join(tmp, "orchestrator.log"), "w")
        orch = subprocess.Popen([os.path.join(bin_dir, "pkforge-orchestrator"),
                                 "--config", os.path.join(src, "deploy/config/orchestrator.json"),
                                 "--listen", "127.0.0.1:0", "--metrics-listen", f"127.0.0.1:{omet}",
                                 "--db", os.path.join(tmp, "pkforge.db"), "--executor", f"127.0.0.1:{eport}"],
                                stdout=olog, stderr=subprocess.STDOUT)
        procs.append(orch)
        oport = wait_for_line(olog.name, r"^LISTENING .*:(\d+)$", orch, 60).group(1)
        job = subprocess.run([os.path.join(bin_dir, "pkforge"), "submit", "--orchestrator", f"127.0.0.1:{oport}",
                              "--problem", "allreduce", "--backend", "host", "--agent", "search",
                              "--max-evaluations", "2", "--budget", "120s", "--watch"],
                             capture_output=True, text=True, timeout=300)
        check(job.returncode == 0 and "succeeded" in job.stdout, f"a job ran through both daemons: {job.stdout[-500:]}{job.stderr[-500:]}")
        efam, eser = scrape(emet)
        ofam, oser = scrape(omet)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    families = {**efam, **ofam}
    series = {**eser, **oser}
    print(f"monitoring_test: executor exports {len(efam)} families, orchestrator {len(ofam)}")

    # --- queries vs exports ----------------------------------------------------
    used = set()
    for where, expr in exprs:
        refs, groups = parse_promql(expr)
        check(refs, f"{where}: names a metric")
        for name, labels in refs:
            if name == "up":
                check(set(labels) <= {"job", "instance"}, f"{where}: up{labels}")
                continue
            fam = family_of(name, families)
            check(fam is not None, f"{where}: metric {name} is not exported by the daemons")
            if fam is None:
                continue
            used.add(fam)
            have = series.get(name, []) or series.get(fam, [])
            have_labels = {k for s in have for k in s}
            for label, matches in labels.items():
                if label in ADDED_BY_PROMETHEUS:
                    continue
                check(label in have_labels or (not have and label in KNOWN_VALUES),
                      f"{where}: {name} has no label '{label}' (exported: {sorted(have_labels)})")
                for op, value in matches:
                    vals = value.split("|") if op in ("=~", "!~") else [value]
                    for v in vals:
                        check(v in KNOWN_VALUES.get(label, set()) or v.startswith("$") or v == ".*",
                              f"{where}: {name}{{{label}{op}\"{value}\"}}: '{v}' is never produced")
            for g in groups:
                if g not in ADDED_BY_PROMETHEUS and have:
                    check(g in have_labels, f"{where}: groups {name} by '{g}', which it does not carry")
    print(f"monitoring_test: {len(exprs)} queries name {len(used)} exported families: {' '.join(sorted(used))}")

    with open(os.path.join(src, "docs", "metrics.md")) as f:
        doc = f.read()
    for fam in sorted(families):
        check(f"`{fam}`" in doc, f"docs/metrics.md documents {fam}")

    promtool = shutil.which("promtool")
    if promtool:
        r = subprocess.run([promtool, "check", "rules", os.path.join(mon, "pkforge-alerts.yml")],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"promtool check rules: {r.stdout}{r.stderr}")
        print(f"monitoring_test: promtool check rules: {r.stdout.strip().splitlines()[-1] if r.stdout else r.returncode}")
    else:
        print("monitoring_test: promtool not installed: rule syntax not checked by Prometheus itself")
    if failures:
        print(f"monitoring_test: {len(failures)} failure(s)")
        sys.exit(1)
    print("monitoring_test: PASS")


if __name__ == "__main__":
    main()
