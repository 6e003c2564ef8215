package kafka.server.share;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

import org.apache.kafka.clients.consumer.internals.ShareAcquireMode;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.ShareFetchResponseData.AcquiredRecords;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.group.ShareGroupAutoOffsetResetStrategy;
import org.apache.kafka.coordinator.group.modern.share.ShareGroupConfigProvider;
import org.apache.kafka.server.share.PartitionMetadataProvider;
import org.apache.kafka.server.share.acknowledge.ShareAcknowledgementBatch;
import org.apache.kafka.server.share.dlq.NoOpShareGroupDLQManager;
import org.apache.kafka.server.share.fetch.InFlightBatch;
import org.apache.kafka.server.share.fetch.InFlightState;
import org.apache.kafka.server.share.fetch.ShareAcquiredRecords;
import org.apache.kafka.server.share.fetch.AcquisitionLockTimerTask;
import org.apache.kafka.server.share.persister.*;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.storage.log.FetchPartitionData;
import org.apache.kafka.server.util.timer.Timer;
import org.apache.kafka.server.util.timer.TimerTask;
import org.apache.kafka.storage.internals.log.LogOffsetMetadata;

/**
 * Runs a share-partition scenario (commands on stdin) against Kafka's own
 * SharePartition and prints each command with its outcome, in the form
 * broker/share's TestKafkaTranscripts reads. Time, the lock timer and the
 * persister are in-process fakes; every persister write succeeds.
 */
public class ShareHarness {
    static long nowMs = 1_700_000_000_000L;

    static final Time TIME = new Time() {
        public long milliseconds() { return nowMs; }
        public long nanoseconds() { return nowMs * 1_000_000L; }
        public void sleep(long ms) { nowMs += ms; }
    };

    /** A timer that fires only when the scenario says time has passed. */
    static final class ManualTimer implements Timer {
        final List<TimerTask> tasks = new ArrayList<>();
        public void add(TimerTask t) {
            // The entry marks the task live; cancel() clears it.
            new org.apache.kafka.server.util.timer.TimerTaskEntry(t, ((AcquisitionLockTimerTask) t).expirationMs());
            tasks.add(t);
        }
        public boolean advanceClock(long ms) { return false; }
        public int size() { return tasks.size(); }
        public void close() {}
        void fire() {
            while (true) {
                TimerTask next = null;
                for (TimerTask t : tasks) {
                    if (t.isCancelled()) continue;
                    long exp = ((AcquisitionLockTimerTask) t).expirationMs();
                    if (exp <= nowMs && (next == null || exp < ((AcquisitionLockTimerTask) next).expirationMs())) next = t;
                }
                if (next == null) break;
                tasks.remove(next);
                next.run();
            }
            tasks.removeIf(TimerTask::isCancelled);
        }
    }

    static final Uuid TOPIC_ID = Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAQ");
    static final TopicIdPartition TP = new TopicIdPartition(TOPIC_ID, new TopicPartition("t", 0));

    static PersistedRead read;
    static final List<PartitionStateBatchData> writes = new ArrayList<>();

    record PersistedRead(int epoch, long start, List<PersisterStateBatch> batches) {}

    static final Persister PERSISTER = new Persister() {
        public CompletableFuture<InitializeShareGroupStateResult> initializeState(InitializeShareGroupStateParameters p) { throw new UnsupportedOperationException(); }
        public CompletableFuture<ReadShareGroupStateResult> readState(ReadShareGroupStateParameters p) {
            return CompletableFuture.completedFuture(new ReadShareGroupStateResult.Builder().setTopicsData(List.of(new TopicData<>(TOPIC_ID,
                List.of(PartitionFactory.newPartitionAllData(0, read.epoch, read.start, Errors.NONE.code(), null, read.batches))))).build());
        }
        public CompletableFuture<WriteShareGroupStateResult> writeState(WriteShareGroupStateParameters p) {
            writes.add(p.groupTopicPartitionData().topicsData().get(0).partitions().get(0));
            return CompletableFuture.completedFuture(new WriteShareGroupStateResult.Builder().setTopicsData(List.of(new TopicData<>(TOPIC_ID,
                List.of(PartitionFactory.newPartitionErrorData(0, Errors.NONE.code(), null))))).build());
        }
        public CompletableFuture<DeleteShareGroupStateResult> deleteState(DeleteShareGroupStateParameters p) { throw new UnsupportedOperationException(); }
        public CompletableFuture<ReadShareGroupStateSummaryResult> readSummary(ReadShareGroupStateSummaryParameters p) { throw new UnsupportedOperationException(); }
        public void stop() {}
    };

    static int deliveryLimit = 5, maxLocks = 2000, lockMs = 30000;
    static boolean renew = true;

