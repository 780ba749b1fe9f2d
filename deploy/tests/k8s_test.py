#!/usr/bin/env python3
"""Offline validation of deploy/k8s (run with the venv from scripts/install-deps.sh).

1. Renders the example overlay with a small built-in renderer for the subset
   of kustomize the manifests use (resources, namespace, images, labels,
   secretGenerator, JSON6902 patches) -- kustomize itself is not a Debian or
   PyPI package. Where kubectl is installed, `kubectl kustomize` renders it
   too and both renderings must hold the same objects and container args.
2. Validates every base manifest and every rendered object against the
   Kubernetes JSON schema (kubernetes-validate, strict: unknown fields fail)
   for each Kubernetes version in VERSIONS.
3. Checks the deployment's promises: executors on GPU nodes requesting
   nvidia.com/gpu, gRPC probes on the health service, a headless Service the
   orchestrator's dns:/// target names (service, namespace, port), the
   orchestrator a one-replica StatefulSet with its database on the claimed
   volume, Secrets mounted for tokens (and TLS in the overlay), and the
   NetworkPolicy letting only the orchestrator reach the executors' gRPC port.

4. With BUILD_DIR: starts this build's pkforge-executor and
   pkforge-orchestrator with the exact args of the base manifests (addresses
   moved to loopback, paths into a temporary directory, $(VAR) filled in as
   the kubelet would), so a flag the binaries do not know fails here and
   not in a cluster.

Usage: k8s_test.py DEPLOY_K8S_DIR [BUILD_DIR]
"""
import base64
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml
import kubernetes_validate

VERSIONS = ["1.29.0", "1.33.0"]  # grpc probes are GA since 1.27
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"k8s_test: FAIL: {what}")


# ---- a minimal kustomize ---------------------------------------------------
def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def json_pointer_apply(doc, op):
    parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].lstrip("/").split("/")]
    parent = doc
    for p in parts[:-1]:
        parent = parent[int(p)] if isinstance(parent, list) else parent[p]
    last = parts[-1]
    if op["op"] in ("add", "replace"):
        if isinstance(parent, list):
            if last == "-":
                parent.append(copy.deepcopy(op["value"]))
            elif op["op"] == "add":
                parent.insert(int(last), copy.deepcopy(op["value"]))
            else:
                parent[int(last)] = copy.deepcopy(op["value"])
        else:
            if op["op"] == "replace" and last not in parent:
                raise KeyError(f"replace of missing {op['path']}")
            parent[last] = copy.deepcopy(op["value"])
    elif op["op"] == "remove":
        del parent[int(last) if isinstance(parent, list) else last]
    else:
        raise ValueError(f"unsupported patch op {op['op']}")


