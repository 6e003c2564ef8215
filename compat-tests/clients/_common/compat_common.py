"""Shared scenario logic for the Python-driven compat adapters (compat-tests/scenarios.md).

An adapter module defines a class implementing the primitives documented in
``Adapter`` below and calls ``main(AdapterClass, client_name)``.  The scenarios
are written once here (mirroring compat-tests/clients/go/scenarios.go), so every
Python-driven client reports the same observations.

Result contract: the last stdout line is {"ok": bool, "observed": {...},
"error": "text", "info": {...}}; exit 0 pass, 1 fail, 2 usage, 3 not applicable
(also for a scenario this module does not know).
"""

import argparse
import faulthandler
import hashlib
import json
import os
import sys
import threading
import time
import traceback

BASE_TS = 1700000000000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
WAIT = 30.0  # seconds to wait for any one thing
# From run.py (README, "The adapter contract"): the topology, the replication factor every topic is
# created with, and the run's time limit.
TOPOLOGY = os.environ.get("COMPAT_TOPOLOGY", "single")
REPLICATION_FACTOR = int(os.environ.get("COMPAT_REPLICATION_FACTOR", "1"))
RUN_TIMEOUT = float(os.environ.get("COMPAT_TIMEOUT", "60"))
# The connection's security (README, "The adapter contract"): COMPAT_SECURITY_PROTOCOL and, as it needs,
# COMPAT_SASL_MECHANISM/USERNAME/PASSWORD, COMPAT_SSL_CA and (mTLS) COMPAT_SSL_CERT/KEY. Each adapter turns
# them into its client's settings (librdkafka_security, kafka_python_security); a client that cannot connect
# that way answers not applicable, never plaintext.
SECURITY_PROTOCOL = os.environ.get("COMPAT_SECURITY_PROTOCOL", "PLAINTEXT") or "PLAINTEXT"
SASL_MECHANISM = os.environ.get("COMPAT_SASL_MECHANISM", "")
SASL_USERNAME = os.environ.get("COMPAT_SASL_USERNAME", "")
SASL_PASSWORD = os.environ.get("COMPAT_SASL_PASSWORD", "")
SSL_CA = os.environ.get("COMPAT_SSL_CA", "")
SSL_CERT = os.environ.get("COMPAT_SSL_CERT", "")
SSL_KEY = os.environ.get("COMPAT_SSL_KEY", "")
USES_TLS = SECURITY_PROTOCOL in ("SSL", "SASL_SSL")
USES_SASL = SECURITY_PROTOCOL in ("SASL_PLAINTEXT", "SASL_SSL")


def librdkafka_security():
    """The run's security as librdkafka configuration keys (confluent-kafka, kcat's -X)."""
    if SECURITY_PROTOCOL == "PLAINTEXT":
        return {}
    conf = {"security.protocol": SECURITY_PROTOCOL.lower()}
    if USES_TLS:
        conf["ssl.ca.location"] = SSL_CA
        if SSL_CERT:
            conf.update({"ssl.certificate.location": SSL_CERT, "ssl.key.location": SSL_KEY})
    if USES_SASL:
        conf.update({"sasl.mechanisms": SASL_MECHANISM, "sasl.username": SASL_USERNAME,
                     "sasl.password": SASL_PASSWORD})
    return conf


def kafka_python_security():
    """The run's security as kafka-python keyword arguments."""
    if SECURITY_PROTOCOL == "PLAINTEXT":
        return {}
    kw = {"security_protocol": SECURITY_PROTOCOL}
    if USES_TLS:
        kw["ssl_cafile"] = SSL_CA
        if SSL_CERT:
            kw.update({"ssl_certfile": SSL_CERT, "ssl_keyfile": SSL_KEY})
    if USES_SASL:
        kw.update({"sasl_mechanism": SASL_MECHANISM, "sasl_plain_username": SASL_USERNAME,
                   "sasl_plain_password": SASL_PASSWORD})
    return kw


# leader-failover (scenarios.md): records produced, in rounds of this many, a pause between rounds.
FAILOVER_RECORDS, FAILOVER_ROUND, FAILOVER_PAUSE = 2000, 50, 0.1