    static final class Configs extends ShareGroupConfigProvider {
        Configs() { super(null); }
        public int recordLockDurationMsOrDefault(String g, int d) { return lockMs; }
        public int deliveryCountLimitOrDefault(String g, int d) { return deliveryLimit; }
        public int partitionMaxRecordLocksOrDefault(String g, int d) { return maxLocks; }
        public boolean isRenewAcknowledgeEnabled(String g) { return renew; }
        public ShareGroupAutoOffsetResetStrategy autoOffsetReset(String g) { return ShareGroupAutoOffsetResetStrategy.LATEST; }
        public Optional<String> errorsDLQTopicName(String g) { return Optional.empty(); }
    }

    static final PartitionMetadataProvider METADATA = new PartitionMetadataProvider() {
        public long offsetForEarliestTimestamp(TopicIdPartition tp, int e) { return 0; }
        public long offsetForLatestTimestamp(TopicIdPartition tp, int e) { return 0; }
        public long offsetForTimestamp(TopicIdPartition tp, long ts, int e) { return 0; }
        public LogOffsetMetadata endOffsetMetadata(TopicIdPartition tp, FetchIsolation i) { return null; }
        public boolean addPartitionListener(TopicIdPartition tp, org.apache.kafka.server.partition.PartitionListener l) { return true; }
        public int leaderEpoch(TopicIdPartition tp) { return 3; }
        public void removePartitionListener(TopicIdPartition tp, org.apache.kafka.server.partition.PartitionListener l) {}
    };

    /** The log's batches, for acquire fetch=next: SPEC strings in offset order. */
    static List<String> logBatches = new ArrayList<>();

    static ManualTimer timer;
    static SharePartition sp;
    static PrintStream out;

