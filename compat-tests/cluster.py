"""Three-node clusters for run.py's `--topology cluster`, and the fault the `leader-failover` scenario injects.

A cluster target is three combined (broker and controller) nodes on free loopback ports: Gregor through
`gregor serve --controller-quorum`, Apache Kafka through `kafka/kafka.sh start-cluster`. Both get the same
replication settings (CLUSTER_CONFIG): topics default to replication factor 3 and min.insync.replicas 2,
and so do the internal topics. A node can be killed (SIGKILL) and started again on the same ports and data.

The wire helpers below speak just enough of the Kafka protocol (Metadata v4, ListOffsets v1) for the runner
to find a partition's leader, in-sync replicas and end offset without a client library: Python 3.11
standard library only, like run.py.
"""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
KAFKA_SH = HERE / "kafka" / "kafka.sh"

NODES = 3
# The reference is Kafka 4.2.2, whose group coordinator computes a KIP-848 target assignment on the
# heartbeat that needs it; Gregor follows Kafka 4.4's defaults (an assignment interval of 1 s and an
# offloaded assignor), so in a differential run it is set to 4.2.2's behaviour.
GREGOR_AS_KAFKA_4_2 = {
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
}

# Broker configs both clusters run with (kafka.sh writes the same into each node's server.properties).
CLUSTER_CONFIG = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "num.partitions": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.retention.check.interval.ms": "3600000",
}

# leader-failover: the runner kills the partition's leader once this many records are acknowledged
# (the adapters produce FAILOVER_RECORDS in rounds, scenarios.md).
FAILOVER_KILL_AT = 400


# ----------------------------------------------------------------------------- wire

class WireError(Exception):
    pass


def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class _Reader:
    def __init__(self, b: bytes):
        self.b, self.i = b, 0

    def take(self, fmt: str):
        v = struct.unpack_from(fmt, self.b, self.i)
        self.i += struct.calcsize(fmt)
        return v[0]

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        s = self.b[self.i:self.i + n].decode()
        self.i += n
        return s

    def count(self) -> int:
        n = self.take(">i")
        if n < 0 or n > len(self.b):  # never trust a claimed length
            raise WireError(f"bad array length {n}")
        return n


def _request(addr: str, api_key: int, version: int, body: bytes, timeout: float = 5.0) -> _Reader:
    host, port = addr.rsplit(":", 1)
    header = struct.pack(">hhi", api_key, version, 1) + _str("compat-runner")
    frame = header + body
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", _recv(s, 4))[0]
        if size < 4 or size > 64 << 20:
            raise WireError(f"bad response size {size}")
        r = _Reader(_recv(s, size))
    r.take(">i")  # correlation id
    return r