# Kafka protocol error codes -> names (the Errors enum names of Apache Kafka).
ERROR_NAMES = {
    -1: "UNKNOWN_SERVER_ERROR", 0: "NONE", 1: "OFFSET_OUT_OF_RANGE", 2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION", 4: "INVALID_FETCH_SIZE", 5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT", 10: "MESSAGE_TOO_LARGE", 13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR",
    17: "INVALID_TOPIC_EXCEPTION", 22: "ILLEGAL_GENERATION", 25: "UNKNOWN_MEMBER_ID",
    27: "REBALANCE_IN_PROGRESS", 35: "UNSUPPORTED_VERSION", 36: "TOPIC_ALREADY_EXISTS",
    37: "INVALID_PARTITIONS", 38: "INVALID_REPLICATION_FACTOR", 40: "INVALID_CONFIG", 41: "NOT_CONTROLLER",
    42: "INVALID_REQUEST", 45: "OUT_OF_ORDER_SEQUENCE_NUMBER", 46: "DUPLICATE_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH", 48: "INVALID_TXN_STATE", 49: "INVALID_PRODUCER_ID_MAPPING",
    51: "CONCURRENT_TRANSACTIONS", 53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 69: "GROUP_ID_NOT_FOUND",
    76: "UNSUPPORTED_COMPRESSION_TYPE", 89: "PRODUCER_FENCED",
}

# DescribeConfigs config_source -> Kafka's ConfigEntry.ConfigSource names.
CONFIG_SOURCES = {
    0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG",
}


def err_name(code):
    if code is None:
        return "NONE"
    return ERROR_NAMES.get(int(code), "CODE_%d" % int(code))


def config_source_name(code):
    return CONFIG_SOURCES.get(int(code), "UNKNOWN")


class NotApplicable(Exception):
    """The client library cannot express this scenario."""


class Unsupported(Exception):
    """An optional capability the client's API lacks: reported as null, not checked."""


class CodeError(Exception):
    """A Kafka protocol error code returned by the broker."""

    def __init__(self, code, msg=""):
        super().__init__("%s%s" % (err_name(code), (": " + msg) if msg else ""))
        self.code = int(code)


class ScenarioFailed(Exception):
    pass


def name_of(exc):
    """Error code name for an adapter exception (None -> "NONE")."""
    if exc is None:
        return "NONE"
    if isinstance(exc, CodeError):
        return err_name(exc.code)
    return "CLIENT_ERROR(%s: %s)" % (type(exc).__name__, exc)


def capture(fn, *args):
    """Run fn and return the exception it raised, or None."""
    try:
        fn(*args)
        return None
    except NotApplicable:
        raise
    except Exception as e:  # noqa: BLE001 - observed as an error name
        return e


# ------------------------------------------------------------------ records

class Record:
    __slots__ = ("partition", "offset", "key", "value", "headers", "timestamp", "timestamp_type")

    def __init__(self, key, value, headers=None, timestamp=None, partition=0, offset=-1, timestamp_type=None):
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers or []  # list of (str, bytes)
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type  # "CreateTime", "LogAppendTime", or None when unknown

    def __repr__(self):
        return "Record(%r)" % kvh_line(self)


def gen_record(i, ts_step=1, partitions=1):
    """Record i of scenarios.md ("The records"), for partition i mod partitions."""
    return Record(
        key=b"k-%d" % i,
        value=bytes(0x61 + (i * 7 + j * 13) % 26 for j in range(100)),
        headers=[("h1", b"a-%d" % i), ("h2", b"b-%d" % i)],
        timestamp=BASE_TS + i * ts_step,
        partition=i % partitions,
    )


def gen_records(first, n, ts_step=1, partitions=1):
    return [gen_record(i, ts_step, partitions) for i in range(first, first + n)]


def index_of(key):
    """i for a key b"k-<i>", else -1."""
    if not key or not key.startswith(b"k-"):
        return -1
    try:
        return int(key[2:])
    except ValueError:
        return -1


def _text(b):
    return b"\\N" if b is None else bytes(b)


def header_text(headers):
    return b",".join(k.encode("latin-1") + b"=" + _text(v) for k, v in headers)


def kvh_line(r):
    return b"%d\t%s\t%s\t%s" % (r.offset, _text(r.key), _text(r.value), header_text(r.headers))


def digests(recs):
    """scenarios.md's sha256 (with timestamps) and sha256_kvh (without)."""
    full, kvh = hashlib.sha256(), hashlib.sha256()
    for r in recs:
        common = kvh_line(r)
        full.update(common + b"\t%d\n" % r.timestamp)
        kvh.update(common + b"\n")
    return full.hexdigest(), kvh.hexdigest()


# ------------------------------------------------------------------ outcome

class Outcome:
    def __init__(self):
        self.observed = {}
        self.failures = []

    def put(self, k, v):
        self.observed[k] = v

    def expect(self, what, want, got):
        if want != got:
            self.failures.append("%s: got %s, want %s" % (what, json.dumps(got), json.dumps(want)))

    def check(self, ok, msg):
        if not ok:
            self.failures.append(msg)


