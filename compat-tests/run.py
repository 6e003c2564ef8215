#!/usr/bin/env python3
"""Compatibility matrix runner: real Kafka clients against Apache Kafka and against Gregor.

    run.py [--targets kafka,gregor] [--clients java,kafka-cli,...] [--scenarios a,b,...]
           [--out docs/compatibility.md] [--jobs N] [--gregor-bin PATH] [--gregor-arg ARG ...]
           [--topology single|cluster]

For each target it starts a fresh single-node broker (Apache Kafka through compat-tests/kafka/kafka.sh;
Gregor as `bin/gregor serve --listen 127.0.0.1:PORT --data-dir DIR`), runs every client adapter on every
scenario (the contract is in compat-tests/README.md, the scenarios in compat-tests/scenarios.md), stops the
broker, and then compares Gregor's observations with Kafka's for every client x scenario that passed on both
("may differ" keys of scenarios.md are masked). compat-tests/expected.json lists the expected failures.
Exits 1 on any unexpected failure or unexpected pass, 2 on a usage error. Python 3.11 standard library only.

With --topology cluster each target is a three-node cluster instead (cluster.py: replication factor 3,
min.insync.replicas 2), the scenarios are those whose `Topology:` line in scenarios.md names `cluster`, and the
report replaces only the cluster section of --out.
"""
from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import cluster

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
KAFKA_SH = HERE / "kafka" / "kafka.sh"
SCENARIOS_MD = HERE / "scenarios.md"
EXPECTED_JSON = HERE / "expected.json"

SCENARIO_TIMEOUT = 60.0        # seconds per adapter run (the contract)
# Scenarios allowed longer (scenarios.md says so): a failover waits out the reference's broker session timeout.
SCENARIO_TIMEOUTS = {"leader-failover": 150.0}
# On a cluster the kafka-cli group scenarios start five tool JVMs beside three broker JVMs (Kafka's reference)
# on two cores: they get twice the time there.
CLUSTER_SCENARIO_TIMEOUTS = {"consumer-group": 120.0, "consumer-group-848": 120.0}
# In a --security mode the kafka-cli group scenario's five tool JVMs each do a TLS handshake (and a SCRAM
# login): on the project's shared two-core machine that took Kafka's reference past 60 s, so it gets twice
# the time there too.
SECURITY_SCENARIO_TIMEOUTS = {"consumer-group": 120.0}
GREGOR_READY_TIMEOUT = 30.0
GREGOR_READY_LINE = "gregor: ready"

# Adapters that do not live at compat-tests/clients/<client>/run.
ADAPTERS = {
    "java": HERE / "java" / "run-java",
    "kafka-cli": HERE / "java" / "run-cli",
}
# Row order of the table; clients found under compat-tests/clients/ but not named here follow, sorted.
CLIENT_ORDER = ["java", "kafka-cli", "kcat", "confluent-kafka-python", "kafka-python", "kafkajs",
                "franz-go", "sarama", "kafka-go", "confluent-kafka-go"]
TARGET_ORDER = ["kafka", "gregor"]

# cell statuses
PASS, FAIL, NA, MISSING, TIMEOUT, DIFF, NOSTART = "pass", "FAIL", "n/a", "missing", "timeout", "DIFF", "no-start"
FAILING = {FAIL, MISSING, TIMEOUT, DIFF, NOSTART}


def log(msg: str) -> None:
    print(msg, flush=True)


# ----------------------------------------------------------------------------- scenarios.md

@dataclass
class Scenario:
    name: str
    may_differ: list[str] = field(default_factory=list)
    topologies: list[str] = field(default_factory=lambda: ["single"])
    # the --security modes besides plaintext it runs in (its `Security:` line)
    security: list[str] = field(default_factory=list)


def load_scenarios(path: Path = SCENARIOS_MD) -> list[Scenario]:
    """Scenario names are the `### \\`name\\`` headings of scenarios.md, in order; each may have a line
    `May differ: \\`key\\`, \\`key\\`` (or `May differ: none`) and a line `Topology: \\`single\\`, \\`cluster\\``
    (the topologies it runs in; `single` when absent) and a line `Security: \`sasl_ssl_scram\`, \`mtls\``
    (the --security modes it also runs in; every scenario runs in plaintext)."""
    out: list[Scenario] = []
    for line in path.read_text().splitlines():
        m = re.match(r"^###\s+`([a-z0-9][a-z0-9-]*)`", line)
        if m:
            out.append(Scenario(m.group(1)))
            continue
        m = re.match(r"^\s*(?:[-*]\s*)?\**May differ\**:\s*(.*)$", line, re.I)
        if m and out:
            out[-1].may_differ = re.findall(r"`([^`]+)`", m.group(1))
            continue
        m = re.match(r"^\s*(?:[-*]\s*)?\**Topology\**:\s*(.*)$", line, re.I)
        if m and out:
            out[-1].topologies = re.findall(r"`([^`]+)`", m.group(1))
            continue
        m = re.match(r"^\s*(?:[-*]\s*)?\**Security\**:\s*(.*)$", line, re.I)
        if m and out:
            out[-1].security = re.findall(r"`([^`]+)`", m.group(1))
            bad = [x for x in out[-1].security if x not in SECURITY_MODES or x == "plaintext"]
            if bad:
                raise SystemExit(f"run.py: {path}: scenario {out[-1].name}: unknown security mode(s) {bad}")
    if not out:
        raise SystemExit(f"run.py: no scenarios found in {path}")
    return out


# ----------------------------------------------------------------------------- expected.json

