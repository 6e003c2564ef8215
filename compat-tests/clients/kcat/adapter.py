"""kcat (librdkafka's command-line client, Debian package) adapter for the Gregor compat tests.

kcat has no admin API, and its producer can set neither per-record timestamps nor per-record
headers. So, against scenarios.md:
  * admin-topics, configs, delete-records: not applicable (no CreateTopics/DeleteTopics,
    DescribeConfigs/AlterConfigs, DeleteRecords);
  * consumer-group: not applicable (it needs a 6-partition topic, which kcat cannot create);
  * topics are created by the broker's auto-creation, triggered by a metadata request for the
    topic (`kcat -L -t T`): the one place where an adapter relies on auto-creation;
  * records carry the scenario's keys and values, but every record has the same two headers
    (h1=a-kcat, h2=b-kcat, set with -H) and the producer's clock as CreateTime. So `sha256` is
    null, `sha256_kvh` is the digest of those records (checked against the same recipe, not the
    value in scenarios.md), and every timestamp is checked to be a CreateTime taken while the
    producer ran;
  * offsets-by-timestamp produces the 100 records with 100 kcat runs (distinct CreateTimes) and
    queries the timestamp read back for record 51 (and 1 ms past record 99's for past_end);
    max_timestamp is null (librdkafka 2.0.2's offsets_for_times cannot send ListOffsets v7);
  * transactions: kcat commits a transaction at the end of its input and aborts it on a
    termination signal; last_stable_offset is null (kcat -Q lists offsets with a producer
    handle, which has no isolation level).
Reading "to the end" is kcat -C -e (it exits at the partition's end offset). Only the standard
library is used.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_common"))

from compat_common import (  # noqa: E402
    CodeError, NotApplicable, Record, ScenarioFailed, WAIT, digests, gen_records, index_of, librdkafka_security, main,
    poll_until)

KCAT = os.environ.get("KCAT") or shutil.which("kcat") or "kcat"
# the run's TLS and SASL as librdkafka properties, on every kcat command line
SECURITY_ARGS = [a for k, v in librdkafka_security().items() for a in ("-X", f"{k}={v}")]
KCAT_HEADERS = [("h1", b"a-kcat"), ("h2", b"b-kcat")]
NA = {
    "admin-topics": "kcat has no admin API (no CreateTopics/DeleteTopics)",
    "configs": "kcat has no DescribeConfigs/AlterConfigs",
    "delete-records": "kcat has no DeleteRecords",
    "consumer-group": ("kcat cannot create the 6-partition topic the scenario needs (no admin API; "
                       "auto-creation uses the broker's default partition count)"),
}


def kcat_version():
    try:
        out = subprocess.run([KCAT, "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10).stdout
        for line in out.decode(errors="replace").splitlines():
            if line.startswith("Version"):
                return "kcat " + line.split(" (")[0].replace("Version ", "") + \
                    (" (librdkafka %s)" % line.split("librdkafka ")[1].split()[0] if "librdkafka " in line else "")
    except Exception:  # noqa: BLE001
        pass
    return "kcat (unknown version)"


class Kcat:
    def __init__(self, bootstrap, data_dir):
        self.bootstrap = bootstrap
        if not shutil.which(KCAT):
            raise ScenarioFailed("kcat not found: run compat-tests/clients/kcat/setup")

    def not_applicable(self, scenario):
        return NA.get(scenario)

    def close(self):
        pass

    def run(self, args, input=None, timeout=WAIT, check=True):
        cmd = [KCAT, "-b", self.bootstrap, "-m", "10"] + SECURITY_ARGS + args
        p = subprocess.run(cmd, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        if check and p.returncode != 0:
            shown = " ".join("sasl.password=***" if a.startswith("sasl.password=") else a for a in cmd)
            raise ScenarioFailed("%s exited %d: %s" % (shown, p.returncode,
                                                        p.stderr.decode(errors="replace").strip()[-500:]))
        return p

    def partitions(self, topic):
        p = self.run(["-L", "-J", "-t", topic], check=False)
        try:
            md = json.loads(p.stdout.decode())
        except ValueError:
            raise ScenarioFailed("kcat -L: %s" % p.stderr.decode(errors="replace")) from None
        for t in md.get("topics", []):
            if t.get("topic") == topic:
                if t.get("error"):
                    raise CodeError(3, t["error"]) if "Unknown topic" in t["error"] else \
                        ScenarioFailed("metadata error: %s" % t["error"])
                return len(t.get("partitions", []))
        raise ScenarioFailed("topic %s missing from metadata" % topic)

    def create_topic(self, topic):
        """Broker auto-creation: metadata requests for the topic until it has a partition."""
        st = {}

        def ready():
            try:
                st["n"] = self.partitions(topic)
                return st["n"] == 1
            except (CodeError, ScenarioFailed) as e:
                st["err"] = e
                return False

        if not poll_until(ready, WAIT, 0.2):
            raise ScenarioFailed("topic %s was not auto-created (%s partitions, last error %r)"
                                 % (topic, st.get("n"), st.get("err")))

    @staticmethod
    def producer_args(topic, codec="none", extra=()):
        args = ["-P", "-t", topic, "-p", "0", "-K", r"\t", "-D", r"\n", "-X", "acks=all"]
        for k, v in KCAT_HEADERS:
            args += ["-H", "%s=%s" % (k, v.decode())]
        if codec != "none":
            args += ["-z", codec]
        return args + list(extra)

    @staticmethod
    def payload(recs):
        return b"".join(r.key + b"\t" + r.value + b"\n" for r in recs)

    def read(self, topic, read_committed=False, count=None):
        """kcat -C -e: from the earliest offset up to the partition's end offset."""
        args = ["-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-J",
                "-X", "isolation.level=" + ("read_committed" if read_committed else "read_uncommitted")]
        if count:
            args += ["-c", str(count)]
        out = []
        for line in self.run(args).stdout.decode().splitlines():
            if not line.strip():
                continue
            m = json.loads(line)
            h = m.get("headers") or []
            headers = [(h[i], None if h[i + 1] is None else h[i + 1].encode("latin-1")) for i in range(0, len(h), 2)]
            out.append(Record(
                key=None if m.get("key") is None else m["key"].encode("latin-1"),
                value=None if m.get("payload") is None else m["payload"].encode("latin-1"),
                headers=headers, timestamp=m.get("ts"), partition=m.get("partition"), offset=m.get("offset"),
                timestamp_type={"create": "CreateTime", "logappend": "LogAppendTime"}.get(m.get("tstype"),
                                                                                       m.get("tstype"))))
        return out

    def list_offset(self, topic, ts):
        p = self.run(["-Q", "-t", "%s:0:%d" % (topic, ts)])
        return int(p.stdout.decode().split()[-1])  # "<topic> [<partition>] offset <n>"