class Adapter:
    """Primitives an adapter provides (documentation; subclassing optional).

      not_applicable(scenario) -> reason or None
      close()
      create_topic(topic, partitions)          raises CodeError on a broker error
      delete_topic(topic)
      list_topics() -> [names]
      topic_partitions(topic) -> int            describe, no auto-creation; raises CodeError
      produce(topic, recs, codec, idempotent)   each record to its partition; waits for every ack.
                                                idempotent: idempotence on, up to 5 in flight, small
                                                batches; otherwise the client's own defaults
      open_reader(topic, partition, read_committed) -> obj with poll(seconds) -> [Record], close()
      list_offset(topic, partition, ts, read_committed) -> int   ts -2 earliest, -1 latest,
                                                -3 max timestamp (may raise Unsupported); -1 = none
      describe_topic_config(topic, name) -> (value, source name)
      alter_topic_config(topic, name, value)
      delete_records(topic, partition, before) -> low watermark (may raise Unsupported)
      transactions(topic, txn_id, committed, aborted)   commit one transaction, then abort one
      describe_group(group, topic) -> (state name, [partitions of topic per member])
      committed_offsets(group, topic, partitions) -> [offset or -1 per partition]
      new_group_consumer(group, topic, protocol) -> obj with assigned(), poll(seconds), commit(), close()
      new_resubscribing_consumer(group) -> obj with subscribe([topics]), assignment() -> {(topic, p)},
                                                poll(seconds), close(): a KIP-848 consumer whose
                                                subscription changes (consumer-group-848-resubscribe)
      new_transform_member(group, input, output, txn_id) -> obj with step(seconds) -> (committed, aborted),
                                                hold(pause), assigned(), close()
                                                (optional: consume-transform-produce)
    """


# ---------------------------------------------------------------- scenarios

def create_topic(a, topic, partitions):
    a.create_topic(topic, partitions)
    state = {}

    def ready():
        try:
            state["n"] = a.topic_partitions(topic)
            return state["n"] == partitions
        except Exception as e:  # noqa: BLE001
            state["err"] = e
            return False

    if not poll_until(ready, WAIT):
        raise ScenarioFailed("topic %s: %s partitions described, last error %r" % (topic, state.get("n"), state.get("err")))