def load_expected(path: Path = EXPECTED_JSON) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {t: v for t, v in data.items() if not t.startswith("_") and isinstance(v, dict)}


def expectation(expected: dict[str, dict[str, str]], target: str, client: str, scenario: str) -> str | None:
    """The reason a cell is expected to fail, or None. Keys are `client/scenario`; shell patterns
    (`*/transactions`, `kcat/*`) are allowed, an exact key wins over a pattern."""
    table = expected.get(target, {})
    cell = f"{client}/{scenario}"
    if cell in table:
        return table[cell]
    for pat, why in table.items():
        if not pat.startswith("_") and fnmatch.fnmatchcase(cell, pat):
            return why
    return None


# ----------------------------------------------------------------------------- processes

_live: set[subprocess.Popen] = set()
_stopping = threading.Event()  # set on interruption: start no new adapter
_live_lock = threading.Lock()


def _track(p: subprocess.Popen) -> None:
    with _live_lock:
        _live.add(p)


def _untrack(p: subprocess.Popen) -> None:
    with _live_lock:
        _live.discard(p)


def kill_group(p: subprocess.Popen, grace: float = 3.0) -> None:
    """TERM then KILL a process started with start_new_session=True, and everything in its group."""
    pgid = p.pid  # started with start_new_session=True: it leads its own process group
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if pgid is not None:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            p.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # stragglers of a group whose leader already exited
    if pgid is not None:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_all_live() -> None:
    with _live_lock:
        procs = list(_live)
    for p in procs:
        kill_group(p, grace=1.0)
        _untrack(p)


# ----------------------------------------------------------------------------- security modes

SECURITY_MODES = ["plaintext", "sasl_ssl_scram", "mtls"]
SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_USER = "compat"
SCRAM_PASSWORD = "compat-scram-secret"
SECURITY_TITLES = {
    "sasl_ssl_scram": "SASL_SSL with SCRAM-SHA-512",
    "mtls": "SSL with client certificates (mTLS)",
}
# COMPAT_* variables of the adapter contract that describe the connection's security (README.md).
SECURITY_ENV = ["COMPAT_SECURITY_PROTOCOL", "COMPAT_SASL_MECHANISM", "COMPAT_SASL_USERNAME", "COMPAT_SASL_PASSWORD",
                "COMPAT_SSL_CA", "COMPAT_SSL_CERT", "COMPAT_SSL_KEY", "COMPAT_CLIENT_CONFIG"]


class Security:
    """The key material and settings of a --security mode, made once per run in DIR and shared by both
    targets: a CA, a certificate for 127.0.0.1 that both brokers serve (a PEM key store), and in mtls a
    client certificate. The brokers get the same server.properties keys (broker_props), the adapters the
    COMPAT_* variables (env) and a Kafka client.properties with the same settings."""

    def __init__(self, mode: str, workdir: Path):
        self.mode = mode
        self.dir = workdir / "security"
        self.protocol = {"plaintext": "PLAINTEXT", "sasl_ssl_scram": "SASL_SSL", "mtls": "SSL"}[mode]
        self.broker_props: list[str] = []
        self.add_scram = ""  # Kafka's --add-scram argument (format step / gregor serve)
        self.adapter_env: dict[str, str] = {"COMPAT_SECURITY_PROTOCOL": self.protocol}

    def setup(self) -> None:
        if self.mode == "plaintext":
            return
        if shutil.which("openssl") is None:
            raise SystemExit("run.py: --security needs the openssl command (apt-get install openssl)")
        d = self.dir
        d.mkdir(parents=True, exist_ok=True)
        ca_key, ca = d / "ca.key", d / "ca.pem"
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=gregor-compat-ca",
                      "-addext", "basicConstraints=critical,CA:TRUE",
                      "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        broker_key, broker_cert = self._leaf("broker", "/CN=127.0.0.1",
                                             "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                             "extendedKeyUsage=serverAuth,clientAuth\n", ca, ca_key)
        keystore = d / "broker-keystore.pem"  # PKCS#8 key, then the chain leaf first: Kafka's PEM key store
        keystore.write_text(broker_key.read_text() + broker_cert.read_text() + ca.read_text())
        self.broker_props = ["ssl.keystore.type=PEM", f"ssl.keystore.location={keystore}",
                             "ssl.truststore.type=PEM", f"ssl.truststore.location={ca}"]
        client = ["security.protocol=" + self.protocol, "ssl.truststore.type=PEM", f"ssl.truststore.location={ca}"]
        self.adapter_env["COMPAT_SSL_CA"] = str(ca)
        if self.mode == "sasl_ssl_scram":
            jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{SCRAM_USER}" '
                    f'password="{SCRAM_PASSWORD}";')
            self.broker_props += [f"sasl.enabled.mechanisms={SCRAM_MECHANISM}",
                                  f"sasl.mechanism.inter.broker.protocol={SCRAM_MECHANISM}",
                                  f"listener.name.sasl_ssl.{SCRAM_MECHANISM.lower()}.sasl.jaas.config={jaas}"]
            self.add_scram = f"{SCRAM_MECHANISM}=[name={SCRAM_USER},password={SCRAM_PASSWORD}]"
            client += [f"sasl.mechanism={SCRAM_MECHANISM}", f"sasl.jaas.config={jaas}"]
            self.adapter_env.update(COMPAT_SASL_MECHANISM=SCRAM_MECHANISM, COMPAT_SASL_USERNAME=SCRAM_USER,
                                    COMPAT_SASL_PASSWORD=SCRAM_PASSWORD)
        else:  # mtls
            self.broker_props.append("ssl.client.auth=required")
            client_key, client_cert = self._leaf("client", "/CN=compat-client/O=gregor-compat",
                                                 "extendedKeyUsage=clientAuth\n", ca, ca_key)
            client_keystore = d / "client-keystore.pem"
            client_keystore.write_text(client_key.read_text() + client_cert.read_text())
            client += ["ssl.keystore.type=PEM", f"ssl.keystore.location={client_keystore}"]
            self.adapter_env.update(COMPAT_SSL_CERT=str(client_cert), COMPAT_SSL_KEY=str(client_key))
        props = d / "client.properties"
        props.write_text("\n".join(client) + "\n")
        self.adapter_env["COMPAT_CLIENT_CONFIG"] = str(props)

    def _leaf(self, name: str, subject: str, ext: str, ca: Path, ca_key: Path) -> tuple[Path, Path]:
        key, csr, cert, extf = (self.dir / f"{name}.key", self.dir / f"{name}.csr", self.dir / f"{name}.pem",
                                self.dir / f"{name}.ext")
        extf.write_text(ext)
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                      "-out", csr, "-subj", subject)
        self._openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
                      "-out", cert, "-extfile", extf)
        return key, cert

    @staticmethod
    def _openssl(*args) -> None:
        p = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           timeout=60)
        if p.returncode != 0:
            raise SystemExit(f"run.py: openssl {args[0]} failed: {p.stderr.strip()[-1000:]}")

    def write_broker_props(self, path: Path, listener: str | None = None) -> Path:
        """The shared server.properties keys (and, for Gregor, its listener) in path."""
        lines = []
        if listener:
            lines += [f"listeners={self.protocol}://{listener}", f"advertised.listeners={self.protocol}://{listener}"]
        path.write_text("\n".join(lines + self.broker_props) + "\n")
        return path

    def env(self) -> dict[str, str]:
        """os.environ without inherited COMPAT_ security variables, plus this mode's."""
        e = {k: v for k, v in os.environ.items() if k not in SECURITY_ENV}
        e.update(self.adapter_env)
        return e