# ---------------------------------------------------------------- scenarios

def produce_consume(k, topic, o, codec, idempotent=False):
    k.create_topic(topic)
    recs = gen_records(0, 1000)
    extra = []
    if idempotent:
        extra = ["-X", "enable.idempotence=true", "-X", "max.in.flight.requests.per.connection=5",
                 "-X", "batch.size=4096"]
    t0 = int(time.time() * 1000)
    k.run(k.producer_args(topic, codec, extra), input=k.payload(recs))
    t1 = int(time.time() * 1000)
    got = k.read(topic)
    for i, r in enumerate(recs):  # the kcat recipe: same keys/values, constant headers
        r.offset = i
        r.headers = list(KCAT_HEADERS)
    bad, first_bad = 0, None
    for n, r in enumerate(got):
        why = None
        if n >= len(recs) or (r.offset, r.key, r.value, r.headers) != (recs[n].offset, recs[n].key, recs[n].value,
                                                                         recs[n].headers):
            why = "record at position %d: %r" % (n, r)
        elif r.timestamp_type != "CreateTime" or not (t0 - 1000 <= (r.timestamp or 0) <= t1 + 1000):
            why = "timestamp %s (%s) at offset %d not a CreateTime taken while kcat ran" % (
                r.timestamp, r.timestamp_type, n)
        if why:
            bad += 1
            first_bad = first_bad or why
    o.put("count", len(got))
    o.put("first_offset", got[0].offset if got else None)
    o.put("last_offset", got[-1].offset if got else None)
    o.put("sha256", None)
    o.put("sha256_kvh", digests(got)[1])
    o.expect("count", 1000, len(got))
    o.expect("sha256_kvh (kcat recipe)", digests(recs)[1], o.observed["sha256_kvh"])
    o.check(bad == 0, "%d records differ from what was produced (first: %s)" % (bad, first_bad))
    o.expect("first_offset", 0, o.observed["first_offset"])
    o.expect("last_offset", 999, o.observed["last_offset"])
    if not idempotent:
        tts = {r.timestamp_type for r in got}
        o.put("timestamp_type", tts.pop() if len(tts) == 1 else sorted(tts))
        o.expect("timestamp_type", "CreateTime", o.observed["timestamp_type"])
        end = k.list_offset(topic, -1)
        o.put("end_offset", end)
        o.expect("end_offset", 1000, end)