def render(kdir):
    with open(os.path.join(kdir, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    known = {"apiVersion", "kind", "namespace", "resources", "images", "labels",
             "secretGenerator", "patches"}
    unknown = set(k) - known
    if unknown:
        sys.exit(f"k8s_test: {kdir}/kustomization.yaml uses {sorted(unknown)}, which this renderer "
                 "does not implement: extend deploy/tests/k8s_test.py")
    docs = []
    for r in k.get("resources", []):
        p = os.path.join(kdir, r)
        docs += render(p) if os.path.isdir(p) else load_docs(p)
    for g in k.get("secretGenerator", []):
        data = {}
        for spec in g.get("files", []):
            key, _, rel = spec.partition("=")
            with open(os.path.join(kdir, rel), "rb") as f:
                data[key] = base64.b64encode(f.read()).decode()
        docs.append({"apiVersion": "v1", "kind": "Secret", "type": g.get("type", "Opaque"),
                     "metadata": {"name": g["name"]}, "data": data})
    for lab in k.get("labels", []):
        for d in docs:
            d.setdefault("metadata", {}).setdefault("labels", {}).update(lab["pairs"])
    for p in k.get("patches", []):
        t = p["target"]
        hits = [d for d in docs if d["kind"] == t["kind"] and d["metadata"]["name"] == t["name"]]
        if not hits:
            sys.exit(f"k8s_test: patch target {t} matches nothing")
        for d in hits:
            for op in yaml.safe_load(p["patch"]):
                json_pointer_apply(d, op)
    for img in k.get("images", []):
        for d in docs:
            spec = d.get("spec", {}).get("template", {}).get("spec", {})
            for c in spec.get("containers", []) + spec.get("initContainers", []):
                name, _, tag = c["image"].partition(":")
                if name == img["name"]:
                    c["image"] = f"{img.get('newName', name)}:{img.get('newTag', tag)}"
    if "namespace" in k:
        for d in docs:
            if d["kind"] != "Namespace":
                d["metadata"]["namespace"] = k["namespace"]
    return docs


# ---- checks ----------------------------------------------------------------
def validate(docs, where):
    for d in docs:
        for v in VERSIONS:
            try:
                kubernetes_validate.validate(d, v, strict=True)
            except Exception as e:  # ValidationError, SchemaNotFoundError
                check(False, f"{where}: {d['kind']}/{d['metadata']['name']} against {v}: "
                             f"{getattr(e, 'message', e)}")


def find(docs, kind, name):
    m = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name)]
    check(len(m) == 1, f"exactly one {kind}/{name} (found {len(m)})")
    return m[0] if m else {}


