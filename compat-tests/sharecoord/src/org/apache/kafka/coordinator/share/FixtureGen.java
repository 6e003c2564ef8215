// Writes the fixtures of Gregor's coordinator/share tests with Kafka
// 4.4.0's own classes: records serialized by ShareCoordinatorRecordSerde,
// PersisterStateBatchCombiner's results, and random operation sequences
// run on a ShareCoordinatorShard (its answers and records). It lives in
// Kafka's package only to reach the shard's package-private constructor.
//
// Usage: FixtureGen <testdata dir>
package org.apache.kafka.coordinator.share;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.Set;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.message.DeleteShareGroupStateRequestData;
import org.apache.kafka.common.message.DeleteShareGroupStateResponseData;
import org.apache.kafka.common.message.InitializeShareGroupStateRequestData;
import org.apache.kafka.common.message.InitializeShareGroupStateResponseData;
import org.apache.kafka.common.message.ReadShareGroupStateRequestData;
import org.apache.kafka.common.message.ReadShareGroupStateResponseData;
import org.apache.kafka.common.message.ReadShareGroupStateSummaryRequestData;
import org.apache.kafka.common.message.ReadShareGroupStateSummaryResponseData;
import org.apache.kafka.common.message.WriteShareGroupStateRequestData;
import org.apache.kafka.common.message.WriteShareGroupStateResponseData;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataDelta;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorResult;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotKey;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotValue;
import org.apache.kafka.coordinator.share.generated.ShareUpdateKey;
import org.apache.kafka.coordinator.share.generated.ShareUpdateValue;
import org.apache.kafka.coordinator.share.metrics.ShareCoordinatorMetrics;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.share.SharePartitionKey;
import org.apache.kafka.server.share.persister.PersisterStateBatch;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.timeline.SnapshotRegistry;

public class FixtureGen {
    static final ShareCoordinatorRecordSerde SERDE = new ShareCoordinatorRecordSerde();

    static String hex(byte[] b) {
        if (b == null) return "nil";
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.length() == 0 ? "-" : sb.toString();
    }

    static String hexs(String s) {
        return s == null ? "nil" : hex(s.getBytes(StandardCharsets.UTF_8));
    }

    static String rec(CoordinatorRecord r) {
        return "rec " + hex(SERDE.serializeKey(r)) + " " + hex(SERDE.serializeValue(r));
    }

    static final Uuid T1 = new Uuid(0x0102030405060708L, 0x090a0b0c0d0e0f10L);
    static final Uuid T2 = new Uuid(0x7f00000000000001L, 0xff000000000000feL);
    static final Uuid T3 = new Uuid(0x1111111111111111L, 0x2222222222222222L); // not in the image

    static String tid(Uuid u) {
        return String.format("%016x%016x", u.getMostSignificantBits(), u.getLeastSignificantBits());
    }