def _recv(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise WireError("connection closed")
        out += chunk
    return out


@dataclass
class PartitionState:
    error: int
    leader: int
    replicas: list[int]
    isr: list[int]


@dataclass
class Metadata:
    brokers: dict[int, str]          # node id -> host:port
    controller: int
    topics: dict[str, dict[int, PartitionState]]
    topic_errors: dict[str, int]


def metadata(addr: str, topics: list[str] | None) -> Metadata:
    """Metadata v4 (topics None: all), never creating a topic (allow_auto_topic_creation false)."""
    body = struct.pack(">i", -1) if topics is None else struct.pack(">i", len(topics)) + b"".join(_str(t) for t in topics)
    r = _request(addr, 3, 4, body + struct.pack(">?", False))
    r.take(">i")  # throttle time
    brokers = {}
    for _ in range(r.count()):
        node = r.take(">i")
        host = r.string()
        port = r.take(">i")
        r.string()  # rack
        brokers[node] = f"{host}:{port}"
    r.string()  # cluster id
    controller = r.take(">i")
    out: dict[str, dict[int, PartitionState]] = {}
    errs: dict[str, int] = {}
    for _ in range(r.count()):
        terr = r.take(">h")
        name = r.string() or ""
        r.take(">?")
        parts = {}
        for _ in range(r.count()):
            perr = r.take(">h")
            pid = r.take(">i")
            leader = r.take(">i")
            replicas = [r.take(">i") for _ in range(r.count())]
            isr = [r.take(">i") for _ in range(r.count())]
            parts[pid] = PartitionState(perr, leader, replicas, isr)
        out[name] = parts
        errs[name] = terr
    return Metadata(brokers, controller, out, errs)


def end_offset(addr: str, topic: str, partition: int) -> int:
    """ListOffsets v1, latest, as a consumer asks it: the high watermark. -1 on a partition error."""
    body = struct.pack(">i", -1) + struct.pack(">i", 1) + _str(topic) + struct.pack(">iiq", 1, partition, -1)
    r = _request(addr, 2, 1, body)
    for _ in range(r.count()):
        r.string()
        for _ in range(r.count()):
            r.take(">i")
            err = r.take(">h")
            r.take(">q")
            off = r.take(">q")
            return off if err == 0 else -1
    return -1


def partition_state(addrs: list[str], topic: str, partition: int) -> PartitionState | None:
    """The partition as the first answering node describes it (None: no node answered or no such partition)."""
    for a in addrs:
        try:
            md = metadata(a, [topic])
        except (OSError, WireError, struct.error):
            continue
        p = md.topics.get(topic, {}).get(partition)
        if p is not None and p.error == 0:
            return p
    return None


def wait_until(fn, timeout: float, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


# ----------------------------------------------------------------------------- nodes

def free_port() -> int:
    """A free TCP port on 127.0.0.1 (for run.py's single node too)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClusterTarget:
    """Common part of the two cluster targets: nodes 1..3, each with a Kafka address."""
    name = "?"
    bootstrap = ""
    data_dir = ""
    addrs: dict[int, str]

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def kill_node(self, node: int) -> None: ...

    def start_node(self, node: int) -> None: ...

    def live_addrs(self, but: int | None = None) -> list[str]:
        return [a for n, a in sorted(self.addrs.items()) if n != but]

    def wait_formed(self, timeout: float = 90.0) -> None:
        """Until a node answers Metadata with all three brokers (the cluster is usable)."""
        def formed():
            for a in self.live_addrs():
                try:
                    if len(metadata(a, []).brokers) == NODES:
                        return True
                except (OSError, WireError, struct.error):
                    pass
            return False
        if not wait_until(formed, timeout, 0.3):
            raise RuntimeError(f"{self.name}: the cluster did not list {NODES} brokers within {timeout:.0f} s")


class GregorCluster(ClusterTarget):
    name = "gregor"

    def __init__(self, workdir: Path, binary: Path, extra_args: list[str], track, untrack, kill_group):
        self.dir = workdir / "gregor-cluster"
        self.binary = binary
        self.extra = extra_args
        self.track, self.untrack, self.kill_group = track, untrack, kill_group
        self.procs: dict[int, subprocess.Popen] = {}
        self.cmds: dict[int, list[str]] = {}
        self.addrs = {}

    def start(self) -> None:
        if not os.access(self.binary, os.X_OK):
            raise RuntimeError(f"{self.binary} not found or not executable (build it with `make build`)")
        self.dir.mkdir(parents=True, exist_ok=True)
        ports = {n: (free_port(), free_port()) for n in range(1, NODES + 1)}
        quorum = ",".join(f"{n}@127.0.0.1:{c}" for n, (_, c) in sorted(ports.items()))
        overrides = [a for k, v in {**CLUSTER_CONFIG, **GREGOR_AS_KAFKA_4_2}.items() for a in ("--override", f"{k}={v}")]
        for n, (p, c) in ports.items():
            data = self.dir / f"node-{n}"
            data.mkdir(exist_ok=True)
            self.addrs[n] = f"127.0.0.1:{p}"
            self.cmds[n] = [str(self.binary), "serve", "--node-id", str(n), "--listen", self.addrs[n],
                            "--controller-listen", f"127.0.0.1:{c}", "--controller-quorum", quorum,
                            "--data-dir", str(data), "--http-listen", "127.0.0.1:0", *overrides, *self.extra]
        ready = {n: self._launch(n) for n in self.addrs}
        for n, ev in ready.items():
            self._await(n, ev)
        self.wait_formed()
        self.bootstrap = ",".join(self.live_addrs())
        self.data_dir = str(self.dir / "node-1")

    def _launch(self, n: int) -> threading.Event:
        logf = open(self.dir / f"gregor-{n}.log", "a")
        logf.write("$ " + " ".join(self.cmds[n]) + "\n")
        logf.flush()
        p = subprocess.Popen(self.cmds[n], stdout=logf, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             start_new_session=True, text=True, errors="replace")
        self.track(p)
        self.procs[n] = p
        ready = threading.Event()

        def pump() -> None:
            assert p.stderr is not None
            for line in p.stderr:
                logf.write(line)
                logf.flush()
                if "gregor: ready" in line:
                    ready.set()
            logf.close()

        threading.Thread(target=pump, daemon=True, name=f"gregor-{n}-stderr").start()
        return ready

    def _await(self, n: int, ready: threading.Event, timeout: float = 60.0) -> None:
        deadline = time.time() + timeout
        p = self.procs[n]
        while not ready.wait(0.1):
            if p.poll() is not None:
                raise RuntimeError(f"gregor node {n} exited with {p.returncode} (log: {self.dir}/gregor-{n}.log)")
            if time.time() > deadline:
                raise RuntimeError(f"gregor node {n}: not ready within {timeout:.0f} s")

    def kill_node(self, node: int) -> None:
        p = self.procs.pop(node, None)
        if p is not None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=30)
            self.untrack(p)

    def start_node(self, node: int) -> None:
        self._await(node, self._launch(node))

    def stop(self) -> None:
        for n in list(self.procs):
            p = self.procs.pop(n)
            self.kill_group(p, grace=10.0)
            self.untrack(p)

    def logs(self) -> list[Path]:
        return sorted(self.dir.glob("gregor-*.log"))


class KafkaCluster(ClusterTarget):
    name = "kafka"

    def __init__(self, workdir: Path):
        self.dir = workdir / "kafka-cluster"
        self.addrs = {}

    def _sh(self, *args: str, timeout: float = 240) -> str:
        p = subprocess.run([str(KAFKA_SH), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           timeout=timeout, start_new_session=True)
        if p.returncode != 0:
            raise RuntimeError(f"kafka.sh {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
        return p.stdout

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        out = self._sh("start-cluster", str(self.dir))
        vals = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        self.bootstrap = vals["BOOTSTRAP"]
        self.data_dir = vals["DATA_DIR"]
        self.addrs = {i + 1: a for i, a in enumerate(self.bootstrap.split(","))}
        self.wait_formed()

    def kill_node(self, node: int) -> None:
        self._sh("kill-node", str(self.dir), str(node), timeout=30)

    def start_node(self, node: int) -> None:
        self._sh("start-node", str(self.dir), str(node))

    def stop(self) -> None:
        try:
            self._sh("stop-cluster", str(self.dir), timeout=120)
        except (RuntimeError, subprocess.TimeoutExpired):
            pass

    def logs(self) -> list[Path]:
        return sorted(self.dir.glob("node-*/server.log"))


# ----------------------------------------------------------------------------- leader-failover

class Failover:
    """Runs beside a leader-failover adapter: once FAILOVER_KILL_AT records of the topic's partition 0 are
    acknowledged, SIGKILLs the partition's leader, waits for another leader, and starts the killed node
    again. `observed()` is what it saw, compared like an adapter's observations; `error` says what went
    wrong (empty when the fault was injected as intended)."""

    def __init__(self, target: ClusterTarget, topic: str, adapter: subprocess.Popen):
        self.t, self.topic, self.adapter = target, topic, adapter
        self.error = ""
        self.notes: list[str] = []
        self.killed: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True, name="failover")

    def start(self) -> None:
        self.thread.start()

    def _leader(self, but: int | None = None) -> PartitionState | None:
        return partition_state(self.t.live_addrs(but), self.topic, 0)

    def _run(self) -> None:
        try:
            self._inject()
        except Exception as e:  # noqa: BLE001 - reported in the cell
            self.error = f"fault injection: {type(e).__name__}: {e}"

    def _inject(self) -> None:
        state: dict = {}

        def enough() -> bool:
            if self.adapter.poll() is not None:
                return True
            p = self._leader()
            if p is None or p.leader < 0 or p.leader not in self.t.addrs:
                return False
            try:
                state["end"] = end_offset(self.t.addrs[p.leader], self.topic, 0)
            except (OSError, WireError, struct.error):
                return False
            state["p"] = p
            return state["end"] >= FAILOVER_KILL_AT

        wait_until(enough, 90, 0.05)
        if self.adapter.poll() is not None or "p" not in state:
            self.error = "the adapter ended before the leader could be killed"
            return
        old = state["p"]
        self.killed = old.leader
        t0 = time.monotonic()
        self.t.kill_node(old.leader)
        self.notes.append(f"killed node {old.leader} (leader; ISR {old.isr}) at end offset {state['end']}")
        p = wait_until(lambda: (lambda q: q if q is not None and q.leader >= 0 and q.leader != old.leader else None)(
            self._leader(old.leader)), 90, 0.1)
        if p is None:
            self.error = f"no new leader within 90 s of killing node {old.leader}"
        else:
            self.notes.append(f"node {p.leader} leads after {time.monotonic() - t0:.1f} s (ISR {p.isr})")
        self.t.start_node(old.leader)
        self.notes.append(f"node {old.leader} restarted {time.monotonic() - t0:.1f} s after the kill")

    def finish(self, timeout: float = 90.0) -> dict:
        """After the adapter exited: waits for the injector, then for the restarted node to be back in the
        partition's ISR. Returns the runner's observations."""
        self.thread.join(timeout)
        obs: dict = {"leader_killed": self.killed is not None}
        if self.killed is None:
            return obs
        p = wait_until(lambda: (lambda q: q if q is not None and len(q.isr) == NODES else None)(self._leader()),
                       timeout, 0.2)
        obs["isr_after_restart"] = len(p.isr) if p else len((self._leader() or PartitionState(0, -1, [], [])).isr)
        return obs