def promises(docs, overlay):
    ds = find(docs, "DaemonSet", "pkforge-executor")
    pod = ds["spec"]["template"]["spec"]
    exe = pod["containers"][0]
    check(exe["resources"]["limits"].get("nvidia.com/gpu", 0) >= 1, "executor requests nvidia.com/gpu")
    check("nvidia.com/gpu.present" in pod.get("nodeSelector", {}), "executor selects GPU nodes")
    grpc_port = next(p["containerPort"] for p in exe["ports"] if p["name"] == "grpc")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        check(exe.get(probe, {}).get("grpc", {}).get("port") == grpc_port,
              f"executor {probe} is a gRPC health probe on port {grpc_port}")
    args = " ".join(exe["args"])
    check(f"--listen=0.0.0.0:{grpc_port}" in args and "--token-file=" in args,
          "executor listens on its grpc port with a token (required off loopback)")

    svc = find(docs, "Service", "pkforge-executor")
    check(svc["spec"].get("clusterIP") == "None", "executor Service is headless")
    check(svc["spec"]["selector"] == ds["spec"]["selector"]["matchLabels"],
          "executor Service selects the DaemonSet's pods")
    check(not svc["spec"].get("publishNotReadyAddresses", False), "DNS lists ready executors only")
    svc_port = next(p["port"] for p in svc["spec"]["ports"] if p["name"] == "grpc")

    sts = find(docs, "StatefulSet", "pkforge-orchestrator")
    check(sts["spec"]["replicas"] == 1, "one orchestrator (SQLite has one writer)")
    orch = sts["spec"]["template"]["spec"]["containers"][0]
    oargs = orch["args"]
    target = [a for a in oargs if a.startswith("--executor=")]
    want = re.compile(r"^--executor=dns:///pkforge-executor\.\$\(POD_NAMESPACE\)\.svc\.cluster\.local:(\d+)$")
    m = want.match(target[0]) if target else None
    check(bool(m) and int(m.group(1)) == svc_port and svc["metadata"]["name"] == "pkforge-executor",
          f"orchestrator --executor names the headless Service and its port: {target}")
    check(any(e["name"] == "POD_NAMESPACE" and e["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
              for e in orch["env"]), "POD_NAMESPACE from the downward API")
    vct = sts["spec"]["volumeClaimTemplates"]
    check(len(vct) == 1 and vct[0]["spec"]["accessModes"] == ["ReadWriteOnce"],
          "orchestrator claims one ReadWriteOnce volume")
    db = next(a.split("=", 1)[1] for a in oargs if a.startswith("--db="))
    mount = next(v["mountPath"] for v in orch["volumeMounts"] if v["name"] == vct[0]["metadata"]["name"])
    check(db.startswith(mount + "/"), f"database {db} lives on the claimed volume ({mount})")
    tls = any(a.startswith("--tls-cert=") for a in oargs)
    for probe in ("readinessProbe", "livenessProbe"):
        p = orch[probe]
        if tls:  # kubelet's gRPC probes cannot speak TLS
            check(p.get("httpGet", {}).get("path") == "/healthz", f"TLS orchestrator {probe} uses /healthz")
        else:
            check(p.get("grpc", {}).get("port") == 50061, f"orchestrator {probe} is a gRPC health probe")
    check(any(a.startswith("--token-file=") for a in oargs) and
          any(a.startswith("--executor-token-file=") for a in oargs), "orchestrator token files")

    secret_refs = {v["secret"]["secretName"] for d in (ds, sts)
                   for v in d["spec"]["template"]["spec"]["volumes"] if "secret" in v}
    check(any(s.startswith("pkforge-tokens") for s in secret_refs), "tokens mounted from a Secret")
    if overlay:
        have = {d["metadata"]["name"] for d in docs if d["kind"] == "Secret"}
        for s in secret_refs:
            if s.startswith("pkforge-tokens"):
                check(s in have, f"token Secret {s} is generated by the overlay")
        check(tls, "the example overlay turns TLS on for clients")
        check("pkforge-orchestrator-tls" in secret_refs, "TLS certificate from a Secret")
        check(all(d["metadata"].get("namespace") == "pkforge" for d in docs if d["kind"] != "Namespace"),
              "every object in the overlay's namespace")

    pols = [d for d in docs if d["kind"] == "NetworkPolicy"
            and d["spec"]["podSelector"].get("matchLabels") == ds["spec"]["selector"]["matchLabels"]
            and "Ingress" in d["spec"]["policyTypes"]]
    check(len(pols) == 1, "one ingress NetworkPolicy selects the executors")
    orch_labels = sts["spec"]["template"]["metadata"]["labels"]
    for rule in pols[0]["spec"]["ingress"] if pols else []:
        ports = {p["port"] for p in rule.get("ports", [])}
        if grpc_port in ports:
            froms = rule.get("from", [])
            check(len(froms) == 1 and "podSelector" in froms[0] and "namespaceSelector" not in froms[0]
                  and all(orch_labels.get(k) == v for k, v in froms[0]["podSelector"]["matchLabels"].items()),
                  "only the orchestrator's pods may reach the executors' gRPC port")
        check(bool(rule.get("ports")) and bool(rule.get("from")), "no ingress rule open to all")


def run_with_manifest_args(build, docs):
    """Starts each daemon with its manifest's args; they must reach 'listening'."""
    tmp = tempfile.mkdtemp(prefix="pkf_k8s_")
    env_values = {"NODE_NAME": "node-1", "POD_NAMESPACE": "pkforge"}
    try:
        for kind, name, binary, ready in (
                ("DaemonSet", "pkforge-executor", "pkforge-executor", r"^pkforge-executor listening on "),
                ("StatefulSet", "pkforge-orchestrator", "pkforge-orchestrator", r"^LISTENING ")):
            c = find(docs, kind, name)["spec"]["template"]["spec"]["containers"][0]
            args = []
            for a in c["args"]:
                flag, eq, value = a.partition("=")
                value = re.sub(r"\$\((\w+)\)", lambda m: env_values[m.group(1)], value)
                if flag in ("--listen", "--metrics-listen"):
                    value = "127.0.0.1:0"
                elif value.startswith(("/var/lib/pkforge", "/etc/pkforge")):
                    value = tmp + value
                    os.makedirs(os.path.dirname(value), exist_ok=True)
                    if "token" in flag:
                        with open(value, "w") as f:
                            f.write("k8s-test-token-0123456789abcdef\n")
                        os.chmod(value, 0o600)
                args.append(f"{flag}{eq}{value}")
            os.makedirs(f"{tmp}/var/lib/pkforge", exist_ok=True)
            log = os.path.join(tmp, f"{name}.log")
            with open(log, "w") as out:
                p = subprocess.Popen([os.path.join(os.path.abspath(build), "bin", binary)] + args, stdout=out,
                                     stderr=subprocess.STDOUT, cwd=tmp)
            deadline = time.monotonic() + 120
            ok = False
            while time.monotonic() < deadline and not ok and p.poll() is None:
                with open(log) as f:
                    ok = any(re.match(ready, line) for line in f)
                time.sleep(0.1)
            p.terminate()
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
            with open(log) as f:
                text = f.read()
            check(ok, f"{binary} does not start with the {kind}'s args {args}: {text[-1500:]}")
            if ok:
                print(f"k8s_test: {binary} started with the {kind}'s args ({len(args)} flags)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    k8s = sys.argv[1]
    base_dir = os.path.join(k8s, "base")
    with open(os.path.join(base_dir, "kustomization.yaml")) as f:
        base_files = yaml.safe_load(f)["resources"]
    listed = set(base_files)
    on_disk = {f for f in os.listdir(base_dir) if f.endswith(".yaml") and f != "kustomization.yaml"}
    check(listed == on_disk, f"base kustomization lists every manifest ({sorted(on_disk - listed)} unlisted)")
    raw = [d for f in base_files for d in load_docs(os.path.join(base_dir, f))]
    validate(raw, "base")
    promises(render(base_dir), overlay=False)
    print(f"k8s_test: base: {len(raw)} objects valid against Kubernetes {', '.join(VERSIONS)} (strict)")
    if len(sys.argv) > 2:
        run_with_manifest_args(sys.argv[2], render(base_dir))

    for ov in sorted(os.listdir(os.path.join(k8s, "overlays"))):
        odir = os.path.join(k8s, "overlays", ov)
        docs = render(odir)
        validate(docs, f"overlay {ov}")
        promises(docs, overlay=True)
        print(f"k8s_test: overlay {ov}: {len(docs)} objects rendered and valid: "
              + ", ".join(sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs)))
        kubectl = shutil.which("kubectl")
        if kubectl:
            out = subprocess.run([kubectl, "kustomize", odir], capture_output=True, text=True)
            check(out.returncode == 0, f"kubectl kustomize {odir}: {out.stderr.strip()}")
            if out.returncode == 0:
                real = [d for d in yaml.safe_load_all(out.stdout) if d]
                validate(real, f"overlay {ov} (kubectl kustomize)")
                promises(real, overlay=True)
                strip = lambda n: re.sub(r"-[a-z0-9]{10}$", "", n)  # generator hash suffix
                key = lambda d: (d["kind"], strip(d["metadata"]["name"]))
                check(sorted(map(key, real)) == sorted(map(key, docs)),
                      "kubectl kustomize renders the same objects as the built-in renderer")
                for r in real:
                    mine = next((d for d in docs if key(d) == key(r)), None)
                    tpl = lambda d: d.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
                    if mine is not None:
                        check([c.get("args") for c in tpl(r)] == [c.get("args") for c in tpl(mine)] and
                              [c.get("image") for c in tpl(r)] == [c.get("image") for c in tpl(mine)],
                              f"{key(r)}: same images and args from both renderers")
                print(f"k8s_test: overlay {ov}: kubectl kustomize agrees ({len(real)} objects, valid)")
        else:
            print("k8s_test: kubectl not installed: rendered with the built-in renderer only")
    if failures:
        print(f"k8s_test: {len(failures)} failure(s)")
        sys.exit(1)
    print("k8s_test: PASS")


if __name__ == "__main__":
    main()
