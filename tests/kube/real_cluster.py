"""A real Kubernetes v1.20.2 control plane on loopback: etcd, kube-apiserver and (on demand) kube-scheduler.

The binaries come from ``scripts/kube-real.sh build`` (built once per machine into the user's cache folder).
:class:`RealKube` makes a self-signed CA and certificates with openssl, starts etcd and kube-apiserver on free
127.0.0.1 ports (RBAC on; the ServiceAccount admission plugin off, as no controller-manager creates the
``default`` ServiceAccount), applies ``deploy/clusterrole.yaml`` with kubectl and binds it to the token user
``skippy`` (the daemon's user). Other users: ``admin`` (client certificate, system:masters), ``nobind``
(everything ``skippy`` may do except create ``pods/binding``) and ``system:kube-scheduler`` (kube-scheduler's
own bootstrap roles). Every process is started in its own session and stopped by its PID.

Nodes are plain Node objects (no kubelet): the TaintNodesByCondition admission plugin gives each new node the
``node.kubernetes.io/not-ready:NoSchedule`` taint, which only the node lifecycle controller would remove;
:func:`add_node` sets the node's own taints right after creating it, as that controller does for a Ready node.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from guard import GUARD_S

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "scripts" / "kube-real.sh"
SCHEDULER_USER = "skippy"
NOBIND_USER = "nobind"


class KubeNotBuilt(RuntimeError):
    """The binaries are not in the cache (``scripts/kube-real.sh build`` has not run on this machine)."""


def bin_dir() -> Path:
    """The cached binaries' folder; raises :class:`KubeNotBuilt` when the build has not completed."""
    done = subprocess.run([str(BUILD_SCRIPT), "bin"], capture_output=True, text=True)
    if done.returncode != 0:
        raise KubeNotBuilt("the real Kubernetes binaries are not built; run `scripts/kube-real.sh build` (make test does it first)")
    return Path(done.stdout.strip())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition: Callable[[], Any], what: str, timeout: float = GUARD_S, interval: float = 0.1) -> Any:
    """Poll ``condition`` until it returns something truthy (returned); AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def stop_process(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
    """Signal the process (by its PID), wait for it; SIGKILL if it outlives ``timeout``. Returns its exit code."""
    if proc.poll() is None:
        os.kill(proc.pid, sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _kubeconfig(server: str, ca: Path, user: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: real, cluster: {{server: '{server}', certificate-authority: '{ca}'}}}}]\n"
        f"users: [{{name: u, user: {user}}}]\n"
        "contexts: [{name: real, context: {cluster: real, user: u}}]\ncurrent-context: real\n"
    )


class PortTaken(RuntimeError):
    """etcd or kube-apiserver exited because another process took its port first."""


class RealKube:
    """etcd + kube-apiserver v1.20.2 in ``workdir`` (created), on free loopback ports; :meth:`start`, :meth:`stop`."""

    def __init__(self, workdir: Path, bins: Path | None = None, disable_admission: tuple[str, ...] = ("ServiceAccount",)):
        self.bins = bins or bin_dir()
        self.disable_admission = disable_admission
        self.dir = Path(workdir)
        self.pki = self.dir / "pki"
        self._pick_ports()
        self.etcd: subprocess.Popen | None = None
        self.apiserver: subprocess.Popen | None = None
        self.others: list[subprocess.Popen] = []
        self.kubeconfigs: dict[str, Path] = {}
        self.ready_seconds: float | None = None

    # ------------------------------------------------------------------ set-up
    def _make_pki(self) -> None:
        p = self.pki
        p.mkdir(parents=True, exist_ok=True)
        _openssl(
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "3",
            "-subj",
            "/CN=scalelab-test-ca",
            cwd=p,
        )
        (p / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        (p / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
        for name, subject, ext in (
            ("apiserver", "/CN=kube-apiserver", "server.ext"),
            ("admin", "/O=system:masters/CN=admin", "client.ext"),
        ):
            _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=p)
            _openssl(
                "x509",
                "-req",
                "-in",
                f"{name}.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                f"{name}.crt",
                "-days",
                "3",
                "-extfile",
                ext,
                cwd=p,
            )
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=p)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=p)
        self._tokens = {user: secrets.token_hex(16) for user in (SCHEDULER_USER, NOBIND_USER, "system:kube-scheduler")}
        (p / "tokens.csv").write_text("".join(f"{t},{u},{u}\n" for u, t in self._tokens.items()))

    def _pick_ports(self) -> None:
        self.etcd_port, self.etcd_peer_port, self.api_port = free_port(), free_port(), free_port()
        self.url = f"https://127.0.0.1:{self.api_port}"

    def _write_kubeconfigs(self) -> None:
        p, ca = self.pki, self.pki / "ca.crt"
        self.kubeconfigs["admin"] = self.dir / "admin.kubeconfig"
        self.kubeconfigs["admin"].write_text(
            _kubeconfig(self.url, ca, f"{{client-certificate: '{p / 'admin.crt'}', client-key: '{p / 'admin.key'}'}}")
        )
        for user, token in self._tokens.items():
            path = self.dir / f"{user.replace(':', '-')}.kubeconfig"
            path.write_text(_kubeconfig(self.url, ca, f"{{token: {token}}}"))
            self.kubeconfigs[user] = path

    def _spawn(self, args: list[str], log: str) -> subprocess.Popen:
        with open(self.dir / log, "ab") as out:
            return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def start(self, attempts: int = 5) -> RealKube:
        """PKI, etcd, kube-apiserver, RBAC. A free port is only free until someone else takes it (it is found, closed,
        then handed over): when etcd or the apiserver finds its port taken, both are stopped and started again on
        fresh ports, up to ``attempts`` times."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self._make_pki()
        for attempt in range(attempts):
            self._write_kubeconfigs()
            try:
                self._start_etcd()
                self.start_apiserver()
                break
            except PortTaken:
                self.stop()
                if attempt == attempts - 1:
                    raise
                for log in ("etcd.log", "apiserver.log"):  # kept for a post-mortem, out of the next attempt's way
                    if (self.dir / log).exists():
                        (self.dir / log).rename(self.dir / f"{log}.attempt{attempt}")
                shutil.rmtree(self.dir / "etcd-data", ignore_errors=True)  # it records the old peer URL
                self._pick_ports()
        self._apply_rbac()
        return self

    def _start_etcd(self) -> None:
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        self.etcd = self._spawn(
            [
                str(self.bins / "etcd"), "--name", "real", "--data-dir", str(self.dir / "etcd-data"), "--logger", "zap", "--log-level", "warn",
                "--listen-client-urls", f"http://127.0.0.1:{self.etcd_port}", "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_port}",
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", f"real={peer}",
                "--listen-metrics-urls", f"http://127.0.0.1:{free_port()}", "--quota-backend-bytes", str(4 * 2**30),
            ],
            "etcd.log",
        )  # fmt: skip

    def _apply_rbac(self) -> None:
        self.kubectl("apply", "-f", str(ROOT / "deploy" / "clusterrole.yaml"))
        self.kubectl("create", "clusterrolebinding", "skippy-scheduler-test", "--clusterrole=skippy-scheduler", f"--user={SCHEDULER_USER}")
        # the same rights without pods/binding: a scheduler that may watch but not bind
        self.kubectl("create", "clusterrole", "skippy-nobind", "--verb=list,watch,get", "--resource=nodes,pods")
        self.kubectl("create", "clusterrolebinding", "skippy-nobind", "--clusterrole=skippy-nobind", f"--user={NOBIND_USER}")
        self.kubectl("create", "clusterrole", "skippy-nobind-events", "--verb=create,patch", "--resource=events")
        self.kubectl("create", "clusterrolebinding", "skippy-nobind-events", "--clusterrole=skippy-nobind-events", f"--user={NOBIND_USER}")

    def start_apiserver(self) -> None:
        p = self.pki
        t0 = time.monotonic()
        self.apiserver = self._spawn(
            [
                str(self.bins / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--bind-address=127.0.0.1", f"--secure-port={self.api_port}", "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none", f"--tls-cert-file={p / 'apiserver.crt'}", f"--tls-private-key-file={p / 'apiserver.key'}",
                f"--client-ca-file={p / 'ca.crt'}", f"--token-auth-file={p / 'tokens.csv'}",
                f"--service-account-key-file={p / 'sa.pub'}", f"--service-account-signing-key-file={p / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc", "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=RBAC", f"--disable-admission-plugins={','.join(self.disable_admission)}", "--profiling=false", "--v=1",
            ],
            "apiserver.log",
        )  # fmt: skip
        wait_for(self._ready, "kube-apiserver /readyz", timeout=180, interval=0.2)
        self.ready_seconds = time.monotonic() - t0

    def _ready(self) -> bool:
        for name, proc in (("etcd", self.etcd), ("kube-apiserver", self.apiserver)):
            if proc is not None and proc.poll() is not None:
                tail = (self.dir / f"{name.removeprefix('kube-')}.log").read_text(errors="replace").splitlines()[-15:]
                kind = PortTaken if any("address already in use" in line for line in tail) else RuntimeError
                raise kind(f"{name} exited:\n" + "\n".join(tail))
        done = subprocess.run(
            [
                "curl",
                "-s",
                "--max-time",
                "5",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--cacert",
                str(self.pki / "ca.crt"),
                f"{self.url}/readyz",
            ],
            capture_output=True,
            text=True,
        )
        return done.stdout == "200"

    def stop_apiserver(self) -> None:
        """SIGTERM; kube-apiserver holds open watches for a long while when asked nicely, so SIGKILL after 10 s."""
        if self.apiserver is not None:
            stop_process(self.apiserver, timeout=10)
            self.apiserver = None

    def stop(self) -> None:
        """Stop everything started here, newest first, each by its PID."""
        for proc in reversed(self.others):
            stop_process(proc)
        self.stop_apiserver()
        if self.etcd is not None:
            stop_process(self.etcd)
            self.etcd = None

    # ------------------------------------------------------------------ tools
    def kubectl(self, *args: str, user: str = "admin", check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(self.bins / "kubectl"), "--kubeconfig", str(self.kubeconfigs[user]), *args], capture_output=True, text=True
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done

    def api_client(self, user: str = "admin", pool: int = 4):
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(config_file=str(self.kubeconfigs[user]), client_configuration=configuration)
        configuration.proxy = None
        configuration.connection_pool_maxsize = pool
        return client.ApiClient(configuration)

    def start_kube_scheduler(
        self, name: str, qps: float = 50.0, burst: int = 100, verbosity: int = 2, log: str | None = None
    ) -> subprocess.Popen:
        """kube-scheduler v1.20.2 for pods naming ``name`` (leader election off, its own free health port)."""
        config = self.dir / f"kube-scheduler-{name}.yaml"
        port = free_port()
        config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1beta1\nkind: KubeSchedulerConfiguration\n"
            "leaderElection: {leaderElect: false}\n"
            f"clientConnection: {{kubeconfig: '{self.kubeconfigs['system:kube-scheduler']}', qps: {qps}, burst: {burst}}}\n"
            f"healthzBindAddress: 127.0.0.1:{port}\nmetricsBindAddress: 127.0.0.1:{port}\n"
            f"profiles: [{{schedulerName: {name}}}]\n"
        )
        proc = self._spawn(
            [str(self.bins / "kube-scheduler"), f"--config={config}", "--secure-port=0", f"--v={verbosity}"],
            log or f"kube-scheduler-{name}.log",
        )
        self.others.append(proc)
        return proc


def add_node(core, body: dict) -> None:
    """Create the Node, then give it its own taints in place of the not-ready taint admission added."""
    core.create_node(body)
    taints = (body.get("spec") or {}).get("taints") or []
    core.patch_node(body["metadata"]["name"], [{"op": "add", "path": "/spec/taints", "value": taints}])
