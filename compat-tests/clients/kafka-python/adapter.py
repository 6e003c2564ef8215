"""kafka-python adapter for the Gregor compat tests (kafka-python 2.3.x).

kafka-python is pinned to the latest 2.x release, not 3.0.x: in 3.0.12 (whose networking layer is new)
KafkaConsumer.poll() intermittently blocks for good (a wakeup of its IO thread is lost) in the
second phase of the consumer-group scenario, in about a third of the runs against Apache Kafka.
"""

import logging
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_common"))

import kafka  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic  # noqa: E402
import kafka.errors as Errors  # noqa: E402

from compat_common import (  # noqa: E402
    REPLICATION_FACTOR, CodeError, Record, ScenarioFailed, Unsupported, config_source_name, kafka_python_security,
    main)

SECURITY = kafka_python_security()  # the run's TLS and SASL, in every client's keyword arguments

logging.basicConfig(level=logging.DEBUG if os.environ.get("COMPAT_DEBUG") else logging.CRITICAL,
                    format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")


def _kerr(exc):
    """Turn a kafka-python broker error into CodeError when it carries a code."""
    errno = getattr(exc, "errno", None)
    if isinstance(exc, Errors.KafkaError) and isinstance(errno, int) and errno != 0:
        return CodeError(errno, str(exc))
    return exc


def _check(code, msg=""):
    if code:
        raise CodeError(code, msg or "")


def _from_cr(m):
    tt = {0: "CreateTime", 1: "LogAppendTime"}.get(m.timestamp_type, "NoTimestampType")
    return Record(key=m.key, value=m.value, headers=list(m.headers or []), timestamp=m.timestamp,
                  partition=m.partition, offset=m.offset, timestamp_type=tt)


def _poll(c, seconds):
    out = []
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return out
        for recs in c.poll(timeout_ms=max(1, int(left * 1000))).values():
            out.extend(_from_cr(m) for m in recs)


def _send(p, topic, recs, timeout=30):
    futs = [p.send(topic, value=r.value, key=r.key, headers=r.headers or None, partition=r.partition,
                   timestamp_ms=r.timestamp) for r in recs]
    p.flush(timeout)
    for f in futs:
        try:
            f.get(timeout)
        except Errors.KafkaError as e:
            raise _kerr(e) from None


class Reader:
    def __init__(self, bootstrap, topic, partition, read_committed):
        self.c = KafkaConsumer(**SECURITY, bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                               isolation_level="read_committed" if read_committed else "read_uncommitted")
        tp = TopicPartition(topic, partition)
        self.c.assign([tp])
        self.c.seek_to_beginning(tp)

    def poll(self, seconds):
        return _poll(self.c, seconds)

    def close(self):
        self.c.close()


class GroupConsumer:
    def __init__(self, bootstrap, group, topic):
        self.c = KafkaConsumer(topic, **SECURITY, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                               auto_offset_reset="earliest", heartbeat_interval_ms=1000)
        self.closed = False

    def assigned(self):
        return len(self.c.assignment())

    def poll(self, seconds):
        return _poll(self.c, seconds)

    def commit(self):
        try:
            self.c.commit()
        except Errors.KafkaError as e:
            raise _kerr(e) from None

    def close(self):
        if not self.closed:
            self.closed = True
            self.c.close()


class KafkaPythonAdapter:
    def __init__(self, bootstrap, data_dir):
        self.bootstrap = bootstrap
        self.adm = KafkaAdminClient(**SECURITY, bootstrap_servers=bootstrap)
        self.offset_clients = {}

    def not_applicable(self, scenario):
        return None

    def close(self):
        for c in self.offset_clients.values():
            c.close()
        self.adm.close()

    def create_topic(self, topic, partitions):
        try:
            self.adm.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=REPLICATION_FACTOR)])
        except Errors.KafkaError as e:
            raise _kerr(e) from None

    def delete_topic(self, topic):
        try:
            self.adm.delete_topics([topic])
        except Errors.KafkaError as e:
            raise _kerr(e) from None

    def list_topics(self):
        return self.adm.list_topics()

    def topic_partitions(self, topic):
        for t in self.adm.describe_topics([topic]):
            if t["topic"] == topic:
                _check(t["error_code"])
                return len(t["partitions"])
        raise ScenarioFailed("topic %s missing from metadata" % topic)

    def produce(self, topic, recs, codec, idempotent):
        conf = {**SECURITY, "bootstrap_servers": self.bootstrap, "acks": "all",
                "compression_type": None if codec == "none" else codec}
        if idempotent:  # kafka-python 2.x allows only one request in flight with idempotence
            conf.update({"enable_idempotence": True, "max_in_flight_requests_per_connection": 1,
                         "batch_size": 4096})
        p = KafkaProducer(**conf)
        try:
            _send(p, topic, recs)
        finally:
            p.close(5)

    def open_reader(self, topic, partition, read_committed):
        return Reader(self.bootstrap, topic, partition, read_committed)

    def _offsets(self, read_committed):
        """kafka-python 2.x lists offsets through a consumer (beginning/end_offsets, offsets_for_times)."""
        iso = "read_committed" if read_committed else "read_uncommitted"
        c = self.offset_clients.get(iso)
        if c is None:
            c = self.offset_clients[iso] = KafkaConsumer(**SECURITY, bootstrap_servers=self.bootstrap, group_id=None,
                                                         enable_auto_commit=False, isolation_level=iso)
        return c

    def list_offset(self, topic, partition, ts, read_committed):
        if ts == -3:
            raise Unsupported("kafka-python 2.x has no max-timestamp offset query")
        tp = TopicPartition(topic, partition)
        c = self._offsets(read_committed)
        try:
            if ts == -2:
                return c.beginning_offsets([tp])[tp]
            if ts == -1:
                return c.end_offsets([tp])[tp]
            r = c.offsets_for_times({tp: ts})[tp]
            return -1 if r is None else r.offset
        except Errors.KafkaError as e:
            raise _kerr(e) from None

    def describe_topic_config(self, topic, name):
        res = self.adm.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={name: None})])
        for resp in res:
            for r in resp.resources:
                _check(r[0], r[1])
                for e in r[4]:
                    if e[0] == name:
                        # v1+: (name, value, read_only, config_source, is_sensitive, synonyms)
                        return e[1], config_source_name(e[3]) if resp.API_VERSION >= 1 else \
                            ("DEFAULT_CONFIG" if e[3] else "UNKNOWN")
        raise ScenarioFailed("config %s not described" % name)

    # kafka-python 2.x has only the (non-incremental) AlterConfigs API.
    def alter_topic_config(self, topic, name, value):
        res = self.adm.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={name: value})])
        for r in res.resources:
            _check(r[0], r[1])

    def delete_records(self, topic, partition, before):
        tp = TopicPartition(topic, partition)
        try:
            res = self.adm.delete_records({tp: before})
        except Errors.KafkaError as e:
            raise _kerr(e) from None
        return res[tp]["low_watermark"]

    def transactions(self, topic, txn_id, committed, aborted):
        p = KafkaProducer(**SECURITY, bootstrap_servers=self.bootstrap, transactional_id=txn_id, acks="all")
        try:
            p.init_transactions()
            for recs, commit in ((committed, True), (aborted, False)):
                p.begin_transaction()
                _send(p, topic, recs)
                if commit:
                    p.commit_transaction()
                else:
                    p.abort_transaction()
        except Errors.KafkaError as e:
            raise _kerr(e) from None
        finally:
            p.close(5)

    def describe_group(self, group, topic):
        try:
            gs = self.adm.describe_consumer_groups([group])
        except Errors.KafkaError as e:
            raise _kerr(e) from None
        for g in gs:
            if g.group != group:
                continue
            _check(g.error_code)
            sizes = []
            for m in g.members:
                a = m.member_assignment
                sizes.append(sum(len(ps) for t, ps in (a.assignment if a else []) if t == topic))
            return g.state, sizes
        raise ScenarioFailed("group missing from DescribeGroups")

    def committed_offsets(self, group, topic, partitions):
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        try:
            res = self.adm.list_consumer_group_offsets(group, partitions=tps)
        except Errors.KafkaError as e:
            raise _kerr(e) from None
        return [res[tp].offset if tp in res and res[tp].offset >= 0 else -1 for tp in tps]

    def new_group_consumer(self, group, topic, protocol):
        return GroupConsumer(self.bootstrap, group, topic)


if __name__ == "__main__":
    main(KafkaPythonAdapter, "kafka-python", "kafka-python %s" % kafka.__version__)