PLAINTEXT = Security("plaintext", Path("."))


# ----------------------------------------------------------------------------- targets

class Target:
    name = "?"
    bootstrap = ""
    data_dir = ""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class KafkaTarget(Target):
    name = "kafka"

    def __init__(self, workdir: Path, security: Security = PLAINTEXT):
        self.dir = workdir / "kafka"
        self.security = security

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        if self.security.mode != "plaintext":
            # kafka.sh's client listener (also the inter-broker one) gets the mode's protocol and keys, and
            # the format step creates the SCRAM user, as `kafka-storage format --add-scram` does.
            env["KAFKA_LISTENER_PROTOCOL"] = self.security.protocol
            env["KAFKA_EXTRA_PROPERTIES"] = str(self.security.write_broker_props(self.dir.parent / "kafka-security.properties"))
            if self.security.add_scram:
                env["KAFKA_FORMAT_ARGS"] = f"--add-scram {self.security.add_scram}"
        p = subprocess.Popen([str(KAFKA_SH), "start", str(self.dir)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, start_new_session=True,
                             env=env)
        _track(p)
        try:
            # kafka.sh waits KAFKA_START_TIMEOUT (default 120 s) for the broker; formatting comes before it
            limit = int(os.environ.get("KAFKA_START_TIMEOUT", "120")) + 60
            out, err = p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            kill_group(p)
            raise RuntimeError(f"kafka.sh start did not finish within {limit} s")
        finally:
            _untrack(p)
        if p.returncode != 0:
            raise RuntimeError(f"kafka.sh start failed ({p.returncode}): {err.strip()[-2000:]}")
        vals = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        self.bootstrap = vals["BOOTSTRAP"]
        self.data_dir = vals["DATA_DIR"]

    def stop(self) -> None:
        subprocess.run([str(KAFKA_SH), "stop", str(self.dir)], stdin=subprocess.DEVNULL, timeout=60,
                       check=False)


class GregorTarget(Target):
    name = "gregor"

    def __init__(self, workdir: Path, binary: Path, extra_args: list[str], security: Security = PLAINTEXT):
        self.dir = workdir / "gregor"
        self.binary = binary
        self.extra = extra_args
        self.security = security
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        if not os.access(self.binary, os.X_OK):
            raise RuntimeError(f"{self.binary} not found or not executable (build it with `make build`)")
        self.dir.mkdir(parents=True, exist_ok=True)
        data = self.dir / "data"
        data.mkdir(exist_ok=True)
        port = cluster.free_port()
        logf = open(self.dir / "gregor.log", "w")
        # The HTTP listener (metrics, health) on a free port: parallel runs never compete for 9644.
        as_reference = [a for k, v in cluster.GREGOR_AS_KAFKA_4_2.items() for a in ("--override", f"{k}={v}")]
        listen = ["--listen", f"127.0.0.1:{port}"]
        if self.security.mode != "plaintext":
            # the same server.properties keys as Kafka's (kafka.sh's KAFKA_EXTRA_PROPERTIES), the listener
            # named by its protocol, and the SCRAM user created before the listener opens
            props = self.security.write_broker_props(self.dir / "server.properties", f"127.0.0.1:{port}")
            listen = ["--config", str(props)]
            if self.security.add_scram:
                listen += ["--add-scram", self.security.add_scram]
        cmd = [str(self.binary), "serve", *listen, "--data-dir", str(data),
               "--http-listen", "127.0.0.1:0", *as_reference, *self.extra]
        logf.write("$ " + " ".join(cmd) + "\n")
        logf.flush()
        self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     start_new_session=True, text=True, errors="replace")
        _track(self.proc)
        ready = threading.Event()

        def pump() -> None:  # keep draining stderr into the log for the broker's whole life
            assert self.proc is not None and self.proc.stderr is not None
            for line in self.proc.stderr:
                logf.write(line)
                logf.flush()
                if GREGOR_READY_LINE in line:
                    ready.set()
            logf.close()

        threading.Thread(target=pump, daemon=True, name="gregor-stderr").start()
        deadline = time.time() + GREGOR_READY_TIMEOUT
        while not ready.wait(0.1):
            if self.proc.poll() is not None:
                raise RuntimeError(f"gregor exited with {self.proc.returncode} before '{GREGOR_READY_LINE}' "
                                   f"(log: {self.dir / 'gregor.log'})")
            if time.time() > deadline:
                raise RuntimeError(f"no '{GREGOR_READY_LINE}' within {GREGOR_READY_TIMEOUT:.0f} s "
                                   f"(log: {self.dir / 'gregor.log'})")
        self.bootstrap = f"127.0.0.1:{port}"
        self.data_dir = str(data)

    def stop(self) -> None:
        if self.proc is not None:
            kill_group(self.proc, grace=10.0)
            _untrack(self.proc)
            self.proc = None