    // records.txt: each line "name key value".
    static void records(Path dir) throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(dir.resolve("records.txt")))) {
            w.println("# Records serialized by Kafka 4.4.0's ShareCoordinatorRecordSerde: name, key hex, value hex (nil: tombstone).");
            List<ShareSnapshotValue.StateBatch> sb = List.of(
                new ShareSnapshotValue.StateBatch().setFirstOffset(10).setLastOffset(19).setDeliveryState((byte) 0).setDeliveryCount((short) 1),
                new ShareSnapshotValue.StateBatch().setFirstOffset(20).setLastOffset(20).setDeliveryState((byte) 2).setDeliveryCount((short) 3),
                new ShareSnapshotValue.StateBatch().setFirstOffset(Long.MAX_VALUE - 1).setLastOffset(Long.MAX_VALUE).setDeliveryState((byte) 4).setDeliveryCount(Short.MAX_VALUE));
            ShareSnapshotKey sk = new ShareSnapshotKey().setGroupId("group-1").setTopicId(T1).setPartition(7);
            w.println("snapshot " + rec(CoordinatorRecord.record(sk, new ApiMessageAndVersion(new ShareSnapshotValue()
                .setSnapshotEpoch(3).setStateEpoch(2).setLeaderEpoch(5).setStartOffset(10).setDeliveryCompleteCount(1)
                .setCreateTimestamp(1700000000000L).setWriteTimestamp(1700000005000L).setStateBatches(sb), (short) 0))).substring(4));
            w.println("snapshot-no-dcc " + rec(CoordinatorRecord.record(sk, new ApiMessageAndVersion(new ShareSnapshotValue()
                .setSnapshotEpoch(0).setStateEpoch(0).setLeaderEpoch(-1).setStartOffset(-1)
                .setCreateTimestamp(0).setWriteTimestamp(0).setStateBatches(List.of()), (short) 0))).substring(4));
            ShareSnapshotKey uk = new ShareSnapshotKey().setGroupId("gr\u00fcppe-\ud83d\ude00").setTopicId(T2).setPartition(0);
            w.println("snapshot-unicode " + rec(CoordinatorRecord.record(uk, new ApiMessageAndVersion(new ShareSnapshotValue()
                .setSnapshotEpoch(Integer.MAX_VALUE).setStateEpoch(Integer.MIN_VALUE).setLeaderEpoch(0).setStartOffset(Long.MIN_VALUE)
                .setDeliveryCompleteCount(Integer.MAX_VALUE).setCreateTimestamp(-1).setWriteTimestamp(Long.MAX_VALUE)
                .setStateBatches(sb.subList(0, 1)), (short) 0))).substring(4));
            List<ShareUpdateValue.StateBatch> ub = List.of(
                new ShareUpdateValue.StateBatch().setFirstOffset(0).setLastOffset(99).setDeliveryState((byte) 2).setDeliveryCount((short) 1),
                new ShareUpdateValue.StateBatch().setFirstOffset(100).setLastOffset(105).setDeliveryState((byte) 0).setDeliveryCount((short) 2));
            ShareUpdateKey k = new ShareUpdateKey().setGroupId("group-1").setTopicId(T1).setPartition(7);
            w.println("update " + rec(CoordinatorRecord.record(k, new ApiMessageAndVersion(new ShareUpdateValue()
                .setSnapshotEpoch(3).setLeaderEpoch(6).setStartOffset(0).setDeliveryCompleteCount(100).setStateBatches(ub), (short) 0))).substring(4));
            w.println("update-no-dcc " + rec(CoordinatorRecord.record(k, new ApiMessageAndVersion(new ShareUpdateValue()
                .setSnapshotEpoch(0).setLeaderEpoch(-1).setStartOffset(-1).setStateBatches(List.of()), (short) 0))).substring(4));
            w.println("tombstone " + rec(CoordinatorRecord.tombstone(new ShareSnapshotKey().setGroupId("").setTopicId(Uuid.ZERO_UUID).setPartition(0))).substring(4));
        }
    }

    // partitionfor.txt: "coordinatorKeyHex numPartitions partition".
    static void partitionFor(Path dir, Random rnd) throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(dir.resolve("partitionfor.txt")))) {
            w.println("# Utils.abs(SharePartitionKey.asCoordinatorKey(...).hashCode()) % n, as ShareCoordinatorService.partitionFor: group hex, topic id hex, partition, n, result.");
            String[] groups = {"g", "share-group", "gr\u00fcppe", "\ud83d\ude00x", "", "a:b:c"};
            for (int i = 0; i < 200; i++) {
                String g = groups[rnd.nextInt(groups.length)] + (i % 3 == 0 ? "" : Integer.toString(rnd.nextInt(100000)));
                Uuid t = new Uuid(rnd.nextLong(), rnd.nextLong());
                int p = rnd.nextInt(1000);
                int n = new int[]{1, 3, 50, 7}[rnd.nextInt(4)];
                SharePartitionKey key = SharePartitionKey.getInstance(g, t, p);
                int r = Utils.abs(key.asCoordinatorKey().hashCode()) % n;
                w.println(hexs(g) + " " + tid(t) + " " + p + " " + n + " " + r);
            }
        }
    }

    // hashorder.txt: the order java.util.HashMap iterates keys put in a
    // given order (the order ShareCoordinatorService's answers come in):
    // "uuid" or "int", the keys, then the indexes of their first puts in
    // iteration order.
    static void hashOrder(Path dir, Random rnd) throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(dir.resolve("hashorder.txt")))) {
            w.println("# java.util.HashMap iteration order: kind, keys put in order, indexes of the first puts as iterated.");
            for (int i = 0; i < 300; i++) {
                int n = 1 + rnd.nextInt(i % 10 == 0 ? 60 : 20);
                List<Uuid> keys = new ArrayList<>();
                for (int j = 0; j < n; j++) {
                    if (j > 0 && rnd.nextInt(6) == 0) {
                        keys.add(keys.get(rnd.nextInt(j)));
                    } else if (i % 3 == 0) {
                        // Colliding hashes: bins fill and the table grows early.
                        keys.add(new Uuid(0, (long) rnd.nextInt(64) << 4));
                    } else {
                        keys.add(new Uuid(rnd.nextLong(), rnd.nextLong()));
                    }
                }
                Map<Uuid, Integer> m = new HashMap<>();
                StringBuilder in = new StringBuilder();
                for (int j = 0; j < n; j++) {
                    m.putIfAbsent(keys.get(j), j);
                    if (j > 0) in.append(',');
                    in.append(tid(keys.get(j)));
                }
                StringBuilder out = new StringBuilder();
                for (Map.Entry<Uuid, Integer> e : m.entrySet()) {
                    if (out.length() > 0) out.append(',');
                    out.append(e.getValue());
                }
                w.println("uuid " + in + " " + out);
            }
            for (int i = 0; i < 300; i++) {
                int n = 1 + rnd.nextInt(i % 10 == 0 ? 200 : 30);
                List<Integer> keys = new ArrayList<>();
                for (int j = 0; j < n; j++) {
                    keys.add(i % 4 == 0 ? rnd.nextInt(100) * 64 : rnd.nextInt(i % 2 == 0 ? 40 : 100000));
                }
                Map<Integer, Integer> m = new HashMap<>();
                StringBuilder in = new StringBuilder();
                for (int j = 0; j < n; j++) {
                    m.putIfAbsent(keys.get(j), j);
                    if (j > 0) in.append(',');
                    in.append(keys.get(j));
                }
                StringBuilder out = new StringBuilder();
                for (Map.Entry<Integer, Integer> e : m.entrySet()) {
                    if (out.length() > 0) out.append(',');
                    out.append(e.getValue());
                }
                w.println("int " + in + " " + out);
            }
        }
    }

    static String batches(List<PersisterStateBatch> bs) {
        if (bs.isEmpty()) return "-";
        StringBuilder sb = new StringBuilder();
        for (PersisterStateBatch b : bs) {
            if (sb.length() > 0) sb.append(',');
            sb.append(b.firstOffset()).append(':').append(b.lastOffset()).append(':').append(b.deliveryState()).append(':').append(b.deliveryCount());
        }
        return sb.toString();
    }

    static List<PersisterStateBatch> randomBatches(Random rnd, int max, int span, boolean allowBad) {
        int n = rnd.nextInt(max + 1);
        List<PersisterStateBatch> out = new ArrayList<>();
        byte[] states = {0, 2, 4};
        for (int i = 0; i < n; i++) {
            long first = rnd.nextInt(span);
            long last = first + rnd.nextInt(span / 3 + 1);
            if (allowBad && rnd.nextInt(40) == 0) last = first - 1 - rnd.nextInt(3);
            out.add(new PersisterStateBatch(first, last, states[rnd.nextInt(3)], (short) rnd.nextInt(4)));
        }
        return out;
    }

    // combine.txt: "soFar newer startOffset -> result" ("!" message when it throws).
    static void combine(Path dir, Random rnd) throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(dir.resolve("combine.txt")))) {
            w.println("# PersisterStateBatchCombiner(soFar, newer, startOffset).combineStateBatches(): soFar newer startOffset result (! hex message: it threw).");
            for (int i = 0; i < 600; i++) {
                List<PersisterStateBatch> a = randomBatches(rnd, 6, 60, true);
                List<PersisterStateBatch> b = randomBatches(rnd, 6, 60, true);
                long start = rnd.nextInt(4) == 0 ? -1 : rnd.nextInt(40);
                String result;
                try {
                    result = batches(new PersisterStateBatchCombiner(a, b, start).combineStateBatches());
                } catch (RuntimeException e) {
                    result = "!" + hexs(e.getMessage());
                }
                w.println(batches(a) + " " + batches(b) + " " + start + " " + result);
            }
        }
    }

    static class FakeTime implements Time {
        long ms = 1_700_000_000_000L;
        public long milliseconds() { return ms; }
        public long nanoseconds() { return ms * 1_000_000L; }
        public void sleep(long d) { ms += d; }
    }

    static CoordinatorMetadataImage.TopicMetadata topic(String name, Uuid id, int n) {
        return new CoordinatorMetadataImage.TopicMetadata() {
            public String name() { return name; }
            public Uuid id() { return id; }
            public int partitionCount() { return n; }
            public List<String> partitionRacks(int p) { return List.of(); }
        };
    }

    static CoordinatorMetadataImage image() {
        Map<Uuid, CoordinatorMetadataImage.TopicMetadata> topics = new HashMap<>();
        topics.put(T1, topic("t1", T1, 3));
        topics.put(T2, topic("t2", T2, 1));
        return new CoordinatorMetadataImage() {
            public Set<Uuid> topicIds() { return topics.keySet(); }
            public Set<String> topicNames() { return Set.of("t1", "t2"); }
            public Optional<TopicMetadata> topicMetadata(String name) {
                return topics.values().stream().filter(t -> t.name().equals(name)).findFirst();
            }
            public Optional<TopicMetadata> topicMetadata(Uuid id) { return Optional.ofNullable(topics.get(id)); }
            public CoordinatorMetadataDelta emptyDelta() { return CoordinatorMetadataDelta.EMPTY; }
            public long version() { return 1; }
            public boolean isEmpty() { return false; }
        };
    }

    static String batchesW(List<WriteShareGroupStateRequestData.StateBatch> bs) {
        List<PersisterStateBatch> l = new ArrayList<>();
        for (WriteShareGroupStateRequestData.StateBatch b : bs)
            l.add(new PersisterStateBatch(b.firstOffset(), b.lastOffset(), b.deliveryState(), b.deliveryCount()));
        return batches(l);
    }

    // diff-<name>.txt: one operation per block: "op ...", "resp ...", then "rec key value" lines.
    static void sequence(Path dir, String name, long seed, int updatesPerSnapshot, int steps, boolean narrow) throws IOException {
        Random rnd = new Random(seed);
        Properties props = new Properties();
        props.put(ShareCoordinatorConfig.SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT_CONFIG, Integer.toString(updatesPerSnapshot));
        ShareCoordinatorConfig cfg = new ShareCoordinatorConfig(new AbstractConfig(ShareCoordinatorConfig.CONFIG_DEF, props));
        SnapshotRegistry registry = new SnapshotRegistry(new LogContext());
        ShareCoordinatorMetrics metrics = new ShareCoordinatorMetrics();
        FakeTime time = new FakeTime();
        ShareCoordinatorShard shard = new ShareCoordinatorShard(new LogContext(), cfg, metrics,
            metrics.newMetricsShard(registry, new TopicPartition("__share_group_state", 0)), registry, time);
        shard.onLoaded(image());
        // narrow: one group and two share-partitions, few refusals, so
        // that long runs of writes meet each other.
        String[] groups = narrow ? new String[]{"g1"} : new String[]{"g1", "g2"};
        Uuid[] topics = narrow ? new Uuid[]{T1} : new Uuid[]{T1, T1, T1, T2, T3};
        int bad = narrow ? 60 : 10;
        long offset = 0;
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(dir.resolve("diff-" + name + ".txt")))) {
            w.println("# ShareCoordinatorShard (Kafka 4.4.0) fed seed " + seed + ", " + updatesPerSnapshot
                + " updates per snapshot: op lines, the answer (resp), the records (rec key value).");
            w.println("config " + updatesPerSnapshot);
            for (int step = 0; step < steps; step++) {
                time.ms += rnd.nextInt(8) == 0 ? 200_000 + rnd.nextInt(200_000) : rnd.nextInt(2000);
                String g = groups[rnd.nextInt(groups.length)];
                Uuid t = topics[rnd.nextInt(topics.length)];
                int p = rnd.nextInt(bad + 2) == 0 ? -1 : rnd.nextInt(narrow ? 2 : 4);
                int op = rnd.nextInt(100);
                registry.idempotentCreateSnapshot(offset);
                String line;
                String resp;
                CoordinatorResult<?, CoordinatorRecord> res = null;
                try {
                    if (op < 15) {
                        int se = rnd.nextInt(bad) == 0 ? -1 : rnd.nextInt(4);
                        long so = rnd.nextInt(3) == 0 ? -1 : rnd.nextInt(30);
                        line = "op init " + time.ms + " " + g + " " + tid(t) + " " + p + " " + se + " " + so;
                        w.println(line);
                        var r = shard.initializeState(new InitializeShareGroupStateRequestData().setGroupId(g).setTopics(List.of(
                            new InitializeShareGroupStateRequestData.InitializeStateData().setTopicId(t).setPartitions(List.of(
                                new InitializeShareGroupStateRequestData.PartitionData().setPartition(p).setStateEpoch(se).setStartOffset(so))))));
                        res = r;
                        InitializeShareGroupStateResponseData.PartitionResult pr = r.response().results().get(0).partitions().get(0);
                        resp = "resp " + pr.errorCode() + " " + hexs(pr.errorMessage());
                    } else if (op < 50) {
                        int se = rnd.nextInt(bad) == 0 ? -1 : rnd.nextInt(4);
                        int le = rnd.nextInt(bad) == 0 ? -1 : rnd.nextInt(5);
                        long so = rnd.nextInt(3) == 0 ? -1 : rnd.nextInt(40);
                        int dcc = rnd.nextInt(3) == 0 ? -1 : rnd.nextInt(20);
                        List<WriteShareGroupStateRequestData.StateBatch> bs = new ArrayList<>();
                        for (PersisterStateBatch b : randomBatches(rnd, 4, 60, true))
                            bs.add(new WriteShareGroupStateRequestData.StateBatch().setFirstOffset(b.firstOffset()).setLastOffset(b.lastOffset())
                                .setDeliveryState(b.deliveryState()).setDeliveryCount(b.deliveryCount()));
                        line = "op write " + time.ms + " " + g + " " + tid(t) + " " + p + " " + se + " " + le + " " + so + " " + dcc + " " + batchesW(bs);
                        w.println(line);
                        var r = shard.writeState(new WriteShareGroupStateRequestData().setGroupId(g).setTopics(List.of(
                            new WriteShareGroupStateRequestData.WriteStateData().setTopicId(t).setPartitions(List.of(
                                new WriteShareGroupStateRequestData.PartitionData().setPartition(p).setStateEpoch(se).setLeaderEpoch(le)
                                    .setStartOffset(so).setDeliveryCompleteCount(dcc).setStateBatches(bs))))));
                        res = r;
                        WriteShareGroupStateResponseData.PartitionResult pr = r.response().results().get(0).partitions().get(0);
                        resp = "resp " + pr.errorCode() + " " + hexs(pr.errorMessage());
                    } else if (op < 75) {
                        int le = rnd.nextInt(bad) == 0 ? -1 : rnd.nextInt(5);
                        line = "op read " + time.ms + " " + g + " " + tid(t) + " " + p + " " + le;
                        w.println(line);
                        var r = shard.readStateAndMaybeUpdateLeaderEpoch(new ReadShareGroupStateRequestData().setGroupId(g).setTopics(List.of(
                            new ReadShareGroupStateRequestData.ReadStateData().setTopicId(t).setPartitions(List.of(
                                new ReadShareGroupStateRequestData.PartitionData().setPartition(p).setLeaderEpoch(le))))));
                        res = r;
                        ReadShareGroupStateResponseData.PartitionResult pr = r.response().results().get(0).partitions().get(0);
                        List<PersisterStateBatch> l = new ArrayList<>();
                        for (ReadShareGroupStateResponseData.StateBatch b : pr.stateBatches())
                            l.add(new PersisterStateBatch(b.firstOffset(), b.lastOffset(), b.deliveryState(), b.deliveryCount()));
                        resp = "resp " + pr.errorCode() + " " + hexs(pr.errorMessage()) + " " + pr.stateEpoch() + " " + pr.startOffset() + " " + batches(l);
                    } else if (op < 87) {
                        line = "op summary " + time.ms + " " + g + " " + tid(t) + " " + p;
                        w.println(line);
                        var r = shard.readStateSummary(new ReadShareGroupStateSummaryRequestData().setGroupId(g).setTopics(List.of(
                            new ReadShareGroupStateSummaryRequestData.ReadStateSummaryData().setTopicId(t).setPartitions(List.of(
                                new ReadShareGroupStateSummaryRequestData.PartitionData().setPartition(p))))));
                        res = r;
                        ReadShareGroupStateSummaryResponseData.PartitionResult pr = r.response().results().get(0).partitions().get(0);
                        resp = "resp " + pr.errorCode() + " " + hexs(pr.errorMessage()) + " " + pr.stateEpoch() + " " + pr.leaderEpoch()
                            + " " + pr.startOffset() + " " + pr.deliveryCompleteCount();
                    } else if (op < 95) {
                        line = "op delete " + time.ms + " " + g + " " + tid(t) + " " + p;
                        w.println(line);
                        var r = shard.deleteState(new DeleteShareGroupStateRequestData().setGroupId(g).setTopics(List.of(
                            new DeleteShareGroupStateRequestData.DeleteStateData().setTopicId(t).setPartitions(List.of(
                                new DeleteShareGroupStateRequestData.PartitionData().setPartition(p))))));
                        res = r;
                        DeleteShareGroupStateResponseData.PartitionResult pr = r.response().results().get(0).partitions().get(0);
                        resp = "resp " + pr.errorCode() + " " + hexs(pr.errorMessage());
                    } else {
                        w.println("op cold " + time.ms);
                        res = shard.snapshotColdPartitions();
                        resp = "resp 0 nil";
                    }
                    for (CoordinatorRecord cr : res.records()) {
                        shard.replay(offset++, -1, (short) -1, cr);
                    }
                } catch (RuntimeException e) {
                    registry.revertToSnapshot(registry.latestEpoch());
                    w.println("crash " + hexs(e.getMessage()));
                    w.println("end");
                    continue;
                }
                w.println(resp);
                for (CoordinatorRecord cr : res.records()) w.println(rec(cr));
                w.println("end");
                registry.idempotentCreateSnapshot(offset);
                registry.deleteSnapshotsUpTo(offset);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        Files.createDirectories(dir);
        records(dir);
        partitionFor(dir, new Random(1));
        combine(dir, new Random(2));
        hashOrder(dir, new Random(8));
        sequence(dir, "default", 3, 500, 1500, false);
        sequence(dir, "snapshots", 4, 3, 1500, false);
        sequence(dir, "always", 5, 0, 800, false);
        sequence(dir, "narrow", 6, 4, 2000, true);
    }
}