    public static void main(String[] args) throws Exception {
        out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String t = line.strip();
            if (t.isEmpty()) continue;
            if (t.startsWith("#")) { out.println(t); continue; }
            out.println(t);
            out.println("----");
            run(t);
            out.println();
        }
    }

    static Map<String, String> kv(String[] parts) {
        Map<String, String> m = new HashMap<>();
        for (String p : parts) {
            int i = p.indexOf('=');
            if (i > 0) m.put(p.substring(0, i), p.substring(i + 1)); else m.put(p, "");
        }
        return m;
    }

    static void run(String cmd) throws Exception {
        String[] parts = cmd.split("\\s+");
        Map<String, String> a = kv(parts);
        switch (parts[0]) {
            case "config" -> {
                deliveryLimit = Integer.parseInt(a.getOrDefault("delivery", "5"));
                maxLocks = Integer.parseInt(a.getOrDefault("locks", "2000"));
                lockMs = Integer.parseInt(a.getOrDefault("lock", "30000"));
                renew = Boolean.parseBoolean(a.getOrDefault("renew", "true"));
                out.println("ok");
            }
            case "load" -> {
                List<PersisterStateBatch> batches = new ArrayList<>();
                String b = a.getOrDefault("batches", "");
                if (!b.isEmpty()) for (String s : b.split(",")) {
                    String[] f = s.split(":");
                    String[] r = f[0].split("-");
                    batches.add(new PersisterStateBatch(Long.parseLong(r[0]), Long.parseLong(r[1]), Byte.parseByte(f[1]), Short.parseShort(f[2])));
                }
                read = new PersistedRead(Integer.parseInt(a.getOrDefault("epoch", "1")), Long.parseLong(a.get("start")), batches);
                timer = new ManualTimer();
                writes.clear();
                sp = new SharePartition("g", TP, 3, maxLocks, deliveryLimit, lockMs, timer, TIME, PERSISTER, METADATA, k -> {},
                    new Configs(), null, () -> false, new NoOpShareGroupDLQManager());
                try {
                    sp.maybeInitialize().get();
                    out.println("ok");
                } catch (Exception e) {
                    out.println("error");
                }
            }
            case "log" -> {
                logBatches = new ArrayList<>(List.of(a.get("batches").split(",")));
                out.println("ok");
            }
            case "acquire" -> {
                if ("next".equals(a.get("fetch"))) {
                    // The log read from the next fetch offset: up to n batches from the one holding it.
                    long off = sp.nextFetchOffset();
                    int n = Integer.parseInt(a.getOrDefault("n", "1"));
                    List<String> picked = new ArrayList<>();
                    for (String b : logBatches) {
                        long last = Long.parseLong(b.split("/")[0].split("-")[1]);
                        if (last < off || picked.size() >= n) continue;
                        picked.add(b);
                    }
                    if (picked.isEmpty()) {
                        out.println("fetch " + off + " nothing");
                        return;
                    }
                    a.put("fetch", Long.toString(off));
                    a.put("batches", String.join(",", picked));
                    out.println("fetch " + off + " " + String.join(",", picked));
                }
                ShareAcquireMode mode = "record_limit".equals(a.get("mode")) ? ShareAcquireMode.RECORD_LIMIT : ShareAcquireMode.BATCH_OPTIMIZED;
                FetchPartitionData data = fetchData(a.get("batches"), a.getOrDefault("aborted", ""));
                ShareAcquiredRecords got = sp.acquire(a.get("m"), mode, Integer.parseInt(a.getOrDefault("size", "500")),
                    Integer.parseInt(a.get("max")), Long.parseLong(a.get("fetch")), data,
                    a.containsKey("committed") ? FetchIsolation.TXN_COMMITTED : FetchIsolation.HIGH_WATERMARK);
                StringBuilder sb = new StringBuilder("acquired");
                if (got.acquiredRecords().isEmpty()) sb.append(" none");
                for (AcquiredRecords r : got.acquiredRecords())
                    sb.append(' ').append(r.firstOffset()).append('-').append(r.lastOffset()).append(':').append(r.deliveryCount());
                out.println(sb.append(" count=").append(got.count()));
            }
            case "ack" -> {
                List<ShareAcknowledgementBatch> batches = new ArrayList<>();
                for (int i = 2; i < parts.length; i++) {
                    String[] f = parts[i].split(":");
                    String[] r = f[0].split("-");
                    List<Byte> types = new ArrayList<>();
                    for (String ty : f[1].split("\\.")) types.add(Byte.parseByte(ty));
                    batches.add(new ShareAcknowledgementBatch(Long.parseLong(r[0]), Long.parseLong(r[1]), types));
                }
                writes.clear();
                CompletableFuture<Void> f = sp.acknowledge(a.get("m"), batches);
                Throwable err = f.handle((v, e) -> e).get();
                if (err != null) {
                    out.println("error " + Errors.forException(err).name() + ": " + err.getMessage());
                } else {
                    printWrites("ok");
                }
            }
            case "ackheld" -> {
                // The member's acquired runs, each one batch of type t, up to k of them.
                int k = Integer.parseInt(a.getOrDefault("k", "1000"));
                List<ShareAcknowledgementBatch> batches = new ArrayList<>();
                long first = -1, last = -1;
                for (InFlightBatch b : sp.cachedState().values()) {
                    for (long off = b.firstOffset(); off <= b.lastOffset(); off++) {
                        boolean held = b.offsetState() == null
                            ? b.batchState() == org.apache.kafka.server.share.fetch.RecordState.ACQUIRED && b.batchMemberId().equals(a.get("m"))
                            : b.offsetState().get(off).state() == org.apache.kafka.server.share.fetch.RecordState.ACQUIRED
                                && b.offsetState().get(off).memberId().equals(a.get("m"));
                        if (held && first != -1 && off == last + 1) { last = off; continue; }
                        if (first != -1) batches.add(new ShareAcknowledgementBatch(first, last, List.of(Byte.parseByte(a.get("t")))));
                        first = held ? off : -1;
                        last = off;
                    }
                }
                if (first != -1) batches.add(new ShareAcknowledgementBatch(first, last, List.of(Byte.parseByte(a.get("t")))));
                if (batches.size() > k) batches = batches.subList(0, k);
                StringBuilder sb = new StringBuilder("batches");
                for (ShareAcknowledgementBatch b : batches) sb.append(' ').append(b.firstOffset()).append('-').append(b.lastOffset());
                out.println(sb);
                writes.clear();
                Throwable err = sp.acknowledge(a.get("m"), batches).handle((v, e) -> e).get();
                if (err != null) {
                    out.println("error " + Errors.forException(err).name() + ": " + err.getMessage());
                } else {
                    printWrites("ok");
                }
            }
            case "release" -> {
                writes.clear();
                sp.releaseAcquiredRecords(a.get("m")).get();
                printWrites("released");
            }
            case "tick" -> {
                nowMs += Long.parseLong(parts[1]);
                writes.clear();
                timer.fire();
                StringBuilder sb = new StringBuilder("timeout");
                List<PersisterStateBatch> all = new ArrayList<>();
                for (PartitionStateBatchData w : writes) all.addAll(w.stateBatches());
                all.sort(null);
                if (all.isEmpty()) sb.append(" none");
                for (PersisterStateBatch b : all) sb.append(' ').append(batch(b));
                out.println(sb);
            }
            case "logstart" -> {
                sp.updateCacheAndOffsets(Long.parseLong(parts[1]));
                out.println("ok");
            }
            case "state" -> printState();
            default -> throw new IllegalArgumentException("unknown command " + parts[0]);
        }
    }

    static String batch(PersisterStateBatch b) {
        return b.firstOffset() + "-" + b.lastOffset() + ":" + b.deliveryState() + ":" + b.deliveryCount();
    }

    static void printWrites(String head) {
        StringBuilder sb = new StringBuilder(head);
        if (writes.size() > 1) throw new IllegalStateException("more than one write");
        for (PartitionStateBatchData w : writes) {
            sb.append(" start=").append(w.startOffset()).append(" complete=").append(w.deliveryCompleteCount())
                .append(" epochs=").append(w.stateEpoch()).append('/').append(w.leaderEpoch()).append(" wrote");
            for (PersisterStateBatch b : w.stateBatches()) sb.append(' ').append(batch(b));
        }
        out.println(sb);
    }

    static void printState() {
        out.println("start=" + sp.startOffset() + " end=" + sp.endOffset() + " next=" + sp.nextFetchOffset());
        NavigableMap<Long, InFlightBatch> cache = sp.cachedState();
        List<String> rows = new ArrayList<>();
        long runFirst = -1, runLast = -1;
        String runKey = null;
        for (InFlightBatch b : cache.values()) {
            for (long off = b.firstOffset(); off <= b.lastOffset(); off++) {
                String key;
                if (b.offsetState() == null) {
                    key = b.batchState() + " " + b.batchDeliveryCount() + " " + (b.batchMemberId().isEmpty() ? "-" : b.batchMemberId());
                } else {
                    InFlightState s = b.offsetState().get(off);
                    key = s.state() + " " + s.deliveryCount() + " " + (s.memberId().isEmpty() ? "-" : s.memberId());
                }
                if (key.equals(runKey) && off == runLast + 1) {
                    runLast = off;
                    continue;
                }
                if (runKey != null) rows.add(runFirst + "-" + runLast + " " + runKey);
                runFirst = runLast = off;
                runKey = key;
            }
        }
        if (runKey != null) rows.add(runFirst + "-" + runLast + " " + runKey);
        for (String r : rows) out.println(r);
    }

    static FetchPartitionData fetchData(String spec, String aborted) {
        List<MemoryRecords> parts = new ArrayList<>();
        int size = 0;
        for (String s : spec.split(",")) {
            String[] f = s.split("/");
            String[] r = f[0].split("-");
            long base = Long.parseLong(r[0]), last = Long.parseLong(r[1]);
            MemoryRecords m;
            if (f.length == 1) {
                m = MemoryRecords.withRecords(RecordBatch.CURRENT_MAGIC_VALUE, base, Compression.NONE, TimestampType.CREATE_TIME,
                    RecordBatch.NO_PRODUCER_ID, RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE, 0, false, records(base, last));
            } else {
                char kind = f[1].charAt(0);
                long pid = Long.parseLong(f[1].substring(1));
                if (kind == 't') {
                    m = MemoryRecords.withRecords(RecordBatch.CURRENT_MAGIC_VALUE, base, Compression.NONE, TimestampType.CREATE_TIME,
                        pid, (short) 0, 0, 0, true, records(base, last));
                } else {
                    ControlRecordType type = kind == 'a' ? ControlRecordType.ABORT : ControlRecordType.COMMIT;
                    m = MemoryRecords.withEndTransactionMarker(base, nowMs, 0, pid, (short) 0, new EndTransactionMarker(type, 0));
                }
            }
            parts.add(m);
            size += m.sizeInBytes();
        }
        ByteBuffer buf = ByteBuffer.allocate(size);
        for (MemoryRecords m : parts) buf.put(m.buffer().duplicate());
        buf.flip();
        Optional<List<FetchResponseData.AbortedTransaction>> ab = Optional.empty();
        if (!aborted.isEmpty()) {
            List<FetchResponseData.AbortedTransaction> l = new ArrayList<>();
            for (String s : aborted.split(",")) {
                String[] f = s.split("@");
                l.add(new FetchResponseData.AbortedTransaction().setProducerId(Long.parseLong(f[0])).setFirstOffset(Long.parseLong(f[1])));
            }
            ab = Optional.of(l);
        }
        return new FetchPartitionData(Errors.NONE, 0, 0, MemoryRecords.readableRecords(buf), Optional.empty(), OptionalLong.empty(), ab,
            OptionalInt.empty(), false);
    }

    static SimpleRecord[] records(long base, long last) {
        SimpleRecord[] rs = new SimpleRecord[(int) (last - base + 1)];
        for (int i = 0; i < rs.length; i++) rs[i] = new SimpleRecord(nowMs, ("v" + (base + i)).getBytes(StandardCharsets.UTF_8));
        return rs;
    }
}
