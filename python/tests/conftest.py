"""Real daemons for the tests: a pkforge-executor (host backend, no GPU) and a
pkforge-orchestrator requiring a bearer token, both on loopback ports they pick
themselves (as `pkforge local` starts them), and one small search job run
through them. Binaries: $PKFORGE_BIN_DIR, else build-ci/bin of this checkout."""
import os
import pathlib
import selectors
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def bin_dir() -> pathlib.Path:
    d = pathlib.Path(os.environ.get("PKFORGE_BIN_DIR") or REPO / "build-ci" / "bin")
    for exe in ("pkforge-executor", "pkforge-orchestrator", "pkforge-worker"):
        if not (d / exe).is_file():
            pytest.exit(f"{d / exe} is missing: build it first (or set PKFORGE_BIN_DIR)", 2)
    return d


class Daemon:
    """A child whose stdout is read until its 'listening' line, then drained to
    its log so a full pipe never blocks it."""

    def __init__(self, argv, marker: str, log: pathlib.Path, timeout_s: float):
        self.log = log
        self._log_file = open(log, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._log_file,
                                     text=True)
        self.address = self._await(marker, timeout_s)
        self._drain = threading.Thread(target=self._copy_rest, daemon=True)
        self._drain.start()

    def _await(self, marker: str, timeout_s: float) -> str:
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = self.proc.stdout.readline()
            if not line:
                break  # exited
            self._log_file.write(line)
            self._log_file.flush()
            if marker in line:
                return line.split(marker, 1)[1].strip()
        self.stop()
        raise RuntimeError(f"{self.proc.args[0]} did not print '{marker}' "
                           f"(log {self.log}):\n{self.log.read_text()[-3000:]}")

    def _copy_rest(self):
        for line in self.proc.stdout:
            self._log_file.write(line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def workdir():
    # Readable by uid 65534 too (a read-only test reads files as that user).
    d = pathlib.Path(tempfile.mkdtemp(prefix="pkforge-pytest."))
    d.chmod(0o755)
    yield d
    for p in d.rglob("*"):
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def daemons(workdir):
    bins = bin_dir()
    token = "pytest-token-" + os.urandom(8).hex()
    token_file = workdir / "token"
    token_file.write_text(token + "\n")
    (workdir / "logs").mkdir()
    executor = Daemon([str(bins / "pkforge-executor"), "--listen", "127.0.0.1:0", "--data-dir",
                       str(workdir / "executor"), "--gpus", "none"],
                      "pkforge-executor listening on ", workdir / "logs" / "executor.log", 180)
    try:
        orchestrator = Daemon([str(bins / "pkforge-orchestrator"), "--listen", "127.0.0.1:0",
                               "--db", str(workdir / "pkforge.db"), "--executor", executor.address,
                               "--token-file", str(token_file)],
                              "LISTENING ", workdir / "logs" / "orchestrator.log", 60)
    except Exception:
        executor.stop()
        raise
    info = {"target": orchestrator.address, "token": token, "token_file": str(token_file),
            "db": workdir / "pkforge.db", "orchestrator": orchestrator, "executor": executor}
    yield info
    orchestrator.stop()
    executor.stop()


@pytest.fixture(scope="session")
def client(daemons):
    import pkforge

    with pkforge.Client(daemons["target"], token_file=daemons["token_file"]) as c:
        yield c


@pytest.fixture(scope="session")
def finished_job(client):
    """One small search job (allreduce, 2 host ranks, tiny size, 4 evaluations),
    followed to its end; returns (job, events)."""
    import pkforge

    spec = pkforge.job_spec("allreduce", backend="host", world_size=2, size="tiny",
                            agent="search", budget_s=120, max_evaluations=4, label="pytest")
    job = client.submit(spec, client_request_id="pytest-" + os.urandom(4).hex())
    events = list(client.watch(job.id))
    return client.get_job(job.id), events


@pytest.fixture(scope="session")
def tls_orchestrator(daemons, workdir):
    """A second orchestrator serving TLS (certificate signed by a throw-away CA,
    made with the openssl command line as orchestrator/testing/tls_certs.h does),
    with the same token and executor."""
    certs = workdir / "certs"
    certs.mkdir()
    (certs / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    steps = [
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
        "-subj /CN=pkforge-test-ca",
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.pem "
        "-days 2 -subj /CN=pkforge-other-ca",
        "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost",
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-out server.pem -days 2 -extfile san.ext",
    ]
    for step in steps:
        r = subprocess.run(step.split(), cwd=certs, capture_output=True, text=True)
        assert r.returncode == 0, f"{step}: {r.stderr}"
    orch = Daemon([str(bin_dir() / "pkforge-orchestrator"), "--listen", "127.0.0.1:0",
                   "--db", str(workdir / "tls.db"), "--executor", daemons["executor"].address,
                   "--token-file", daemons["token_file"],
                   "--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key")],
                  "LISTENING ", workdir / "logs" / "orchestrator-tls.log", 60)
    yield {"target": orch.address, "ca": str(certs / "ca.pem"),
           "other_ca": str(certs / "other-ca.pem")}
    orch.stop()