# ----------------------------------------------------------------------------- adapters

def adapter_path(client: str) -> Path:
    return ADAPTERS.get(client, HERE / "clients" / client / "run")


def discover_clients() -> list[str]:
    """The planned clients (CLIENT_ORDER: a missing adapter shows as such) and every directory under
    compat-tests/clients/ that has a `run` (directories without one are support code)."""
    found = set(ADAPTERS) | set(CLIENT_ORDER)
    cdir = HERE / "clients"
    if cdir.is_dir():
        found |= {d.name for d in cdir.iterdir()
                  if d.is_dir() and not d.name.startswith((".", "_")) and (d / "run").exists()}
    return order_clients(found)


def order_clients(names) -> list[str]:
    known = [c for c in CLIENT_ORDER if c in names]
    return known + sorted(n for n in names if n not in CLIENT_ORDER)


@dataclass
class Cell:
    target: str
    client: str
    scenario: str
    status: str = FAIL
    observed: dict | None = None
    error: str = ""
    seconds: float = 0.0
    diff: list[str] = field(default_factory=list)
    expected_reason: str | None = None
    log: str = ""
    # first_failure is set when the cell failed, was run once more, and
    # passed: the report shows it as "pass (retried)" with this text.
    first_failure: str = ""


def topic_name(client: str, scenario: str) -> str:
    t = f"compat-{client}-{scenario}-{uuid.uuid4().hex[:8]}"
    return re.sub(r"[^a-zA-Z0-9._-]", "-", t)[:200]


def run_adapter(target: Target, client: str, scenario: str, logdir: Path, attempt: int = 1,
                security: Security = PLAINTEXT) -> Cell:
    cell = Cell(target.name, client, scenario)
    path = adapter_path(client)
    suffix = "" if attempt == 1 else f".attempt{attempt}"
    logfile = logdir / f"{client}__{scenario}{suffix}.log"
    cell.log = str(logfile)
    if not (path.is_file() and os.access(path, os.X_OK)):
        cell.status, cell.error = MISSING, f"no executable {path.relative_to(REPO)}"
        return cell
    if _stopping.is_set():
        cell.error = "not run: interrupted"
        return cell
    topic = topic_name(client, scenario)
    cmd = [str(path), scenario, "--bootstrap", target.bootstrap, "--topic", topic, "--data-dir", target.data_dir]
    is_cluster = isinstance(target, cluster.ClusterTarget)
    timeout = SCENARIO_TIMEOUTS.get(scenario, SCENARIO_TIMEOUT)
    if is_cluster:
        timeout = CLUSTER_SCENARIO_TIMEOUTS.get(scenario, timeout)
    if security.mode != "plaintext":
        timeout = SECURITY_SCENARIO_TIMEOUTS.get(scenario, timeout)
    # The adapter contract's environment: the topology, the replication factor topics are created with,
    # and the run's time limit (the adapters' own backstops fire a little before it).
    env = dict(security.env(), COMPAT_TOPOLOGY="cluster" if is_cluster else "single",
               COMPAT_REPLICATION_FACTOR=str(cluster.NODES if is_cluster else 1), COMPAT_TIMEOUT=str(int(timeout)))
    t0 = time.monotonic()
    failover = None
    with open(logfile, "w") as lf:
        lf.write("$ " + " ".join(cmd) + "\n--- stderr\n")
        lf.flush()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=lf, stdin=subprocess.DEVNULL, text=True,
                             errors="replace", start_new_session=True, cwd=str(path.parent), env=env)
        _track(p)
        if scenario == "leader-failover" and is_cluster:
            failover = cluster.Failover(target, topic, p)
            failover.start()
        timed_out = False
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(p)
            try:
                out, _ = p.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # a descendant outside the group holds stdout open
                out = ""
        finally:
            kill_group(p, grace=0.5)  # leave nothing of it behind (background tools, consumers)
            _untrack(p)
        runner_obs = failover.finish() if failover is not None else {}
        cell.seconds = time.monotonic() - t0
        lf.write("--- stdout\n" + out)
        if failover is not None:
            lf.write("--- runner\n" + "\n".join(failover.notes) + f"\nobserved: {json.dumps(runner_obs)}\n"
                     + (f"error: {failover.error}\n" if failover.error else ""))
    if timed_out:
        cell.status, cell.error = TIMEOUT, f"no result within {timeout:.0f} s"
        return cell
    lines = [ln for ln in out.splitlines() if ln.strip()]
    result = None
    if lines:
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            result = None
    if not isinstance(result, dict) or "ok" not in result:
        cell.status, cell.error = FAIL, f"no JSON result on the last stdout line (exit {p.returncode})"
        return cell
    cell.observed = result.get("observed") if isinstance(result.get("observed"), dict) else {}
    cell.error = str(result.get("error") or "")
    if p.returncode == 3:
        cell.status = NA
    elif p.returncode == 0 and result.get("ok") is True:
        cell.status = PASS
    else:
        cell.status = FAIL
        if p.returncode == 0 or result.get("ok") is True:
            cell.error = f"inconsistent result: exit {p.returncode} with ok={result.get('ok')}; " + cell.error
        elif not cell.error:
            cell.error = f"exit {p.returncode}"
    if failover is not None and cell.status != NA:
        # The runner's own observations of the fault: compared between targets like the adapter's.
        cell.observed.update({"runner_" + k: v for k, v in runner_obs.items()})
        problems = [failover.error] if failover.error else []
        if not runner_obs.get("leader_killed"):
            problems.append("the partition's leader was not killed while the client produced")
        elif runner_obs.get("isr_after_restart") != cluster.NODES:
            problems.append(f"the restarted node did not rejoin the ISR (ISR size {runner_obs.get('isr_after_restart')})")
        if problems:
            cell.status = FAIL
            cell.error = "; ".join(([cell.error] if cell.error else []) + problems)
    return cell