def poll_until(fn, timeout=WAIT, interval=0.1):
    """Call fn until it returns a truthy value or timeout; returns last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def read_to_end(a, topic, partition, read_committed):
    """Reads partition from its earliest offset up to its end offset (the LSO under
    read_committed). Offsets past the last record that never arrive (control markers)
    end the read after 2 s without records."""
    end = a.list_offset(topic, partition, -1, read_committed)
    start = a.list_offset(topic, partition, -2, False)
    out = []
    if start >= end:
        return out
    r = a.open_reader(topic, partition, read_committed)
    try:
        deadline = time.monotonic() + WAIT
        last_progress = time.monotonic()
        while True:
            recs = r.poll(0.2)
            if recs:
                out.extend(recs)
                last_progress = time.monotonic()
            if out and out[-1].offset + 1 >= end:
                return out
            if out and time.monotonic() - last_progress > 2.0:
                return out
            if time.monotonic() > deadline:
                raise ScenarioFailed("reading %s[%d] stalled after %d records (end offset %d)"
                                     % (topic, partition, len(out), end))
    finally:
        r.close()


def verify_and_digest(o, recs, want, ts_step, check_timestamps=True):
    bad, first_bad = 0, None
    for n, r in enumerate(recs):
        g = gen_record(n, ts_step)
        why = None
        if r.offset != n:
            why = "offset %d at position %d" % (r.offset, n)
        elif r.key != g.key:
            why = "key at offset %d: %r" % (n, r.key)
        elif r.value != g.value:
            why = "value at offset %d" % n
        elif header_text(r.headers) != header_text(g.headers):
            why = "headers at offset %d: %r" % (n, header_text(r.headers))
        elif check_timestamps and r.timestamp != g.timestamp:
            why = "timestamp at offset %d: %s" % (n, r.timestamp)
        elif r.timestamp_type not in (None, "CreateTime"):
            why = "timestamp type %s at offset %d" % (r.timestamp_type, n)
        if why:
            bad += 1
            first_bad = first_bad or why
    full, kvh = digests(recs)
    o.put("count", len(recs))
    o.put("first_offset", recs[0].offset if recs else None)
    o.put("last_offset", recs[-1].offset if recs else None)
    o.put("sha256", full)
    o.put("sha256_kvh", kvh)
    o.expect("count", want, len(recs))
    o.check(bad == 0, "%d records differ from what was produced (first: %s)" % (bad, first_bad))


def timestamp_type(recs):
    """"CreateTime" when every record says so, None when the client does not tell."""
    for r in recs:
        if r.timestamp_type is None:
            return None
        if r.timestamp_type != "CreateTime":
            return r.timestamp_type
    return "CreateTime"


def sc_admin_topics(a, topic, o):
    e = capture(a.create_topic, topic, 3)
    o.put("create", name_of(e))
    if e is not None:
        raise ScenarioFailed("create: %s" % name_of(e))
    st = {"listed": False, "partitions": -1}

    def ready():
        try:
            st["listed"] = topic in a.list_topics()
        except Exception:  # noqa: BLE001
            st["listed"] = False
        try:
            st["partitions"] = a.topic_partitions(topic)
        except Exception:  # noqa: BLE001
            st["partitions"] = -1
        return st["listed"] and st["partitions"] == 3

    poll_until(ready, WAIT)
    o.put("listed", st["listed"])
    o.put("partitions", st["partitions"])
    o.expect("listed", True, st["listed"])
    o.expect("partitions", 3, st["partitions"])
    o.put("create_again_error", name_of(capture(a.create_topic, topic, 3)))
    o.put("create_invalid_error", name_of(capture(a.create_topic, "bad/name", 1)))
    o.put("delete", name_of(capture(a.delete_topic, topic)))
    last = {"e": None}

    def gone():
        last["e"] = capture(a.topic_partitions, topic)
        return isinstance(last["e"], CodeError)

    poll_until(gone, WAIT)
    o.put("describe_after_delete_error", name_of(last["e"]))
    o.expect("create_again_error", "TOPIC_ALREADY_EXISTS", o.observed["create_again_error"])
    o.expect("create_invalid_error", "INVALID_TOPIC_EXCEPTION", o.observed["create_invalid_error"])
    o.expect("delete", "NONE", o.observed["delete"])
    o.expect("describe_after_delete_error", "UNKNOWN_TOPIC_OR_PARTITION", o.observed["describe_after_delete_error"])


def produce_consume(a, topic, o, codec, idempotent=False):
    create_topic(a, topic, 1)
    a.produce(topic, gen_records(0, 1000), codec, idempotent)
    recs = read_to_end(a, topic, 0, False)
    verify_and_digest(o, recs, 1000, 1)
    if not idempotent:
        tt = timestamp_type(recs)
        o.put("timestamp_type", tt)
        if tt is not None:
            o.expect("timestamp_type", "CreateTime", tt)
        end = a.list_offset(topic, 0, -1, False)
        o.put("end_offset", end)
        o.expect("end_offset", 1000, end)
    o.expect("first_offset", 0, o.observed["first_offset"])
    o.expect("last_offset", 999, o.observed["last_offset"])


def sc_offsets_by_timestamp(a, topic, o):
    create_topic(a, topic, 1)
    a.produce(topic, gen_records(0, 100, 10), "none", False)
    for name, ts, want in (("earliest", -2, 0), ("latest", -1, 100), ("by_timestamp", BASE_TS + 505, 51),
                           ("max_timestamp", -3, 99), ("past_end", BASE_TS + 10000, -1)):
        try:
            off = a.list_offset(topic, 0, ts, False)
        except Unsupported:
            o.put(name, None)
            continue
        o.put(name, off)
        o.expect(name, want, off)


def sc_configs(a, topic, o):
    create_topic(a, topic, 1)
    v, src = a.describe_topic_config(topic, "retention.ms")
    o.put("before", v)
    o.put("before_source", src)
    a.alter_topic_config(topic, "retention.ms", "3600000")
    st = {}

    def changed():
        st["v"], st["src"] = a.describe_topic_config(topic, "retention.ms")
        return st["v"] == "3600000"

    poll_until(changed, 10)
    o.put("after", st["v"])
    o.put("after_source", st["src"])
    o.expect("before", "604800000", o.observed["before"])
    o.expect("before_source", "DEFAULT_CONFIG", o.observed["before_source"])
    o.expect("after", "3600000", o.observed["after"])
    o.expect("after_source", "DYNAMIC_TOPIC_CONFIG", o.observed["after_source"])


def sc_leader_failover(a, topic, o):
    """Idempotent acks=all rounds while run.py kills the partition's leader; then every record is read back
    exactly once, in order (verify_and_digest checks record i at offset i)."""
    if TOPOLOGY != "cluster":
        raise NotApplicable("leader-failover needs a cluster (run.py --topology cluster)")
    if not getattr(a, "failover", False):
        raise NotApplicable("leader-failover is not run with this client")
    create_topic(a, topic, 1)
    # One producer for every round where the adapter offers it (failover_producer): it must ride the
    # failover itself.
    send, close = a.failover_producer() if hasattr(a, "failover_producer") else (
        lambda t, recs: a.produce(t, recs, "none", True), lambda: None)
    try:
        for first in range(0, FAILOVER_RECORDS, FAILOVER_ROUND):
            send(topic, gen_records(first, FAILOVER_ROUND))
            time.sleep(FAILOVER_PAUSE)
    finally:
        close()
    # Read back with fresh clients where the adapter can make them (fresh): what is checked is the
    # producer's recovery, not how long an admin client made before the failover takes to notice it.
    if hasattr(a, "fresh"):
        a = a.fresh()
    recs = read_to_end(a, topic, 0, False)
    verify_and_digest(o, recs, FAILOVER_RECORDS, 1)


def sc_transactions(a, topic, o):
    create_topic(a, topic, 1)
    a.transactions(topic, topic + "-tx", gen_records(0, 100), gen_records(100, 100))
    rc = read_to_end(a, topic, 0, True)
    ru = read_to_end(a, topic, 0, False)
    ok = sum(1 for r in rc if 0 <= index_of(r.key) < 100)
    end = a.list_offset(topic, 0, -1, False)
    lso = a.list_offset(topic, 0, -1, True)
    o.put("committed_seen", len(rc))
    o.put("aborted_seen", len(rc) - ok)
    o.put("read_uncommitted_seen", len(ru))
    o.put("end_offset", end)
    o.put("last_stable_offset", lso)
    o.expect("committed_seen", 100, len(rc))
    o.expect("committed records are records 0..99", 100, ok)
    o.expect("aborted_seen", 0, len(rc) - ok)
    o.expect("read_uncommitted_seen", 200, len(ru))
    o.expect("end_offset", 202, end)
    o.expect("last_stable_offset", 202, lso)


def sc_delete_records(a, topic, o):
    create_topic(a, topic, 1)
    a.produce(topic, gen_records(0, 100), "none", False)
    try:
        low = a.delete_records(topic, 0, 40)
        o.put("low_watermark", low)
        o.expect("low_watermark", 40, low)
    except Unsupported:
        o.put("low_watermark", None)
    for name, ts, want in (("earliest", -2, 40), ("latest", -1, 100)):
        off = a.list_offset(topic, 0, ts, False)
        o.put(name, off)
        o.expect(name, want, off)
    recs = read_to_end(a, topic, 0, False)
    o.put("first_consumed", recs[0].offset if recs else None)
    o.put("consumed", len(recs))
    o.expect("first_consumed", 40, o.observed["first_consumed"])
    o.expect("consumed", 60, len(recs))


def sc_consumer_group(a, topic, o, protocol="classic"):
    """The consumer-group scenario; protocol "consumer" is consumer-group-848 (KIP-848), for adapters
    whose new_group_consumer takes a protocol argument (others: not applicable)."""
    if protocol != "classic" and not getattr(a, "consumer_protocol", False):
        raise NotApplicable("the client has no KIP-848 consumer group protocol")
    partitions = 6
    group = topic + "-g"
    create_topic(a, topic, partitions)
    cs = []
    seen = set()
    per = [0, 0, 0]
    try:
        for _ in range(3):
            cs.append(a.new_group_consumer(group, topic, protocol))

        def poll_all(seconds):
            for n, c in enumerate(cs):
                recs = c.poll(seconds)
                for r in recs:
                    seen.add(index_of(r.key))
                    per[n] += 1
                if recs:
                    try:
                        c.commit()
                    except Exception:  # noqa: BLE001 - a rebalance got in the way
                        pass

        def until(cond):
            deadline = time.monotonic() + WAIT
            while time.monotonic() < deadline:
                poll_all(0.05)
                if cond():
                    return True
            return False

        last = {}

        def stable():
            try:
                state, sizes = a.describe_group(group, topic)
            except Exception as e:  # noqa: BLE001
                last["err"] = e
                return False
            last["state"], last["sizes"] = state, sizes
            return state == "Stable" and len(sizes) == 3 and all(s == 2 for s in sizes)

        ok = until(stable)
        o.put("members_stable", 3 if ok else 0)
        o.check(ok, "the group never became Stable with 3 members of 2 partitions each (last: %s)" % last)
        a.produce(topic, gen_records(0, 600, 1, partitions), "none", False)
        ok = until(lambda: len(seen) >= 600)
        o.check(ok, "the members consumed only %d of 600 records" % len(seen))
        committed = {"v": []}

        def all_committed():
            try:
                committed["v"] = a.committed_offsets(group, topic, partitions)
            except Exception:  # noqa: BLE001
                return False
            return sum(max(0, c) for c in committed["v"]) >= 600

        until(all_committed)
        for c in cs:
            try:
                c.commit()
            except Exception:  # noqa: BLE001
                pass
    finally:
        for c in cs:
            c.close()
    o.put("distinct_consumed", len(seen))
    o.put("per_consumer", sorted(per))
    committed = a.committed_offsets(group, topic, partitions)
    o.put("committed", committed)
    o.expect("distinct_consumed", 600, len(seen))
    o.expect("per_consumer", [200, 200, 200], sorted(per))
    o.expect("committed", [100] * 6, committed)

    # phase 2: a new member resumes from the commits: nothing old, then exactly the 10 new records
    counts = {"old": 0, "new": 0}

    def count(recs):
        for r in recs:
            counts["new" if index_of(r.key) >= 600 else "old"] += 1

    r = a.new_group_consumer(group, topic, protocol)
    try:
        deadline = time.monotonic() + WAIT
        while r.assigned() < partitions and time.monotonic() < deadline:
            count(r.poll(0.1))
        o.check(r.assigned() == partitions, "the new member got %d partitions" % r.assigned())
        quiet = time.monotonic() + 2.0
        while time.monotonic() < quiet:
            count(r.poll(0.1))
        a.produce(topic, gen_records(600, 10, 1, partitions), "none", False)
        deadline = time.monotonic() + WAIT
        while counts["new"] < 10 and time.monotonic() < deadline:
            count(r.poll(0.1))
        r.commit()
    finally:
        r.close()
    o.put("resumed_old", counts["old"])
    o.put("new_seen", counts["new"])
    after = a.committed_offsets(group, topic, partitions)
    o.put("committed_after", after)
    o.expect("resumed_old", 0, counts["old"])
    o.expect("new_seen", 10, counts["new"])
    o.expect("committed_after", [102, 102, 102, 102, 101, 101], after)


RESUBSCRIBE_TOPICS, RESUBSCRIBE_PARTITIONS, RESUBSCRIBE_WINDOW = 30, 4, 5


def sc_consumer_group_848_resubscribe(a, topic, o):
    """consumer-group-848-resubscribe (scenarios.md): a sliding-window subscription, issue #26."""
    if not hasattr(a, "new_resubscribing_consumer"):
        raise NotApplicable("the adapter has no resubscribing KIP-848 consumer")
    names = ["%s-%02d" % (topic, i) for i in range(RESUBSCRIBE_TOPICS)]
    for n in names:
        create_topic(a, n, RESUBSCRIBE_PARTITIONS)
    c = a.new_resubscribing_consumer(topic + "-g")
    checks = []
    try:
        for i in range(len(names)):
            sub = names[i:i + RESUBSCRIBE_WINDOW]
            c.subscribe(sub)
            c.poll(0.001)
            if i % 5 != 0 and i != len(names) - 1:
                continue
            want = {(n, p) for n in sub for p in range(RESUBSCRIBE_PARTITIONS)}
            if not poll_until(lambda: c.assignment() == want or c.poll(0.02), WAIT, interval=0):
                got = c.assignment()
                o.put("checks", checks)
                raise ScenarioFailed("step %d: assignment never became the %d partitions of %s..%s; holds %d (%d of "
                                     "them outside the subscription)" % (i, len(want), sub[0], sub[-1], len(got),
                                                                         len(got - want)))
            checks.append(len(want))
    finally:
        c.close()
    o.put("checks", checks)
    o.expect("checks", [20, 20, 20, 20, 20, 20, 4], checks)


