package gregor.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import gregor.compat.Main.Args;
import gregor.compat.Main.NotApplicable;
import gregor.compat.Main.Outcome;

/** The scenarios of compat-tests/scenarios.md, written with the official Java client. */
final class Scenarios {
    private Scenarios() {}

    private static final Duration POLL = Duration.ofMillis(100);
    /** How long a scenario waits for something that should happen (well inside run.py's 60 s). */
    private static final long WAIT_MS = 30_000;
    /** From run.py (README, "The adapter contract"): the topology and every topic's replication factor. */
    private static final String TOPOLOGY = System.getenv().getOrDefault("COMPAT_TOPOLOGY", "single");
    private static final short REPLICATION_FACTOR = Short.parseShort(System.getenv().getOrDefault("COMPAT_REPLICATION_FACTOR", "1"));
    /** leader-failover (scenarios.md): records produced, in rounds of this many, a pause between rounds. */
    private static final int FAILOVER_RECORDS = 2000, FAILOVER_ROUND = 50, FAILOVER_PAUSE_MS = 100;

    static Outcome run(Args a) throws Exception {
        return switch (a.scenario()) {
            case "admin-topics" -> adminTopics(a);
            case "produce-consume-none" -> produceConsume(a, "none");
            case "produce-consume-gzip" -> produceConsume(a, "gzip");
            case "produce-consume-snappy" -> produceConsume(a, "snappy");
            case "produce-consume-lz4" -> produceConsume(a, "lz4");
            case "produce-consume-zstd" -> produceConsume(a, "zstd");
            case "offsets-by-timestamp" -> offsetsByTimestamp(a);
            case "consumer-group" -> consumerGroup(a, "classic");
            case "consumer-group-848" -> consumerGroup(a, "consumer");
            case "idempotent-producer" -> idempotentProducer(a);
            case "transactions" -> transactions(a);
            case "configs" -> configs(a);
            case "delete-records" -> deleteRecords(a);
            case "leader-failover" -> leaderFailover(a);
            case "consume-transform-produce" -> consumeTransformProduce(a);
            // helper for the kafka-cli adapter: no CLI tool can set record timestamps
            case "_seed-offsets-by-timestamp" -> seedOffsetsByTimestamp(a);
            default -> throw new NotApplicable("scenario '" + a.scenario() + "' is not implemented by the java adapter");
        };
    }

    // ---------------------------------------------------------------- clients

    /**
     * The connection's security settings of the adapter contract: COMPAT_CLIENT_CONFIG, a Kafka
     * client.properties (security.protocol, ssl.*, sasl.*), is loaded into every client's properties.
     * Without it the client connects over PLAINTEXT, which is only right when COMPAT_SECURITY_PROTOCOL
     * says so.
     */
    static Properties secured() {
        Properties p = new Properties();
        String file = System.getenv("COMPAT_CLIENT_CONFIG");
        String protocol = System.getenv().getOrDefault("COMPAT_SECURITY_PROTOCOL", "PLAINTEXT");
        if (file == null || file.isEmpty()) {
            if (!protocol.equals("PLAINTEXT")) {
                throw new IllegalStateException("COMPAT_SECURITY_PROTOCOL=" + protocol + " without COMPAT_CLIENT_CONFIG");
            }
            return p;
        }
        try (java.io.Reader r = java.nio.file.Files.newBufferedReader(java.nio.file.Path.of(file))) {
            p.load(r);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("reading COMPAT_CLIENT_CONFIG " + file, e);
        }
        return p;
    }