# ----------------------------------------------------------------------------- the run

def run_target(target: Target, clients: list[str], scenarios: list[Scenario], logroot: Path,
               jobs: int, expected: dict[str, dict[str, str]],
               security: Security = PLAINTEXT) -> dict[tuple[str, str], Cell]:
    cells: dict[tuple[str, str], Cell] = {}
    logdir = logroot / target.name
    logdir.mkdir(parents=True, exist_ok=True)
    log(f"== {target.name}: starting")
    t0 = time.monotonic()
    try:
        target.start()
    except Exception as e:  # noqa: BLE001 - a target that does not start fails all its cells
        log(f"== {target.name}: did not start: {e}")
        target.stop()
        for c in clients:
            for s in scenarios:
                cells[(c, s.name)] = Cell(target.name, c, s.name, NOSTART, error=f"target did not start: {e}")
        return cells
    log(f"== {target.name}: ready at {target.bootstrap} in {time.monotonic() - t0:.1f} s (data {target.data_dir})")
    try:
        work = [(c, s.name) for c in clients for s in scenarios]

        def one(item):
            c, s = item
            cell = run_adapter(target, c, s, logdir, security=security)
            if cell.status in FAILING and cell.status != MISSING and expectation(expected, target.name, c, s) is None:
                # One more run tells a flaky cell from a broken one; the report names every
                # cell that needed it, so flakiness stays visible instead of failing CI at random.
                first = f"{cell.status}: {cell.error}"
                log(f"   {target.name:6} {c:24} {s:24} {cell.status:8} {cell.seconds:5.1f}s  (running once more) {cell.error[:120]}")
                cell = run_adapter(target, c, s, logdir, attempt=2, security=security)
                if cell.status == PASS:
                    cell.first_failure = first
            extra = f"  {cell.error[:160]}" if cell.status != PASS else ""
            log(f"   {target.name:6} {c:24} {s:24} {cell.status:8} {cell.seconds:5.1f}s{extra}")
            return item, cell

        if jobs <= 1:
            for item in work:
                k, v = one(item)
                cells[k] = v
        else:
            with ThreadPoolExecutor(jobs) as ex:
                try:
                    for k, v in ex.map(one, work):
                        cells[k] = v
                except BaseException:
                    _stopping.set()
                    ex.shutdown(wait=False, cancel_futures=True)
                    kill_all_live()
                    raise
    finally:
        t1 = time.monotonic()
        target.stop()
        log(f"== {target.name}: stopped ({time.monotonic() - t1:.1f} s); scenarios took {t1 - t0:.0f} s")
        broker_log = getattr(target, "dir", None)
        if broker_log is not None and (Path(broker_log) / "gregor.log").exists():
            shutil.copy(Path(broker_log) / "gregor.log", logdir / "gregor.log")  # kept with the adapter logs
        if security.mode != "plaintext" and broker_log is not None and (Path(broker_log) / "server.log").exists():
            shutil.copy(Path(broker_log) / "server.log", logdir / "kafka-server.log")
        if isinstance(target, cluster.ClusterTarget):
            for i, f in enumerate(target.logs(), 1):  # each node's log, kept with the adapter logs
                shutil.copy(f, logdir / f"{target.name}-node-{i}.log")
    return cells


def masked(observed: dict, may_differ: list[str]) -> dict:
    return {k: v for k, v in observed.items() if k not in may_differ}


def differential(results: dict[str, dict], scenarios: list[Scenario]) -> None:
    """Marks Gregor cells DIFF where both targets passed and the unmasked observations differ."""
    if "kafka" not in results or "gregor" not in results:
        return
    md = {s.name: s.may_differ for s in scenarios}
    for key, g in results["gregor"].items():
        k = results["kafka"].get(key)
        if k is None or g.status != PASS or k.status != PASS:
            continue
        a, b = masked(k.observed or {}, md.get(key[1], [])), masked(g.observed or {}, md.get(key[1], []))
        if a != b:
            g.status = DIFF
            for name in sorted(set(a) | set(b)):
                if a.get(name, "<absent>") != b.get(name, "<absent>"):
                    g.diff.append(f"{name}: kafka={json.dumps(a.get(name, '<absent>'))} "
                                  f"gregor={json.dumps(b.get(name, '<absent>'))}")
            g.error = "observations differ from Kafka's: " + "; ".join(g.diff)