# consume-transform-produce (scenarios.md): the input's records, at most CTP_MAX_POLL a poll (and a
# transaction); the late member joins once CTP_JOIN_AT records are committed (fewer than 1000 by then: the
# check follows a round, in which the two members commit at most 800; so no partition of 1000 is done);
# the busier of members 0 and 1 leaves once the late member has committed records.
CTP_RECORDS, CTP_PARTITIONS, CTP_MAX_POLL = 3000, 3, 200
CTP_JOIN_AT, CTP_LOOP = 200, 40.0
CTP_BACK_TO_BACK_POLL = 0.01  # the poll of a turn's second transaction, which follows the first at once


def transform(value):
    """The scenario's transform of a value: upper-cased (the generator writes lower-case letters)."""
    return value.upper()


def sc_consume_transform_produce(a, topic, o):
    """Members made by the adapter's new_transform_member(group, input, output, txn_id) -> obj with
    step(seconds) -> (records committed, aborted) (raises on an error fatal for the member), hold(pause)
    (pause or resume fetching; a paused member still takes part in rebalances), assigned() (input
    partitions held) and close()."""
    if not hasattr(a, "new_transform_member"):
        raise NotApplicable("consume-transform-produce is not written for this client")
    src, out, group = topic, topic + "-out", topic + "-g"
    create_topic(a, src, CTP_PARTITIONS)
    create_topic(a, out, CTP_PARTITIONS)
    a.produce(src, gen_records(0, CTP_RECORDS, 1, CTP_PARTITIONS), "none", False)
    ends = [a.list_offset(src, p, -1, False) for p in range(CTP_PARTITIONS)]
    o.put("input_end_offsets", ends)

    members = []  # [member, committed, transactions, aborted, closed]

    def join(n):
        members.append([a.new_transform_member(group, src, out, "%s-tx-%d" % (topic, n)), 0, 0, 0, False])

    def close(m):
        if not m[4]:
            m[4] = True
            try:
                m[0].close()
            except Exception as e:  # noqa: BLE001
                sys.stderr.write("ctp: closing a member: %r\n" % (e,))

    def hold(pause):
        for m in members:
            if not m[4]:
                m[0].hold(pause)

    # A member that joins holds the others (they poll, so that they rejoin, but fetch nothing) until it
    # has partitions: else the members already there may do all the work before it is in.
    committed, left, left_mid_way, joiner, fatal = 0, False, False, 1, []
    try:
        join(0)
        join(1)
        members[0][0].hold(True)
        deadline = time.monotonic() + CTP_LOOP
        next_check = 0.0
        while time.monotonic() < deadline:
            live = [m for m in members if not m[4]]
            if not live:
                break
            for m in live:
                n = members.index(m)
                # a turn is up to two transactions back to back: the second begins as soon as the first
                # is committed, as a member that does not wait between transactions does
                for poll in (0.1, CTP_BACK_TO_BACK_POLL):
                    try:
                        c, aborted = m[0].step(poll)
                    except Exception as e:  # noqa: BLE001
                        traceback.print_exc(file=sys.stderr)
                        fatal.append("member %d: %s (%s)" % (n, name_of(e), e))
                        close(m)
                        break
                    committed += c
                    m[1] += c
                    m[2] += 1 if c else 0
                    m[3] += 1 if aborted else 0
                    if not c:
                        break
            if joiner >= 0 and (members[joiner][4] or members[joiner][0].assigned() > 0):
                sys.stderr.write("ctp: member %d has %d partitions at %d committed; the others resume\n"
                                 % (joiner, members[joiner][0].assigned(), committed))
                hold(False)
                joiner = -1
            if len(members) == 2 and committed >= CTP_JOIN_AT:
                sys.stderr.write("ctp: member 2 joins at %d committed\n" % committed)
                hold(True)
                join(2)
                joiner = 2
            if not left and len(members) == 3 and members[2][1] > 0:
                # the one of members 0 and 1 that has done more leaves, handing its partitions on
                leaver = 0 if members[0][1] >= members[1][1] else 1
                sys.stderr.write("ctp: member %d leaves at %d committed\n" % (leaver, committed))
                left, left_mid_way = True, committed < CTP_RECORDS
                close(members[leaver])
            if committed >= CTP_RECORDS and time.monotonic() >= next_check:
                try:
                    if a.committed_offsets(group, src, CTP_PARTITIONS) == ends:
                        break
                except Exception:  # noqa: BLE001
                    pass
                next_check = time.monotonic() + 0.5
    finally:
        for m in members:
            close(m)
    group_committed = a.committed_offsets(group, src, CTP_PARTITIONS)

    seen = [0] * CTP_RECORDS
    count, bad, first_bad = 0, 0, None
    for p in range(CTP_PARTITIONS):
        for r in read_to_end(a, out, p, True):
            count += 1
            i = index_of(r.key)
            why = None
            if not 0 <= i < CTP_RECORDS:
                why = "key %r" % (r.key,)
            else:
                g = gen_record(i, 1, CTP_PARTITIONS)
                if r.partition != g.partition:
                    why = "record %d in partition %d" % (i, r.partition)
                elif r.value != transform(g.value):
                    why = "value of record %d" % i
                elif header_text(r.headers) != header_text(g.headers):
                    why = "headers of record %d" % i
                elif r.timestamp != g.timestamp:
                    why = "timestamp of record %d" % i
            if why:
                bad += 1
                first_bad = first_bad or why
                continue
            seen[i] += 1
    distinct = sum(1 for s in seen if s)
    duplicates = sum(s - 1 for s in seen if s > 1)
    missing = CTP_RECORDS - distinct
    late = len(members) == 3 and members[2][1] > 0
    o.put("output_count", count)
    o.put("distinct", distinct)
    o.put("duplicates", duplicates)
    o.put("missing", missing)
    o.put("transformed_ok", bad == 0)
    o.put("exactly_once", duplicates == 0 and missing == 0 and bad == 0)
    o.put("committed", group_committed)
    o.put("members", len(members))
    o.put("late_member_processed", late)
    o.put("left_mid_way", left_mid_way)
    o.put("per_member", [m[1] for m in members])
    o.put("transactions", sum(m[2] for m in members))
    o.put("aborted_transactions", sum(m[3] for m in members))
    o.check(not fatal, "fatal member errors: " + "; ".join(fatal))
    o.expect("input_end_offsets", [1000, 1000, 1000], ends)
    o.expect("output_count", CTP_RECORDS, count)
    o.expect("duplicates", 0, duplicates)
    o.expect("missing", 0, missing)
    o.check(bad == 0, "%d output records are not the transform of an input record (first: %s)" % (bad, first_bad))
    o.expect("committed", ends, group_committed)
    o.expect("members", 3, len(members))
    o.check(late, "the late member committed no records")
    o.check(left_mid_way, "no member left while records remained")


