"""confluent-kafka-python (librdkafka) adapter for the Gregor compat tests."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_common"))

import confluent_kafka  # noqa: E402
from confluent_kafka import (  # noqa: E402
    Consumer, ConsumerGroupTopicPartitions, IsolationLevel, KafkaError, KafkaException, Producer,
    TopicCollection, TopicPartition, OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME)
from confluent_kafka.admin import (  # noqa: E402
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, OffsetSpec, ResourceType)

from compat_common import (  # noqa: E402
    CTP_MAX_POLL, REPLICATION_FACTOR, CodeError, Record, ScenarioFailed, config_source_name, librdkafka_security,
    main, transform)

QUIET = {"log_level": 3}
SECURITY = librdkafka_security()  # the run's TLS and SASL, in every client's configuration
TIMEOUT = 30


def _kerr(exc):
    """Turn a librdkafka error into CodeError when it carries a broker code."""
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
    if isinstance(err, KafkaError) and err.code() > 0:
        return CodeError(err.code(), err.str())
    return exc


def _result(fut):
    try:
        return fut.result(TIMEOUT)
    except KafkaException as e:
        raise _kerr(e) from None


def _from_msg(m):
    ts_type, ts = m.timestamp()
    tt = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}.get(ts_type,
                                                                                             "NoTimestampType")
    return Record(key=m.key(), value=m.value(), headers=list(m.headers() or []), timestamp=ts,
                  partition=m.partition(), offset=m.offset(), timestamp_type=tt)


def _send(p, topic, recs, timeout=TIMEOUT):
    errors = []
    done = [0]

    def cb(err, msg):
        done[0] += 1
        if err is not None:
            errors.append(err)

    for r in recs:
        while True:
            try:
                p.produce(topic, value=r.value, key=r.key, partition=r.partition, headers=r.headers or None,
                          timestamp=r.timestamp or 0, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.1)
    deadline = time.monotonic() + timeout
    while done[0] < len(recs) and time.monotonic() < deadline:
        p.poll(0.1)
    if errors:
        raise _kerr(KafkaException(errors[0]))
    if done[0] < len(recs):
        raise ScenarioFailed("only %d of %d delivery reports" % (done[0], len(recs)))


def _poll(c, seconds):
    out = []
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return out
        m = c.poll(left)
        if m is None:
            continue
        if m.error():
            if m.error().fatal():
                raise _kerr(KafkaException(m.error()))
            continue
        out.append(_from_msg(m))


class Reader:
    def __init__(self, bootstrap, topic, partition, read_committed):
        # group.id is required by the constructor; no group is joined (assign)
        self.c = Consumer({**SECURITY, "bootstrap.servers": bootstrap, "group.id": topic + "-reader",
                           "enable.auto.commit": False,
                           "isolation.level": "read_committed" if read_committed else "read_uncommitted", **QUIET})
        self.c.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])

    def poll(self, seconds):
        return _poll(self.c, seconds)

    def close(self):
        self.c.close()


class GroupConsumer:
    def __init__(self, bootstrap, group, topic, protocol):
        conf = {**SECURITY, "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", **QUIET}
        if protocol == "classic":
            conf["heartbeat.interval.ms"] = 1000
        else:
            # KIP-848: the broker sets the heartbeat interval and assigns.
            conf["group.protocol"] = protocol
        self.c = Consumer(conf)
        self.c.subscribe([topic])
        self.closed = False

    def assigned(self):
        return len(self.c.assignment())

    def poll(self, seconds):
        return _poll(self.c, seconds)

    def commit(self):
        try:
            self.c.commit(asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:
                raise _kerr(e) from None

    def close(self):
        if not self.closed:
            self.closed = True
            self.c.close()


class ResubscribingConsumer:
    """A KIP-848 consumer whose subscription changes, with a rebalance callback installed (the
    callbacks leave the incremental assign and unassign to the client)."""

    def __init__(self, bootstrap, group):
        self.c = Consumer({**SECURITY, "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                           "enable.auto.commit": False, "auto.offset.reset": "earliest", **QUIET})

    def subscribe(self, topics):
        self.c.subscribe(list(topics), on_assign=lambda c, ps: None, on_revoke=lambda c, ps: None)

    def assignment(self):
        return {(tp.topic, tp.partition) for tp in self.c.assignment()}

    def poll(self, seconds):
        _poll(self.c, seconds)

    def close(self):
        self.c.close()


class TransformMember:
    """A consume-transform-produce member (scenarios.md): a read_committed consumer in the group and a
    transactional producer of its own, which sends the consumed offsets to each transaction."""

    def __init__(self, bootstrap, group, topic, output, txn_id):
        self.output, self.txn_id = output, txn_id
        self.p = Producer({**SECURITY, "bootstrap.servers": bootstrap, "transactional.id": txn_id, "acks": "all",
                           # a member that dies inside a transaction must not hold back the output's LSO
                           "transaction.timeout.ms": 10000, **QUIET})
        self.p.init_transactions(TIMEOUT)
        self.c = Consumer({**SECURITY, "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                           "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                           "heartbeat.interval.ms": 1000, **QUIET})
        self.held = False
        self.c.subscribe([topic], on_assign=self._assigned)

    def _assigned(self, c, parts):
        sys.stderr.write("ctp: %s is assigned %s\n" % (self.txn_id, sorted(tp.partition for tp in parts)))
        c.assign(parts)
        # librdkafka keeps a partition's pause across assignments: set it either way, so that a rebalance
        # neither releases a held member nor leaves a released one paused
        if parts:
            (c.pause if self.held else c.resume)(parts)

    def step(self, seconds):
        msgs = self.c.consume(num_messages=CTP_MAX_POLL, timeout=seconds)
        recs = []
        for m in msgs:
            if m.error():
                if m.error().fatal():
                    raise _kerr(KafkaException(m.error()))
                continue
            recs.append(m)
        if recs and self.held:
            # pause does not take back what librdkafka fetched before it: put it back
            first = {}
            for m in recs:
                first.setdefault(m.partition(), m.offset())
            for p, off in first.items():
                self.c.seek(TopicPartition(recs[0].topic(), p, off))
            return 0, False
        if not recs:
            return 0, False
        offsets, first = {}, {}
        self.p.begin_transaction()
        try:
            for m in recs:
                while True:
                    try:
                        self.p.produce(self.output, key=m.key(), value=transform(m.value()), partition=m.partition(),
                                       headers=m.headers(), timestamp=m.timestamp()[1])
                        break
                    except BufferError:
                        self.p.poll(0.1)
                first.setdefault(m.partition(), m.offset())
                offsets[m.partition()] = m.offset() + 1
            self.p.send_offsets_to_transaction(
                [TopicPartition(m.topic(), p, off) for p, off in offsets.items()],
                self.c.consumer_group_metadata(), TIMEOUT)
            self.p.commit_transaction(TIMEOUT)
        except KafkaException as e:
            err = e.args[0]
            if not err.txn_requires_abort():
                raise _kerr(e) from None
            # abortable (a rebalance got in the way, ...): abort, and read again from where the aborted
            # transaction began what this member still owns
            sys.stderr.write("ctp: aborting a transaction of %d records: %s\n" % (len(recs), err))
            self.p.abort_transaction(TIMEOUT)
            owned = {tp.partition for tp in self.c.assignment()}
            for p, off in first.items():
                if p in owned:
                    self.c.seek(TopicPartition(recs[0].topic(), p, off))
            return 0, True
        return len(recs), False

    def hold(self, pause):
        self.held = pause
        parts = self.c.assignment()
        if parts:
            (self.c.pause if pause else self.c.resume)(parts)

    def assigned(self):
        return len(self.c.assignment())

    def close(self):
        try:
            self.c.close()
        finally:
            self.p.flush(5)


class ConfluentAdapter:
    failover = True  # leader-failover: librdkafka's idempotent producer

    def __init__(self, bootstrap, data_dir):
        self.bootstrap = bootstrap
        self.adm = AdminClient({**SECURITY, "bootstrap.servers": bootstrap, **QUIET})

    def not_applicable(self, scenario):
        return None

    def close(self):
        pass

    def create_topic(self, topic, partitions):
        futs = self.adm.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=REPLICATION_FACTOR)])
        _result(futs[topic])

    def delete_topic(self, topic):
        _result(self.adm.delete_topics([topic])[topic])

    def list_topics(self):
        md = self.adm.list_topics(timeout=TIMEOUT)
        return [t for t, tm in md.topics.items() if tm.error is None]

    def topic_partitions(self, topic):
        futs = self.adm.describe_topics(TopicCollection([topic]))
        return len(_result(futs[topic]).partitions)

    def produce(self, topic, recs, codec, idempotent):
        conf = {**SECURITY, "bootstrap.servers": self.bootstrap, "acks": "all", "compression.type": codec, **QUIET}
        if idempotent:
            conf.update({"enable.idempotence": True, "max.in.flight.requests.per.connection": 5,
                         "batch.size": 4096})
        p = Producer(conf)
        _send(p, topic, recs)
        p.flush(10)

    def fresh(self):
        """A new adapter with its own AdminClient (leader-failover reads back with it)."""
        return ConfluentAdapter(self.bootstrap, None)

    def failover_producer(self):
        """leader-failover: one idempotent producer for every round; returns (send, close)."""
        p = Producer({**SECURITY, "bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                      "max.in.flight.requests.per.connection": 5, "batch.size": 4096, **QUIET})
        return (lambda topic, recs: _send(p, topic, recs, timeout=120)), (lambda: p.flush(10))

    def open_reader(self, topic, partition, read_committed):
        return Reader(self.bootstrap, topic, partition, read_committed)

    def list_offset(self, topic, partition, ts, read_committed):
        spec = {-3: OffsetSpec.max_timestamp(), -2: OffsetSpec.earliest(),
                -1: OffsetSpec.latest()}.get(ts) or OffsetSpec.for_timestamp(ts)
        iso = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        futs = self.adm.list_offsets({TopicPartition(topic, partition): spec}, isolation_level=iso)
        for _, f in futs.items():
            return _result(f).offset
        raise ScenarioFailed("no ListOffsets result")

    def describe_topic_config(self, topic, name):
        futs = self.adm.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])
        for _, f in futs.items():
            e = _result(f)[name]
            return e.value, config_source_name(int(e.source))
        raise ScenarioFailed("no DescribeConfigs result")

    def alter_topic_config(self, topic, name, value):
        res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
        for _, f in self.adm.incremental_alter_configs([res]).items():
            _result(f)

    def delete_records(self, topic, partition, before):
        futs = self.adm.delete_records([TopicPartition(topic, partition, before)])
        for _, f in futs.items():
            return _result(f).low_watermark
        raise ScenarioFailed("no DeleteRecords result")

    def transactions(self, topic, txn_id, committed, aborted):
        p = Producer({**SECURITY, "bootstrap.servers": self.bootstrap, "transactional.id": txn_id, "acks": "all", **QUIET})
        try:
            p.init_transactions(TIMEOUT)
            for recs, commit in ((committed, True), (aborted, False)):
                p.begin_transaction()
                _send(p, topic, recs)
                if commit:
                    p.commit_transaction(TIMEOUT)
                else:
                    p.abort_transaction(TIMEOUT)
        except KafkaException as e:
            raise _kerr(e) from None

    def describe_group(self, group, topic):
        futs = self.adm.describe_consumer_groups([group])
        d = _result(futs[group])
        sizes = [sum(1 for tp in m.assignment.topic_partitions if tp.topic == topic) for m in d.members]
        state = d.state.name  # ConsumerGroupState enum: STABLE, ...
        return {"STABLE": "Stable", "EMPTY": "Empty", "DEAD": "Dead", "PREPARING_REBALANCING": "PreparingRebalance",
                "COMPLETING_REBALANCING": "CompletingRebalance"}.get(state, state), sizes

    def committed_offsets(self, group, topic, partitions):
        req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
        res = _result(self.adm.list_consumer_group_offsets([req])[group])
        out = [-1] * partitions
        for tp in res.topic_partitions:
            if tp.error is None and tp.offset >= 0 and 0 <= tp.partition < partitions:
                out[tp.partition] = tp.offset
        return out

    consumer_protocol = True  # librdkafka 2.12+ has group.protocol=consumer

    def new_group_consumer(self, group, topic, protocol):
        return GroupConsumer(self.bootstrap, group, topic, protocol)

    def new_resubscribing_consumer(self, group):
        return ResubscribingConsumer(self.bootstrap, group)

    def new_transform_member(self, group, topic, output, txn_id):
        return TransformMember(self.bootstrap, group, topic, output, txn_id)


if __name__ == "__main__":
    main(ConfluentAdapter, "confluent-kafka-python",
         "confluent-kafka %s (bundled librdkafka %s)" % (confluent_kafka.__version__, confluent_kafka.libversion()[0]))