def judge(results: dict[str, dict], expected) -> tuple[list[str], list[str]]:
    unexpected_fail, unexpected_pass = [], []
    for target, cells in results.items():
        for (client, scenario), cell in cells.items():
            cell.expected_reason = expectation(expected, target, client, scenario)
            name = f"{target} {client}/{scenario}"
            if cell.status in FAILING and cell.expected_reason is None:
                unexpected_fail.append(f"{name}: {cell.status}: {cell.error}")
            elif cell.status == PASS and cell.expected_reason is not None:
                unexpected_pass.append(f"{name}: passed, but expected.json says: {cell.expected_reason}")
    return unexpected_fail, unexpected_pass


def cell_text(cell: Cell | None) -> str:
    if cell is None:
        return ""
    if cell.status in FAILING and cell.expected_reason:
        return f"xfail({cell.expected_reason})".replace("|", "/")
    if cell.status == PASS and cell.expected_reason:
        return "pass (unexpected)"
    if cell.status == PASS and cell.first_failure:
        return "pass (retried)"
    if cell.status == MISSING:
        return "adapter missing"
    if cell.status == NOSTART:
        return "FAIL (no start)"
    if cell.status == TIMEOUT:
        return "FAIL (timeout)"
    if cell.status == DIFF:
        return "FAIL (differs from Kafka)"
    return cell.status


CLUSTER_BEGIN = "<!-- cluster section: generated by `make compat-cluster` (run.py --topology cluster) -->"
CLUSTER_END = "<!-- end of cluster section -->"


def security_markers(mode: str) -> tuple[str, str]:
    return (f"<!-- security section {mode}: generated by `make compat-security` (run.py --security {mode}) -->",
            f"<!-- end of security section {mode} -->")


def section(text: str, begin: str, end: str) -> str:
    """The section of a report between two markers (included), or ''."""
    i, j = text.find(begin), text.find(end)
    return text[i:j + len(end)] if 0 <= i < j else ""


def cluster_section(text: str) -> str:
    """The cluster section of a report (markers included), or ''."""
    return section(text, CLUSTER_BEGIN, CLUSTER_END)


def kept_sections(text: str) -> list[str]:
    """The sections of a report that their own runs generate (cluster, then each security mode), in order."""
    out = [cluster_section(text)] + [section(text, *security_markers(m)) for m in SECURITY_MODES if m != "plaintext"]
    return [x for x in out if x]


def replace_section(path: Path, begin: str, end: str, body: list[str]) -> None:
    """Replaces one generated section of path (appending it when there is none), leaving the rest as it is."""
    text = path.read_text() if path.exists() else ""
    new = "\n".join([begin, *body, end])
    old = section(text, begin, end)
    text = text.replace(old, new) if old else text.rstrip("\n") + "\n\n" + new + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def matrix_lines(results: dict[str, dict], clients: list[str], names: list[str], titles: dict[str, str],
                 level: str, applicable_only: bool = False) -> list[str]:
    """The report's body: a table per target (with applicable_only, only the rows of clients applicable to at
    least one scenario), then the failures and the cells that passed only when run a second time, under
    headings of the given level."""
    out = []
    for target in TARGET_ORDER:
        if target not in results:
            continue
        cells = results[target]
        shown = clients
        if applicable_only:
            shown = [c for c in clients
                     if any(cells.get((c, s)) is not None and cells[(c, s)].status != NA for s in names)] or clients
        out += ["", f"{level} {titles[target]}", "",
                "| client | " + " | ".join(names) + " |",
                "|---|" + "---|" * len(names)]
        for c in shown:
            out.append(f"| {c} | " + " | ".join(cell_text(cells.get((c, s))) for s in names) + " |")
    problems = []
    for target in TARGET_ORDER:
        for (c, s), cell in sorted(results.get(target, {}).items()):
            if cell.status in FAILING:
                err = re.sub(r"\s+", " ", cell.error).strip()[:400]
                tag = f" (expected: {cell.expected_reason})" if cell.expected_reason else ""
                problems.append(f"- {target} `{c}/{s}`: {cell_text(cell)}{tag}: {err}")
    if problems:
        out += ["", f"{level} Failures", ""] + problems
    retried = []
    for target in TARGET_ORDER:
        for (c, s), cell in sorted(results.get(target, {}).items()):
            if cell.first_failure:
                first = re.sub(r"\s+", " ", cell.first_failure).strip()[:400]
                retried.append(f"- {target} `{c}/{s}`: first run: {first}")
    if retried:
        out += ["", f"{level} Passed only when run a second time", ""] + retried
    return out