def offsets_by_timestamp(k, topic, o):
    k.create_topic(topic)
    for r in gen_records(0, 100, 10):  # one kcat run per record: distinct wall-clock CreateTimes
        k.run(k.producer_args(topic), input=k.payload([r]))
    ts = [r.timestamp for r in k.read(topic)]
    if len(ts) != 100 or any(b <= a for a, b in zip(ts, ts[1:])):
        raise ScenarioFailed("expected 100 strictly increasing CreateTimes, got %d: %s" % (len(ts), ts[:5]))
    for name, q, want in (("earliest", -2, 0), ("latest", -1, 100), ("by_timestamp", ts[51], 51),
                          ("past_end", ts[99] + 1, -1)):
        off = k.list_offset(topic, q)
        o.put(name, off)
        o.expect(name, want, off)
    o.put("max_timestamp", None)


def transactions(k, topic, o):
    k.create_topic(topic)
    args = k.producer_args(topic, extra=["-X", "transactional.id=" + topic + "-tx"])
    # Transaction 1 (records 0..99) is committed when kcat reaches the end of its input.
    k.run(args, input=k.payload(gen_records(0, 100)))
    # Transaction 2 (records 100..199) is aborted the only way kcat aborts: a termination signal.
    # kcat reads its input in 128-byte steps and returns one message per step, so the records are
    # followed by empty messages (bare delimiters, which kcat skips) to push them all out; once they
    # are in the log (visible to read_uncommitted), SIGINT plus end of input make kcat leave its
    # read loop and call abort_transaction().
    aborted = gen_records(100, 100)
    p = subprocess.Popen([KCAT, "-b", k.bootstrap, "-m", "10"] + SECURITY_ARGS + args, stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        p.stdin.write(k.payload(aborted) + b"\n" * (128 * (len(aborted) + 20)))
        p.stdin.flush()
        if not poll_until(lambda: len(k.read(topic)) >= 200, 15, 0.2):
            raise ScenarioFailed("the aborted transaction's records never reached the log")
        p.send_signal(signal.SIGINT)
        p.stdin.close()
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            raise ScenarioFailed("kcat did not exit after SIGINT (abort)") from None
        err = p.stderr.read().decode(errors="replace")
        if "Aborting transaction" not in err:
            raise ScenarioFailed("kcat did not abort its transaction: %s" % err.strip()[-300:])
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    rc = k.read(topic, read_committed=True)
    ru = k.read(topic)
    ok = sum(1 for r in rc if 0 <= index_of(r.key) < 100)
    end = k.list_offset(topic, -1)
    o.put("committed_seen", len(rc))
    o.put("aborted_seen", len(rc) - ok)
    o.put("read_uncommitted_seen", len(ru))
    o.put("end_offset", end)
    o.put("last_stable_offset", None)
    o.expect("committed_seen", 100, len(rc))
    o.expect("committed records are records 0..99", 100, ok)
    o.expect("aborted_seen", 0, len(rc) - ok)
    o.expect("read_uncommitted_seen", 200, len(ru))
    o.expect("end_offset", 202, end)


SCENARIOS = {
    "offsets-by-timestamp": offsets_by_timestamp,
    "idempotent-producer": lambda k, t, o: produce_consume(k, t, o, "none", True),
    "transactions": transactions,
}
for _c in ("none", "gzip", "snappy", "lz4", "zstd"):
    SCENARIOS["produce-consume-" + _c] = (lambda codec: lambda k, t, o: produce_consume(k, t, o, codec))(_c)
for _s in NA:
    SCENARIOS[_s] = lambda k, t, o: None  # answered by not_applicable()

if __name__ == "__main__":
    import compat_common
    compat_common.scenarios = lambda: {}  # kcat implements its own variants (see the docstring)
    main(Kcat, "kcat", kcat_version(), scenario_overrides=SCENARIOS)