    static Admin admin(Args a) {
        Properties p = secured();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap());
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "compat-java-admin");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        return Admin.create(p);
    }

    static KafkaProducer<byte[], byte[]> producer(Args a, Map<String, Object> extra) {
        Properties p = secured();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "compat-java-producer");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000);
        p.putAll(extra);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static KafkaConsumer<byte[], byte[]> consumer(Args a, Map<String, Object> extra) {
        Properties p = secured();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap());
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "compat-java-consumer");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        p.putAll(extra);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static void createTopic(Admin admin, String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, REPLICATION_FACTOR))).all().get(WAIT_MS, TimeUnit.MILLISECONDS);
        // wait until every partition has a leader in the metadata we get back
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (true) {
            try {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                if (d.partitions().size() == partitions && d.partitions().stream().allMatch(p -> p.leader() != null)) {
                    return;
                }
            } catch (ExecutionException e) {
                if (System.currentTimeMillis() > deadline) throw e;
            }
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("topic " + topic + " has no leaders");
            Thread.sleep(100);
        }
    }

    /** Sends records first..first+count-1 of the generator, to partition i % partitions. Returns their metadata. */
    static List<RecordMetadata> produce(KafkaProducer<byte[], byte[]> producer, String topic, int first, int count,
                                        int partitions, long tsStep) throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>(count);
        for (int i = first; i < first + count; i++) {
            futures.add(producer.send(new ProducerRecord<>(topic, i % partitions, Records.TS_BASE + tsStep * i,
                    Records.key(i), Records.value(i), Records.headers(i))));
        }
        producer.flush();
        List<RecordMetadata> out = new ArrayList<>(count);
        for (Future<RecordMetadata> f : futures) out.add(f.get(WAIT_MS, TimeUnit.MILLISECONDS));
        return out;
    }

    /** Reads one partition from its earliest offset up to its end offset (the LSO under read_committed). */
    static List<ConsumerRecord<byte[], byte[]>> readAll(Args a, TopicPartition tp, IsolationLevel isolation) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(a, Map.of(
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation.toString(),
                ConsumerConfig.CLIENT_ID_CONFIG, "compat-java-reader"))) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (c.position(tp) < end) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("reading " + tp + " stalled at offset " + c.position(tp) + " of " + end);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) out.add(r);
            }
            return out;
        }
    }

    /**
     * Checks records read back against the generator (index i at offset offsetBase+i, timestamps TS_BASE+tsStep*i)
     * and puts count, first/last offset and both digests into the outcome.
     */
    static void verifyAndDigest(Outcome o, List<ConsumerRecord<byte[], byte[]>> recs, int expectedCount, long tsStep) {
        Records.Digest d = new Records.Digest();
        int bad = 0;
        String firstBad = null;
        for (int n = 0; n < recs.size(); n++) {
            ConsumerRecord<byte[], byte[]> r = recs.get(n);
            d.add(r.offset(), r.key(), r.value(), r.headers(), r.timestamp());
            String why = null;
            if (r.offset() != n) why = "offset " + r.offset() + " at position " + n;
            else if (!java.util.Arrays.equals(r.key(), Records.key(n))) why = "key at offset " + n;
            else if (!java.util.Arrays.equals(r.value(), Records.value(n))) why = "value at offset " + n;
            else if (!Records.headerText(r.headers()).equals(Records.headerText(Records.headers(n)))) why = "headers at offset " + n;
            else if (r.timestamp() != Records.TS_BASE + tsStep * n) why = "timestamp at offset " + n + ": " + r.timestamp();
            else if (!"CreateTime".equals(r.timestampType().toString())) why = "timestamp type " + r.timestampType();
            if (why != null && bad++ == 0) firstBad = why;
        }
        o.put("count", recs.size());
        o.put("first_offset", recs.isEmpty() ? null : recs.get(0).offset());
        o.put("last_offset", recs.isEmpty() ? null : recs.get(recs.size() - 1).offset());
        o.put("sha256", d.full());
        o.put("sha256_kvh", d.kvh());
        o.expect("count", expectedCount, recs.size());
        o.check(bad == 0, bad + " records differ from what was produced (first: " + firstBad + ")");
    }

    // ---------------------------------------------------------------- scenarios

    static Outcome adminTopics(Args a) throws Exception {
        Outcome o = new Outcome();
        String t = a.topic();
        try (Admin admin = admin(a)) {
            admin.createTopics(List.of(new NewTopic(t, 3, REPLICATION_FACTOR))).all().get();
            o.put("create", "NONE");

            boolean listed = false;
            int partitions = -1;
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (System.currentTimeMillis() < deadline) {
                listed = admin.listTopics().names().get().contains(t);
                try {
                    partitions = admin.describeTopics(List.of(t)).allTopicNames().get().get(t).partitions().size();
                } catch (ExecutionException e) {
                    partitions = -1;
                }
                if (listed && partitions == 3) break;
                Thread.sleep(100);
            }
            o.put("listed", listed);
            o.put("partitions", partitions);
            o.expect("listed", true, listed);
            o.expect("partitions", 3, partitions);

            o.put("create_again_error", errorOf(() -> admin.createTopics(List.of(new NewTopic(t, 3, REPLICATION_FACTOR))).all().get()));
            o.put("create_invalid_error", errorOf(() -> admin.createTopics(List.of(new NewTopic("bad/name", 1, REPLICATION_FACTOR))).all().get()));
            o.put("delete", errorOf(() -> admin.deleteTopics(List.of(t)).all().get()));

            String after = "NONE";
            deadline = System.currentTimeMillis() + WAIT_MS;
            while (System.currentTimeMillis() < deadline) {
                after = errorOf(() -> admin.describeTopics(List.of(t)).allTopicNames().get());
                if (!after.equals("NONE")) break;
                Thread.sleep(100);
            }
            o.put("describe_after_delete_error", after);
        }
        o.expect("create_again_error", "TOPIC_ALREADY_EXISTS", o.observed.get("create_again_error"));
        o.expect("create_invalid_error", "INVALID_TOPIC_EXCEPTION", o.observed.get("create_invalid_error"));
        o.expect("delete", "NONE", o.observed.get("delete"));
        o.expect("describe_after_delete_error", "UNKNOWN_TOPIC_OR_PARTITION", o.observed.get("describe_after_delete_error"));
        return o;
    }

    interface Call {
        void run() throws Exception;
    }

    /** "NONE" when the call succeeds, else Kafka's error name. */
    static String errorOf(Call c) {
        try {
            c.run();
            return "NONE";
        } catch (Exception e) {
            return Main.errorName(e);
        }
    }

    static Outcome produceConsume(Args a, String codec) throws Exception {
        Outcome o = new Outcome();
        String t = a.topic();
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin admin = admin(a)) {
            createTopic(admin, t, 1);
        }
        List<RecordMetadata> md;
        try (KafkaProducer<byte[], byte[]> p = producer(a, Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec))) {
            md = produce(p, t, 0, 1000, 1, 1);
        }
        int misplaced = 0;
        for (int i = 0; i < md.size(); i++) if (md.get(i).offset() != i) misplaced++;
        o.check(misplaced == 0, misplaced + " produce acknowledgements carry an unexpected offset");
        verifyAndDigest(o, readAll(a, tp, IsolationLevel.READ_UNCOMMITTED), 1000, 1);
        o.put("timestamp_type", "CreateTime");
        o.expect("first_offset", 0L, o.observed.get("first_offset"));
        o.expect("last_offset", 999L, o.observed.get("last_offset"));
        return o;
    }

    static Outcome seedOffsetsByTimestamp(Args a) throws Exception {
        Outcome o = new Outcome();
        try (Admin admin = admin(a)) {
            createTopic(admin, a.topic(), 1);
        }
        try (KafkaProducer<byte[], byte[]> p = producer(a, Map.of())) {
            List<RecordMetadata> md = produce(p, a.topic(), 0, 100, 1, 10);
            o.put("produced", md.size());
        }
        return o;
    }

    static Outcome offsetsByTimestamp(Args a) throws Exception {
        Outcome o = new Outcome();
        String t = a.topic();
        TopicPartition tp = new TopicPartition(t, 0);
        seedOffsetsByTimestamp(a);
        try (Admin admin = admin(a)) {
            Map<String, OffsetSpec> specs = new java.util.LinkedHashMap<>();
            specs.put("earliest", OffsetSpec.earliest());
            specs.put("latest", OffsetSpec.latest());
            specs.put("by_timestamp", OffsetSpec.forTimestamp(Records.TS_BASE + 505));
            specs.put("max_timestamp", OffsetSpec.maxTimestamp());
            specs.put("past_end", OffsetSpec.forTimestamp(Records.TS_BASE + 10_000));
            for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
                ListOffsetsResult.ListOffsetsResultInfo info =
                        admin.listOffsets(Map.of(tp, e.getValue())).partitionResult(tp).get();
                o.put(e.getKey(), info.offset());
            }
        }
        o.expect("earliest", 0L, o.observed.get("earliest"));
        o.expect("latest", 100L, o.observed.get("latest"));
        o.expect("by_timestamp", 51L, o.observed.get("by_timestamp"));
        o.expect("max_timestamp", 99L, o.observed.get("max_timestamp"));
        o.expect("past_end", -1L, o.observed.get("past_end"));
        return o;
    }

    // consumerGroup runs the consumer-group scenario with the group protocol given: "classic"
    // (JoinGroup/SyncGroup) or "consumer" (KIP-848, ConsumerGroupHeartbeat, the broker's default
    // server assignor).
    static Outcome consumerGroup(Args a, String protocol) throws Exception {
        Outcome o = new Outcome();
        String t = a.topic();
        String group = t + "-g";
        final int partitions = 6;
        try (Admin admin = admin(a)) {
            createTopic(admin, t, partitions);

            // phase 1: three members, stable with 2 partitions each, then 600 records between them
            Set<Integer> seen = ConcurrentHashMap.newKeySet();
            AtomicIntegerArray perConsumer = new AtomicIntegerArray(3);
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int n = 0; n < 3; n++) {
                final int id = n;
                Thread th = new Thread(() -> {
                    try (KafkaConsumer<byte[], byte[]> c = consumer(a, Map.of(
                            ConsumerConfig.GROUP_ID_CONFIG, group,
                            ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol,
                            ConsumerConfig.CLIENT_ID_CONFIG, "compat-java-member-" + id))) {
                        c.subscribe(List.of(t), new ConsumerRebalanceListener() {
                            @Override
                            public void onPartitionsRevoked(java.util.Collection<TopicPartition> parts) {
                                commitQuietly(c);
                            }

                            @Override
                            public void onPartitionsAssigned(java.util.Collection<TopicPartition> parts) {}
                        });
                        while (!stop.get()) {
                            ConsumerRecords<byte[], byte[]> recs = c.poll(POLL);
                            for (ConsumerRecord<byte[], byte[]> r : recs) {
                                seen.add(Records.indexOf(r.key()));
                                perConsumer.incrementAndGet(id);
                            }
                            if (!recs.isEmpty()) commitQuietly(c);
                        }
                        commitQuietly(c);
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }, "member-" + n);
                th.start();
                threads.add(th);
            }
            try {
                boolean stable = waitFor(() -> {
                    ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                    if (d.groupState() != GroupState.STABLE || d.members().size() != 3) return false;
                    for (MemberDescription m : d.members()) {
                        if (m.assignment().topicPartitions().size() != 2) return false;
                    }
                    return true;
                });
                o.put("members_stable", stable ? 3 : 0);
                o.check(stable, "the group never became Stable with 3 members of 2 partitions each");
                try (KafkaProducer<byte[], byte[]> p = producer(a, Map.of())) {
                    produce(p, t, 0, 600, partitions, 1);
                }
                boolean all = waitFor(() -> seen.size() >= 600 || failure.get() != null);
                o.check(all, "the members consumed only " + seen.size() + " of 600 records");
                // every member commits after each poll: wait until the commits cover all 600
                waitFor(() -> sum(committed(admin, group, t, partitions)) >= 600 || failure.get() != null);
            } finally {
                stop.set(true);
                for (Thread th : threads) th.join(WAIT_MS);
            }
            if (failure.get() != null) throw new ExecutionException("a group member failed", failure.get());
            List<Integer> counts = new ArrayList<>();
            for (int n = 0; n < 3; n++) counts.add(perConsumer.get(n));
            Collections.sort(counts);
            o.put("distinct_consumed", seen.size());
            o.put("per_consumer", counts);
            List<Long> committed = committed(admin, group, t, partitions);
            o.put("committed", committed);
            o.expect("distinct_consumed", 600, seen.size());
            o.expect("per_consumer", List.of(200, 200, 200), counts);
            o.expect("committed", List.of(100L, 100L, 100L, 100L, 100L, 100L), committed);

            // phase 2: a new member resumes from the commits: nothing old, then exactly the 10 new records
            int old = 0, fresh = 0;
            try (KafkaConsumer<byte[], byte[]> c = consumer(a, Map.of(
                    ConsumerConfig.GROUP_ID_CONFIG, group,
                    ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol,
                    ConsumerConfig.CLIENT_ID_CONFIG, "compat-java-member-4"))) {
                c.subscribe(List.of(t));
                long deadline = System.currentTimeMillis() + WAIT_MS;
                while (c.assignment().size() < partitions && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) old++;
                }
                o.check(c.assignment().size() == partitions, "the new member got " + c.assignment().size() + " partitions");
                long quiet = System.currentTimeMillis() + 2000;
                while (System.currentTimeMillis() < quiet) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) old++;
                }
                try (KafkaProducer<byte[], byte[]> p = producer(a, Map.of())) {
                    produce(p, t, 600, 10, partitions, 1);
                }
                deadline = System.currentTimeMillis() + WAIT_MS;
                while (fresh < 10 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                        if (Records.indexOf(r.key()) >= 600) fresh++;
                        else old++;
                    }
                }
                c.commitSync();
            }
            o.put("resumed_old", old);
            o.put("new_seen", fresh);
            List<Long> after = committed(admin, group, t, partitions);
            o.put("committed_after", after);
            o.expect("resumed_old", 0, old);
            o.expect("new_seen", 10, fresh);
            o.expect("committed_after", List.of(102L, 102L, 102L, 102L, 101L, 101L), after);
        }
        return o;
    }

    static void commitQuietly(KafkaConsumer<byte[], byte[]> c) {
        try {
            c.commitSync();
        } catch (Exception e) {
            // a rebalance got in the way; the next owner re-reads from the last commit
        }
    }

    static List<Long> committed(Admin admin, String group, String topic, int partitions) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> m =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        List<Long> out = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            OffsetAndMetadata om = m.get(new TopicPartition(topic, p));
            out.add(om == null ? -1L : om.offset());
        }
        return out;
    }

    static long sum(List<Long> l) {
        long s = 0;
        for (long v : l) s += Math.max(0, v);
        return s;
    }

    interface Condition {
        boolean test() throws Exception;
    }

    static boolean waitFor(Condition c) throws InterruptedException {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (System.currentTimeMillis() < deadline) {
            try {
                if (c.test()) return true;
            } catch (Exception e) {
                // not yet
            }
            Thread.sleep(100);
        }
        return false;
    }

    static Outcome idempotentProducer(Args a) throws Exception {
        Outcome o = new Outcome();
        String t = a.topic();
        try (Admin admin = admin(a)) {
            createTopic(admin, t, 1);
        }
        try (KafkaProducer<byte[], byte[]> p = producer(a, Map.of(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5,
                ProducerConfig.BATCH_SIZE_CONFIG, 4096))) {
            produce(p, t, 0, 1000, 1, 1);
        }
        verifyAndDigest(o, readAll(a, new TopicPartition(t, 0), IsolationLevel.READ_UNCOMMITTED), 1000, 1);
        o.expect("first_offset", 0L, o.observed.get("first_offset"));
        o.expect("last_offset", 999L, o.observed.get("last_offset"));
        return o;
    }

    /**
     * leader-failover: one idempotent acks=all producer sends rounds while run.py kills the partition's
     * leader; it must ride the failover by itself (retries within the default delivery timeout), and every
     * record is then read back exactly once, in order (verifyAndDigest wants record i at offset i).
     */
    static Outcome leaderFailover(Args a) throws Exception {
        if (!TOPOLOGY.equals("cluster")) throw new NotApplicable("leader-failover needs a cluster (run.py --topology cluster)");
        Outcome o = new Outcome();
        String t = a.topic();
        try (Admin admin = admin(a)) {
            createTopic(admin, t, 1);
        }
        try (KafkaProducer<byte[], byte[]> p = producer(a, Map.of(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5,
                ProducerConfig.BATCH_SIZE_CONFIG, 4096,
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000))) {
            for (int first = 0; first < FAILOVER_RECORDS; first += FAILOVER_ROUND) {
                produceWithin(p, t, first, FAILOVER_ROUND, 120_000);
                Thread.sleep(FAILOVER_PAUSE_MS);
            }
        }
        verifyAndDigest(o, readAll(a, new TopicPartition(t, 0), IsolationLevel.READ_UNCOMMITTED), FAILOVER_RECORDS, 1);
        return o;
    }

    /** As produce (one partition, timestamps 1 ms apart), waiting up to waitMs for each acknowledgement. */
    static void produceWithin(KafkaProducer<byte[], byte[]> producer, String topic, int first, int count, long waitMs)
            throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>(count);
        for (int i = first; i < first + count; i++) {
            futures.add(producer.send(new ProducerRecord<>(topic, 0, Records.TS_BASE + i,
                    Records.key(i), Records.value(i), Records.headers(i))));
        }
        producer.flush();
        for (Future<RecordMetadata> f : futures) f.get(waitMs, TimeUnit.MILLISECONDS);
    }

    static Outcome transactions(Args a) throws Exception {
        Outcome o = new Outcome();
        String t = a.topic();
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin admin = admin(a)) {
            createTopic(admin, t, 1);
        }
        try (KafkaProducer<byte[], byte[]> p = producer(a, Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, t + "-tx",
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 30_000))) {
            p.initTransactions();
            p.beginTransaction();
            produce(p, t, 0, 100, 1, 1);
            p.commitTransaction();
            p.beginTransaction();
            produce(p, t, 100, 100, 1, 1);
            p.abortTransaction();
        }
        List<ConsumerRecord<byte[], byte[]>> committed = readAll(a, tp, IsolationLevel.READ_COMMITTED);
        List<ConsumerRecord<byte[], byte[]>> uncommitted = readAll(a, tp, IsolationLevel.READ_UNCOMMITTED);
        int committedOk = 0, abortedSeen = 0;
        for (ConsumerRecord<byte[], byte[]> r : committed) {
            int i = Records.indexOf(r.key());
            if (i >= 0 && i < 100) committedOk++;
            else abortedSeen++;
        }
        long endOffset, lso;
        try (KafkaConsumer<byte[], byte[]> c = consumer(a, Map.of())) {
            endOffset = c.endOffsets(List.of(tp)).get(tp);
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer(a, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            lso = c.endOffsets(List.of(tp)).get(tp);
        }
        o.put("committed_seen", committed.size());
        o.put("aborted_seen", abortedSeen);
        o.put("read_uncommitted_seen", uncommitted.size());
        o.put("end_offset", endOffset);
        o.put("last_stable_offset", lso);
        o.expect("committed_seen", 100, committed.size());
        o.expect("committed records are records 0..99", 100, committedOk);
        o.expect("aborted_seen", 0, abortedSeen);
        o.expect("read_uncommitted_seen", 200, uncommitted.size());
        o.expect("end_offset", 202L, endOffset);
        o.expect("last_stable_offset", 202L, lso);
        return o;
    }

    static Outcome configs(Args a) throws Exception {
        Outcome o = new Outcome();
        String t = a.topic();
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, t);
        try (Admin admin = admin(a)) {
            createTopic(admin, t, 1);
            ConfigEntry before = admin.describeConfigs(List.of(res)).all().get().get(res).get("retention.ms");
            o.put("before", before == null ? null : before.value());
            o.put("before_source", before == null ? null : before.source().name());
            admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET))))
                    .all().get();
            AtomicReference<ConfigEntry> after = new AtomicReference<>();
            waitFor(() -> {
                Config c = admin.describeConfigs(List.of(res)).all().get().get(res);
                after.set(c.get("retention.ms"));
                return after.get() != null && "3600000".equals(after.get().value());
            });
            ConfigEntry e = after.get();
            o.put("after", e == null ? null : e.value());
            o.put("after_source", e == null ? null : e.source().name());
        }
        o.expect("before", "604800000", o.observed.get("before"));
        o.expect("before_source", "DEFAULT_CONFIG", o.observed.get("before_source"));
        o.expect("after", "3600000", o.observed.get("after"));
        o.expect("after_source", "DYNAMIC_TOPIC_CONFIG", o.observed.get("after_source"));
        return o;
    }

    static Outcome deleteRecords(Args a) throws Exception {
        Outcome o = new Outcome();
        String t = a.topic();
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin admin = admin(a)) {
            createTopic(admin, t, 1);
            try (KafkaProducer<byte[], byte[]> p = producer(a, Map.of())) {
                produce(p, t, 0, 100, 1, 1);
            }
            DeletedRecords dr = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(40)))
                    .lowWatermarks().get(tp).get();
            o.put("low_watermark", dr.lowWatermark());
            Map<String, Long> offs = new HashMap<>();
            offs.put("earliest", admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset());
            offs.put("latest", admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get().offset());
            o.put("earliest", offs.get("earliest"));
            o.put("latest", offs.get("latest"));
        }
        List<ConsumerRecord<byte[], byte[]>> recs = readAll(a, tp, IsolationLevel.READ_UNCOMMITTED);
        o.put("first_consumed", recs.isEmpty() ? null : recs.get(0).offset());
        o.put("consumed", recs.size());
        o.expect("low_watermark", 40L, o.observed.get("low_watermark"));
        o.expect("earliest", 40L, o.observed.get("earliest"));
        o.expect("latest", 100L, o.observed.get("latest"));
        o.expect("first_consumed", 40L, o.observed.get("first_consumed"));
        o.expect("consumed", 60, recs.size());
        return o;
    }

    // ------------------------------------------------ consume-transform-produce

    /** consume-transform-produce (scenarios.md): input records, at most this many a poll (and a transaction). */
    private static final int CTP_RECORDS = 3000, CTP_PARTITIONS = 3, CTP_MAX_POLL = 200;
    /**
     * The late member joins once this many records are committed: fewer than 1000 by then (the check follows a
     * round, in which the two members commit at most 800), so no partition of 1000 is done. The busier of members
     * 0 and 1 leaves once the late member has committed records.
     */
    private static final int CTP_JOIN_AT = 200;
    private static final long CTP_LOOP_MS = 40_000;
    private static final Duration CTP_BACK_TO_BACK_POLL = Duration.ofMillis(10);

    /** The transform: the value upper-cased (the generator's values are lower-case ASCII letters). */
    static byte[] upper(byte[] v) {
        byte[] out = v.clone();
        for (int j = 0; j < out.length; j++) {
            if (out[j] >= 'a' && out[j] <= 'z') out[j] -= 32;
        }
        return out;
    }

    /** One member of the group: a read_committed consumer and a transactional producer of its own. */
    static final class TransformMember implements AutoCloseable {
        final KafkaConsumer<byte[], byte[]> consumer;
        final KafkaProducer<byte[], byte[]> producer;
        final String output;
        int committed, transactions, aborted;
        private boolean closed, held;

        TransformMember(Args a, String group, String input, String output, String txnId, int n) {
            this.output = output;
            producer = producer(a, Map.of(
                    ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId,
                    ProducerConfig.CLIENT_ID_CONFIG, "compat-java-ctp-producer-" + n,
                    // a member that dies inside a transaction must not hold back the output's LSO for long
                    ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 10_000));
            producer.initTransactions();
            consumer = consumer(a, Map.of(
                    ConsumerConfig.GROUP_ID_CONFIG, group,
                    ConsumerConfig.CLIENT_ID_CONFIG, "compat-java-ctp-member-" + n,
                    ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                    ConsumerConfig.MAX_POLL_RECORDS_CONFIG, CTP_MAX_POLL,
                    ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1000));
            consumer.subscribe(List.of(input), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(java.util.Collection<TopicPartition> parts) {}

                @Override
                public void onPartitionsAssigned(java.util.Collection<TopicPartition> parts) {
                    System.err.println("ctp: member " + n + " is assigned " + parts);
                    if (held) consumer.pause(parts); // a rebalance must not release a held member
                }
            });
        }

        /**
         * One turn: poll once and, if records came, one transaction with their transforms and the consumed
         * offsets. Returns the records committed (0 when none came or the transaction was aborted); throws on
         * an error that is fatal for the producer (fenced, ...).
         */
        int step(Duration poll) {
            ConsumerRecords<byte[], byte[]> recs = consumer.poll(poll);
            if (recs.isEmpty()) return 0;
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            Map<TopicPartition, Long> first = new HashMap<>();
            producer.beginTransaction();
            try {
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    producer.send(new ProducerRecord<>(output, r.partition(), r.timestamp(), r.key(), upper(r.value()),
                            r.headers()));
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    first.putIfAbsent(tp, r.offset());
                    offsets.put(tp, new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
            } catch (org.apache.kafka.common.errors.ProducerFencedException
                     | org.apache.kafka.common.errors.FencedInstanceIdException
                     | org.apache.kafka.common.errors.OutOfOrderSequenceException
                     | org.apache.kafka.common.errors.AuthorizationException
                     | org.apache.kafka.common.errors.UnsupportedVersionException e) {
                throw e;
            } catch (org.apache.kafka.common.KafkaException e) {
                // abortable (a rebalance got in the way: CommitFailedException, ...): abort, and read again
                // from where the aborted transaction began what this member still owns
                System.err.println("ctp: aborting a transaction of " + recs.count() + " records: " + Main.describe(e));
                producer.abortTransaction();
                aborted++;
                Set<TopicPartition> owned = consumer.assignment();
                for (Map.Entry<TopicPartition, Long> f : first.entrySet()) {
                    if (owned.contains(f.getKey())) consumer.seek(f.getKey(), f.getValue());
                }
                return 0;
            }
            committed += recs.count();
            transactions++;
            return recs.count();
        }

        /** Pauses (or resumes) fetching from what the member holds; a paused member still takes part in rebalances. */
        void hold(boolean pause) {
            if (closed) return;
            held = pause;
            if (pause) consumer.pause(consumer.assignment());
            else consumer.resume(consumer.assignment());
        }

        @Override
        public void close() {
            if (closed) return;
            closed = true;
            try {
                consumer.close();
            } finally {
                producer.close(Duration.ofSeconds(5));
            }
        }
    }

    static Outcome consumeTransformProduce(Args a) throws Exception {
        Outcome o = new Outcome();
        String in = a.topic(), out = in + "-out", group = in + "-g";
        List<TransformMember> members = new ArrayList<>();
        List<TransformMember> active = new ArrayList<>();
        List<String> fatal = new ArrayList<>();
        try (Admin admin = admin(a)) {
            createTopic(admin, in, CTP_PARTITIONS);
            createTopic(admin, out, CTP_PARTITIONS);
            try (KafkaProducer<byte[], byte[]> p = producer(a, Map.of())) {
                produce(p, in, 0, CTP_RECORDS, CTP_PARTITIONS, 1);
            }
            List<Long> ends = new ArrayList<>();
            try (KafkaConsumer<byte[], byte[]> c = consumer(a, Map.of())) {
                Map<TopicPartition, Long> m = c.endOffsets(partitions(in));
                for (TopicPartition tp : partitions(in)) ends.add(m.get(tp));
            }
            o.put("input_end_offsets", ends);

            int committed = 0;
            boolean leftMidWay = false, left = false;
            List<Long> groupCommitted = List.of();
            try {
                // A member that joins holds the others (they poll, so that they rejoin, but fetch nothing) until
                // it has partitions: else the members already there may do all the work before it is in.
                int joiner = 1;
                for (int n = 0; n < 2; n++) {
                    members.add(new TransformMember(a, group, in, out, in + "-tx-" + n, n));
                    active.add(members.get(n));
                }
                members.get(0).hold(true);
                long deadline = System.currentTimeMillis() + CTP_LOOP_MS;
                long nextCheck = 0;
                while (System.currentTimeMillis() < deadline && !active.isEmpty()) {
                    for (TransformMember m : new ArrayList<>(active)) {
                        try {
                            // a turn is up to two transactions back to back: the second begins as soon as the
                            // first is committed, as a member that does not wait between transactions does
                            int c = m.step(POLL);
                            if (c > 0) c += m.step(CTP_BACK_TO_BACK_POLL);
                            committed += c;
                        } catch (Exception e) {
                            int n = members.indexOf(m);
                            System.err.println("ctp: member " + n + " failed:");
                            e.printStackTrace();
                            fatal.add("member " + n + ": " + Main.errorName(e) + " (" + Main.describe(e) + ")");
                            active.remove(m);
                            m.close();
                        }
                    }
                    if (joiner >= 0 && (members.get(joiner).closed || !members.get(joiner).consumer.assignment().isEmpty())) {
                        System.err.println("ctp: member " + joiner + " has partitions at " + committed + " committed; the others resume");
                        for (TransformMember m : active) m.hold(false);
                        joiner = -1;
                    }
                    if (members.size() == 2 && committed >= CTP_JOIN_AT) {
                        System.err.println("ctp: member 2 joins at " + committed + " committed");
                        for (TransformMember m : active) m.hold(true);
                        members.add(new TransformMember(a, group, in, out, in + "-tx-2", 2));
                        active.add(members.get(2));
                        joiner = 2;
                    }
                    if (!left && members.size() == 3 && members.get(2).committed > 0) {
                        // the one of members 0 and 1 that has done more leaves, handing its partitions on
                        int leaver = members.get(0).committed >= members.get(1).committed ? 0 : 1;
                        System.err.println("ctp: member " + leaver + " leaves at " + committed + " committed");
                        left = true;
                        leftMidWay = committed < CTP_RECORDS;
                        active.remove(members.get(leaver));
                        members.get(leaver).close();
                    }
                    if (committed >= CTP_RECORDS && System.currentTimeMillis() >= nextCheck) {
                        groupCommitted = committed(admin, group, in, CTP_PARTITIONS);
                        if (groupCommitted.equals(ends)) break;
                        nextCheck = System.currentTimeMillis() + 500;
                    }
                }
            } finally {
                for (TransformMember m : members) {
                    try {
                        m.close();
                    } catch (Exception e) {
                        System.err.println("ctp: closing a member: " + Main.describe(e));
                    }
                }
            }
            groupCommitted = committed(admin, group, in, CTP_PARTITIONS);

            // read the output back under read_committed
            int[] seen = new int[CTP_RECORDS];
            int count = 0, bad = 0;
            String firstBad = null;
            for (TopicPartition tp : partitions(out)) {
                for (ConsumerRecord<byte[], byte[]> r : readAll(a, tp, IsolationLevel.READ_COMMITTED)) {
                    count++;
                    int i = Records.indexOf(r.key());
                    String why = null;
                    if (i < 0 || i >= CTP_RECORDS) why = "key " + Records.text(r.key());
                    else if (r.partition() != i % CTP_PARTITIONS) why = "record " + i + " in partition " + r.partition();
                    else if (!java.util.Arrays.equals(r.value(), upper(Records.value(i)))) why = "value of record " + i;
                    else if (!Records.headerText(r.headers()).equals(Records.headerText(Records.headers(i)))) why = "headers of record " + i;
                    else if (r.timestamp() != Records.timestamp(i)) why = "timestamp of record " + i;
                    if (why != null) {
                        if (bad++ == 0) firstBad = why;
                        continue;
                    }
                    seen[i]++;
                }
            }
            int distinct = 0, duplicates = 0;
            for (int s : seen) {
                if (s > 0) distinct++;
                if (s > 1) duplicates += s - 1;
            }
            int missing = CTP_RECORDS - distinct;
            List<Integer> per = new ArrayList<>();
            int transactions = 0, aborted = 0;
            for (TransformMember m : members) {
                per.add(m.committed);
                transactions += m.transactions;
                aborted += m.aborted;
            }
            boolean late = members.size() == 3 && members.get(2).committed > 0;
            o.put("output_count", count);
            o.put("distinct", distinct);
            o.put("duplicates", duplicates);
            o.put("missing", missing);
            o.put("transformed_ok", bad == 0);
            o.put("exactly_once", duplicates == 0 && missing == 0 && bad == 0);
            o.put("committed", groupCommitted);
            o.put("members", members.size());
            o.put("late_member_processed", late);
            o.put("left_mid_way", leftMidWay);
            o.put("per_member", per);
            o.put("transactions", transactions);
            o.put("aborted_transactions", aborted);
            o.check(fatal.isEmpty(), "fatal member errors: " + String.join("; ", fatal));
            o.expect("input_end_offsets", List.of(1000L, 1000L, 1000L), ends);
            o.expect("output_count", CTP_RECORDS, count);
            o.expect("duplicates", 0, duplicates);
            o.expect("missing", 0, missing);
            o.check(bad == 0, bad + " output records are not the transform of an input record (first: " + firstBad + ")");
            o.expect("committed", ends, groupCommitted);
            o.expect("members", 3, members.size());
            o.check(late, "the late member committed no records");
            o.check(leftMidWay, "no member left while records remained");
        }
        return o;
    }

    static List<TopicPartition> partitions(String topic) {
        List<TopicPartition> out = new ArrayList<>();
        for (int p = 0; p < CTP_PARTITIONS; p++) out.add(new TopicPartition(topic, p));
        return out;
    }
}