def write_cluster_report(path: Path, results: dict[str, dict], clients: list[str], scenarios: list[Scenario],
                         kafka_version: str, seconds: float) -> None:
    """Replaces the cluster section of path (appending it when there is none), leaving the rest as it is."""
    today = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    names = [s.name for s in scenarios]
    titles = {"gregor": "Gregor, three nodes", "kafka": f"Apache Kafka {kafka_version}, three nodes (reference)"}
    out = ["## Three-node clusters", "",
           f"Generated by `make compat-cluster` on {today} in {seconds / 60:.0f} minutes; never edited by hand. Each "
           "target is a three-node cluster of combined broker and controller nodes (`compat-tests/cluster.py`, "
           "`compat-tests/kafka/kafka.sh start-cluster`): topics and the internal topics have replication factor 3 and "
           "min.insync.replicas 2. Only the scenarios whose `Topology:` names `cluster` run; rows list the "
           "clients that are applicable to at least one of them. Expected failures: the `gregor-cluster` and "
           "`kafka-cluster` entries of `compat-tests/expected.json`."]
    out += matrix_lines(results, clients, names, titles, "###", applicable_only=True)
    replace_section(path, CLUSTER_BEGIN, CLUSTER_END, out)


def write_security_report(path: Path, results: dict[str, dict], clients: list[str], scenarios: list[Scenario],
                          kafka_version: str, security: Security, seconds: float) -> None:
    """Replaces the section of path for this security mode (appending it when there is none)."""
    today = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    names = [s.name for s in scenarios]
    title = SECURITY_TITLES[security.mode]
    titles = {"gregor": f"Gregor, {title}", "kafka": f"Apache Kafka {kafka_version}, {title} (reference)"}
    how = {
        "sasl_ssl_scram": "one `SASL_SSL` listener with `sasl.enabled.mechanisms=SCRAM-SHA-512`, the user created "
                          "before the broker starts (Kafka: `kafka-storage format --add-scram`; Gregor: `gregor serve "
                          "--add-scram`); clients log in as that user over TLS",
        "mtls": "one `SSL` listener with `ssl.client.auth=required`; every client presents a certificate the run's "
                "CA signed",
    }[security.mode]
    out = [f"## Security: {title}", "",
           f"Generated by `make compat-security` (`run.py --security {security.mode}`) on {today} in "
           f"{seconds / 60:.0f} minutes; never edited by hand. Both targets run a single node with the same "
           f"server.properties keys: {how}. The run makes a CA and a certificate for 127.0.0.1 (PEM key and "
           "trust stores, `ssl.keystore.type=PEM`). Only the scenarios whose `Security:` line in "
           f"`compat-tests/scenarios.md` names `{security.mode}` run; rows list the clients that are applicable "
           "to at least one of them (a client that cannot connect this way answers n/a, never plaintext). "
           f"Expected failures: the `gregor-{security.mode}` and `kafka-{security.mode}` entries of "
           "`compat-tests/expected.json`."]
    out += matrix_lines(results, clients, names, titles, "###", applicable_only=True)
    replace_section(path, *security_markers(security.mode), out)


def write_report(path: Path, results: dict[str, dict], clients: list[str], scenarios: list[Scenario],
                 kafka_version: str) -> None:
    today = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    names = [s.name for s in scenarios]
    kept = kept_sections(path.read_text()) if path.exists() else []
    out = [
        "<!-- Generated by `make compat` (compat-tests/run.py). Never edit by hand: the next run overwrites it. -->",
        "# Client compatibility",
        "",
        f"Generated by `make compat` on {today}; never edited by hand. Reference: Apache Kafka {kafka_version} "
        "(single-node KRaft). Scenarios: `compat-tests/scenarios.md`; expected failures: "
        "`compat-tests/expected.json`.",
        "",
        "Cells: **pass**: the client's checks passed (on Gregor, its observations also matched Apache Kafka's); "
        "**FAIL**: failed; **xfail(why)**: a known, listed failure; **n/a**: the client cannot express the "
        "scenario; **adapter missing**: no adapter for that client yet.",
    ]
    titles = {"gregor": "Gregor", "kafka": f"Apache Kafka {kafka_version} (reference)"}
    out += matrix_lines(results, clients, names, titles, "##")
    for sec in kept:  # the cluster and security matrices are generated by their own runs
        out += ["", sec]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n")