def scenarios():
    m = {
        "admin-topics": sc_admin_topics,
        "offsets-by-timestamp": sc_offsets_by_timestamp,
        "consumer-group": sc_consumer_group,
        "consumer-group-848": lambda a, t, o: sc_consumer_group(a, t, o, "consumer"),
        "consumer-group-848-resubscribe": sc_consumer_group_848_resubscribe,
        "idempotent-producer": lambda a, t, o: produce_consume(a, t, o, "none", True),
        "transactions": sc_transactions,
        "configs": sc_configs,
        "delete-records": sc_delete_records,
        "leader-failover": sc_leader_failover,
        "consume-transform-produce": sc_consume_transform_produce,
    }
    for c in CODECS:
        m["produce-consume-" + c] = (lambda codec: lambda a, t, o: produce_consume(a, t, o, codec))(c)
    return m


# --------------------------------------------------------------------- main

INFO = {}


def emit(ok, observed, error, code):
    sys.stdout.flush()
    print(json.dumps({"ok": ok, "observed": observed, "error": error, "info": INFO}, sort_keys=True), flush=True)
    os._exit(code)


def main(adapter_cls, client_name, library="", scenario_overrides=None):
    INFO.update({"client": client_name, "library": library, "security_protocol": SECURITY_PROTOCOL})
    p = argparse.ArgumentParser(prog=client_name + "/run")
    p.add_argument("scenario")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--data-dir", default=None)
    try:
        args = p.parse_args()
    except SystemExit:
        emit(False, {}, "usage: run SCENARIO --bootstrap HOST:PORT --topic T --data-dir DIR", 2)
    table = scenarios()
    table.update(scenario_overrides or {})
    sc = table.get(args.scenario)
    if sc is None:
        emit(False, {}, "not applicable: scenario '%s' is not implemented by the %s adapter"
             % (args.scenario, client_name), 3)
    o = Outcome()

    def backstop():
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)  # where it hung, for the log
        emit(False, dict(o.observed), "scenario timed out (%.0f s)" % (RUN_TIMEOUT - 3), 1)

    t = threading.Timer(RUN_TIMEOUT - 3, backstop)
    t.daemon = True
    t.start()
    start = time.monotonic()
    try:
        a = adapter_cls(args.bootstrap, args.data_dir)
        reason = a.not_applicable(args.scenario)
        if reason:
            raise NotApplicable(reason)
        sc(a, args.topic, o)
        INFO["seconds"] = round(time.monotonic() - start, 3)
    except NotApplicable as e:
        emit(False, o.observed, "not applicable: %s" % e, 3)
    except ScenarioFailed as e:
        emit(False, o.observed, "; ".join([str(e)] + o.failures), 1)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc(file=sys.stderr)
        emit(False, o.observed, "; ".join(["%s: %s" % (type(e).__name__, e)] + o.failures), 1)
    try:
        a.close()
    except Exception:  # noqa: BLE001
        pass
    if o.failures:
        emit(False, o.observed, "; ".join(o.failures), 1)
    emit(True, o.observed, "", 0)