def kafka_version() -> str:
    try:
        return subprocess.run([str(KAFKA_SH), "version"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "?"
    except Exception:  # noqa: BLE001
        return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", default="kafka,gregor", help="comma-separated: kafka, gregor")
    ap.add_argument("--clients", help="comma-separated client names (default: java, kafka-cli and every "
                                      "compat-tests/clients/<name>/)")
    ap.add_argument("--scenarios", help="comma-separated scenario names (default: all of scenarios.md)")
    ap.add_argument("--out", help="write the markdown table here (e.g. docs/compatibility.md)")
    ap.add_argument("--jobs", type=int, default=1, help="adapter runs in parallel per target (default 1)")
    ap.add_argument("--gregor-bin", default=str(REPO / "bin" / "gregor"))
    ap.add_argument("--gregor-arg", action="append", default=[],
                    help="extra argument for `gregor serve` (repeatable)")
    ap.add_argument("--workdir", help="where brokers keep their data (default: a new temp dir, removed after)")
    ap.add_argument("--logdir", help="adapter logs (default: $GREGOR_CACHE/compat-logs/run-<time>-<pid>)")
    ap.add_argument("--keep", action="store_true", help="keep the brokers' data dirs")
    ap.add_argument("--expected", default=str(EXPECTED_JSON), help="expected failures (default: %(default)s)")
    ap.add_argument("--topology", choices=["single", "cluster"], default="single",
                    help="single: one node per target; cluster: three-node clusters (cluster.py)")
    ap.add_argument("--security", choices=SECURITY_MODES, default="plaintext",
                    help="plaintext (default); sasl_ssl_scram: a SASL_SSL listener with SCRAM-SHA-512; mtls: an SSL "
                         "listener with ssl.client.auth=required. Only the scenarios whose `Security:` line names the "
                         "mode run; the report replaces only that mode's section of --out")
    a = ap.parse_args(argv)
    if a.security != "plaintext" and a.topology != "single":
        ap.error("--security runs on a single node only (cluster.py starts plaintext clusters; a secured inter-broker listener is tested by the broker's TestClusterInterBrokerSecurity)")

    targets = [t.strip() for t in a.targets.split(",") if t.strip()]
    for t in targets:
        if t not in TARGET_ORDER:
            ap.error(f"unknown target {t!r} (kafka, gregor)")
    targets = [t for t in TARGET_ORDER if t in targets]
    scenarios = [s for s in load_scenarios() if a.topology in s.topologies
                 and (a.security == "plaintext" or a.security in s.security)]
    if a.scenarios:
        wanted = [s.strip() for s in a.scenarios.split(",") if s.strip()]
        known = {s.name: s for s in scenarios}
        bad = [s for s in wanted if s not in known]
        if bad:
            ap.error(f"unknown scenario(s) {', '.join(bad)} for topology {a.topology} and security {a.security}; "
                     f"scenarios.md has: "
                     f"{', '.join(known)}")
        scenarios = [known[s] for s in wanted]
    clients = ([c.strip() for c in a.clients.split(",") if c.strip()] if a.clients else discover_clients())
    expected = load_expected(Path(a.expected))
    if a.topology == "cluster":  # a cluster's expected failures are its own
        expected = {t: expected.get(t + "-cluster", {}) for t in TARGET_ORDER}
    elif a.security != "plaintext":  # so are a security mode's
        expected = {t: expected.get(f"{t}-{a.security}", {}) for t in TARGET_ORDER}

    cache = Path(os.environ.get("GREGOR_CACHE", REPO / ".cache"))
    if a.logdir:
        logroot = Path(a.logdir)
    else:
        # one folder per run (runs may overlap); keep the 5 newest
        base = cache / "compat-logs"
        base.mkdir(parents=True, exist_ok=True)
        for old in sorted(base.glob("run-*"))[:-4]:
            shutil.rmtree(old, ignore_errors=True)
        logroot = base / f"run-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    logroot.mkdir(parents=True, exist_ok=True)
    workdir = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="gregor-compat-"))
    workdir.mkdir(parents=True, exist_ok=True)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGINT, on_signal)  # also when started with SIGINT ignored (a background job)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    started = time.monotonic()
    results: dict[str, dict] = {}
    live_targets: list[Target] = []
    security = Security(a.security, workdir)
    try:
        security.setup()
    except BaseException:
        if not a.keep and not a.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    log(f"compat: topology={a.topology} security={a.security} targets={','.join(targets)} clients={','.join(clients)} "
        f"scenarios={len(scenarios)} logs={logroot}")
    try:
        for t in targets:
            if a.topology == "cluster":
                target = (cluster.KafkaCluster(workdir) if t == "kafka"
                          else cluster.GregorCluster(workdir, Path(a.gregor_bin), a.gregor_arg, _track, _untrack,
                                                     kill_group))
            else:
                target = (KafkaTarget(workdir, security) if t == "kafka"
                          else GregorTarget(workdir, Path(a.gregor_bin), a.gregor_arg, security))
            live_targets.append(target)
            results[t] = run_target(target, clients, scenarios, logroot, a.jobs, expected, security)
    except KeyboardInterrupt as e:
        _stopping.set()
        log(f"compat: interrupted ({e or 'Ctrl-C'}); stopping everything")
        return 130
    finally:
        kill_all_live()
        for target in live_targets:
            try:
                target.stop()
            except Exception as e:  # noqa: BLE001
                log(f"compat: stopping {target.name} failed: {e}")
        if not a.keep and not a.workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    differential(results, scenarios)
    unexpected_fail, unexpected_pass = judge(results, expected)
    if a.out:
        out = Path(a.out)
        if a.topology == "cluster":
            write_cluster_report(out, results, clients, scenarios, kafka_version(), time.monotonic() - started)
        elif a.security != "plaintext":
            write_security_report(out, results, clients, scenarios, kafka_version(), security,
                                  time.monotonic() - started)
        else:
            write_report(out, results, clients, scenarios, kafka_version())
        log(f"compat: wrote {out}")
    counts: dict[str, int] = {}
    for cells in results.values():
        for cell in cells.values():
            key = "xfail" if cell.status in FAILING and cell.expected_reason else cell.status
            counts[key] = counts.get(key, 0) + 1
    log("compat: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        + f" in {time.monotonic() - started:.0f} s")
    # The closing line CI reads: passed cells, unexpected failures, and the rest (n/a and listed
    # expected failures) as skipped.
    passed = sum(1 for cells in results.values() for cell in cells.values() if cell.status == PASS)
    skipped = sum(1 for cells in results.values() for cell in cells.values()) - passed - len(unexpected_fail)
    for line in unexpected_fail:
        log("UNEXPECTED FAILURE " + line)
    for line in unexpected_pass:
        log("UNEXPECTED PASS " + line)
    if unexpected_fail or unexpected_pass:
        log(f"compat: {len(unexpected_fail)} unexpected failures, {len(unexpected_pass)} unexpected passes "
            f"(adapter logs in {logroot})")
        log(f"compat: {passed} passed, {len(unexpected_fail) + len(unexpected_pass)} failed, {skipped} skipped")
        return 1
    log("compat: OK")
    log(f"compat: {passed} passed, {len(unexpected_fail)} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
