// Runs share group heartbeat scenarios on Kafka 4.4.0's GroupCoordinatorShard
// and writes, step by step, Kafka's answers and records
// (share-heartbeats.txt), for Gregor's coordinator to replay and compare.
// Each scenario line is one step:
//   hb <member> <epoch> <names csv or -> : a ShareGroupHeartbeat of group g;
//                                          epoch "=" is the member's last epoch
//   describe, list                        : ShareGroupDescribe of g and nope, ListGroups
//   init                                  : the persister reports every asked initialization done
//   advance <ms>                          : time passes; due timers (sessions) fire
package org.apache.kafka.coordinator.group;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ShareGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ShareGroupHeartbeatResponseData;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.coordinator.common.runtime.CoordinatorExecutor;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataDelta;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorResult;
import org.apache.kafka.coordinator.common.runtime.CoordinatorTimer;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetrics;
import org.apache.kafka.coordinator.group.modern.share.ShareGroupConfig;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.share.persister.InitializeShareGroupStateParameters;
import org.apache.kafka.timeline.SnapshotRegistry;

public class HeartbeatScenarios {
    static final Uuid FOO = new Uuid(0x0102030405060708L, 0x090a0b0c0d0e0f10L);
    static final Uuid BAR = new Uuid(0x1112131415161718L, 0x191a1b1c1d1e1f20L);
    static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();

    static final String[][] SCENARIOS = {
        {"join-share-leave",
            "hb m1 0 foo", "hb m1 1 -", "init", "hb m1 1 -", "hb m1 2 -",
            "hb m2 0 foo", "hb m1 2 -", "hb m2 3 -", "hb m3 0 foo,bar", "init", "hb m3 4 -", "hb m1 3 -", "hb m2 4 -",
            "hb m2 0 foo", "hb m1 9 -", "hb m1 1 -", "hb ghost 2 -", "hb m2 -1 -", "hb m1 5 -", "hb m3 -1 -",
            "hb m1 -1 -", "hb m4 0 bar", "hb m4 7 -"},
        {"sessions",
            "hb a 0 foo,bar", "init", "hb a 1 -", "advance 20000", "hb b 0 foo", "advance 20000", "hb b 3 -",
            "advance 5000", "hb b 3 -", "advance 44999", "advance 1", "hb b 4 -", "hb b 5 bar", "hb c 0 bar",
            "hb b 5 -", "advance 60000", "hb c 6 -", "describe", "list"},
        {"interval-1000",
            "hb m1 0 foo", "init", "hb m1 = -", "advance 300", "hb m2 0 foo", "hb m1 = -", "advance 400", "hb m2 = -",
            "advance 300", "hb m1 = -", "hb m2 = -", "hb m3 0 foo", "advance 999", "hb m3 = -", "advance 1", "hb m1 = -",
            "hb m2 = -", "hb m3 = -", "describe"},
        {"max-size-2",
            "hb m1 0 foo", "hb m2 0 foo", "hb m3 0 foo", "hb ghost 4 -", "hb m2 -1 -", "hb m3 0 foo", "hb nope-group-member 3 -"},
        {"subscriptions",
            "hb m1 0 foo", "init", "hb m1 = -", "hb m2 0 bar", "init", "hb m2 = -", "hb m1 = -", "describe",
            "hb m1 = foo,bar", "init", "hb m1 = -", "hb m2 = -", "describe", "hb m2 = missing", "hb m1 = -",
            "hb m2 = bar,missing", "init", "hb m2 = -", "hb m1 = -", "hb m3 0 foo", "hb m3 = foo,bar", "hb m1 = -",
            "hb m2 = -", "hb m3 = -", "hb m4 0 bar", "hb m5 0 bar", "hb m1 = -", "hb m2 = -", "hb m3 = -",
            "hb m4 = -", "hb m5 = -", "describe", "list", "hb m1 -1 -", "hb m2 -1 -", "hb m3 = -", "hb m4 = -",
            "hb m5 = -", "hb m3 -1 -", "hb m4 -1 -", "hb m5 -1 -", "describe", "list"},
    };

    static class FakeTime implements Time {
        long ms = 1_700_000_000_000L;
        public long milliseconds() { return ms; }
        public long nanoseconds() { return ms * 1_000_000L; }
        public void sleep(long d) { ms += d; }
    }

    static class FakeTimer implements CoordinatorTimer<CoordinatorRecord> {
        final FakeTime time;
        final TreeMap<String, Object[]> timers = new TreeMap<>();
        FakeTimer(FakeTime time) { this.time = time; }
        public void schedule(String key, long delay, TimeUnit unit, boolean retry, TimeoutOperation<CoordinatorRecord> op) {
            timers.put(key, new Object[]{time.ms + unit.toMillis(delay), op});
        }
        public void schedule(String key, long delay, TimeUnit unit, boolean retry, long retryBackoff, TimeoutOperation<CoordinatorRecord> op) {
            schedule(key, delay, unit, retry, op);
        }
        public void scheduleIfAbsent(String key, long delay, TimeUnit unit, boolean retry, TimeoutOperation<CoordinatorRecord> op) {
            if (!timers.containsKey(key)) schedule(key, delay, unit, retry, op);
        }
        public void cancel(String key) { timers.remove(key); }
        public boolean isScheduled(String key) { return timers.containsKey(key); }
    }

    static CoordinatorMetadataImage.TopicMetadata topic(String name, Uuid id, int n) {
        return new CoordinatorMetadataImage.TopicMetadata() {
            public String name() { return name; }
            public Uuid id() { return id; }
            public int partitionCount() { return n; }
            public List<String> partitionRacks(int p) { return new ArrayList<>(); }
        };
    }

    static CoordinatorMetadataImage image() {
        Map<Uuid, CoordinatorMetadataImage.TopicMetadata> topics = new HashMap<>();
        topics.put(FOO, topic("foo", FOO, 3));
        topics.put(BAR, topic("bar", BAR, 2));
        return new CoordinatorMetadataImage() {
            public Set<Uuid> topicIds() { return topics.keySet(); }
            public Set<String> topicNames() { return Set.of("foo", "bar"); }
            public Optional<TopicMetadata> topicMetadata(String name) {
                return topics.values().stream().filter(t -> t.name().equals(name)).findFirst();
            }
            public Optional<TopicMetadata> topicMetadata(Uuid id) { return Optional.ofNullable(topics.get(id)); }
            public CoordinatorMetadataDelta emptyDelta() { return CoordinatorMetadataDelta.EMPTY; }
            public long version() { return 1; }
            public boolean isEmpty() { return false; }
        };
    }

    static AuthorizableRequestContext context(String clientId) {
        return new AuthorizableRequestContext() {
            public String listenerName() { return "PLAINTEXT"; }
            public SecurityProtocol securityProtocol() { return SecurityProtocol.PLAINTEXT; }
            public KafkaPrincipal principal() { return KafkaPrincipal.ANONYMOUS; }
            public InetAddress clientAddress() { return InetAddress.getLoopbackAddress(); }
            public int requestType() { return 76; }
            public int requestVersion() { return 1; }
            public String clientId() { return clientId; }
            public int correlationId() { return 1; }
        };
    }

    static String hex(byte[] b) {
        if (b == null) return "null";
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    static String assignment(ShareGroupHeartbeatResponseData.Assignment a) {
        if (a == null) return "none";
        TreeMap<String, TreeSet<Integer>> m = new TreeMap<>();
        a.topicPartitions().forEach(tp -> m.put(tp.topicId().equals(FOO) ? "foo" : "bar", new TreeSet<>(tp.partitions())));
        List<String> parts = new ArrayList<>();
        m.forEach((n, ps) -> {
            List<String> s = new ArrayList<>();
            ps.forEach(p -> s.add(Integer.toString(p)));
            parts.add(n + ":" + String.join(".", s));
        });
        return parts.isEmpty() ? "-" : String.join(";", parts);
    }

    public static void write(Path file) throws IOException {
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
            out.println("# Share group heartbeats on Kafka 4.4.0's GroupCoordinatorShard (compat-tests/sharegroup):");
            out.println("# each step, then Kafka's answer (resp code epoch interval assignment message) and its");
            out.println("# records (rec key value). Topics: foo " + FOO + " (3 partitions), bar " + BAR + " (2).");
            for (String[] sc : SCENARIOS) run(out, sc);
            // Seeded random scenarios (SHAREGROUP_RANDOM_SCENARIOS=N): a
            // differential run to look for divergences. Not in the committed
            // fixtures: some still choose differently on hash ties (see
            // compat-tests/sharegroup/README.md).
            int random = Integer.parseInt(System.getenv().getOrDefault("SHAREGROUP_RANDOM_SCENARIOS", "0"));
            java.util.Random rnd = new java.util.Random(4932);
            for (int n = 0; n < random; n++) run(out, randomScenario(rnd, n));
            validations(out);
        }
    }

    // GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid on
    // requests that differ in one field: "valid <fields>" or
    // "invalid <fields> <message>". Fields: group|member|epoch|rack|names,
    // with "null" and "blank" (a space) as values.
    static void validations(PrintWriter out) {
        String[][] cases = {
            {"g", "m", "0", "null", "foo"}, {"g", "", "0", "null", "foo"}, {"g", "blank", "0", "null", "foo"},
            {"", "", "0", "null", "foo"}, {"", "m", "0", "null", "foo"}, {"blank", "m", "0", "null", "foo"},
            {"g", "m", "0", "", "foo"}, {"g", "m", "0", "blank", "foo"}, {"g", "m", "0", "r", "foo"},
            {"g", "m", "0", "null", "null"}, {"g", "m", "0", "null", ""}, {"g", "m", "3", "null", "null"},
            {"g", "m", "-1", "null", "null"}, {"g", "m", "-2", "null", "null"}, {"g", "m", "-9", "null", "foo"},
            {"g", "", "-2", "", "null"}, {"g", "\\t", "0", "null", "foo"}, {"g", "m\\t", "0", "null", "foo"},
        };
        try {
            java.lang.reflect.Method check = GroupCoordinatorService.class.getDeclaredMethod(
                "throwIfShareGroupHeartbeatRequestIsInvalid", ShareGroupHeartbeatRequestData.class);
            check.setAccessible(true);
            for (String[] c : cases) {
                ShareGroupHeartbeatRequestData req = new ShareGroupHeartbeatRequestData()
                    .setGroupId(value(c[0])).setMemberId(value(c[1])).setMemberEpoch(Integer.parseInt(c[2]))
                    .setRackId(value(c[3])).setSubscribedTopicNames(c[4].equals("null") ? null
                        : c[4].isEmpty() ? List.of() : Arrays.asList(c[4].split(",")));
                String fields = String.join(" ", Arrays.stream(c).map(x -> x.isEmpty() ? "empty" : x).toArray(String[]::new));
                try {
                    check.invoke(null, req);
                    out.println("valid " + fields);
                } catch (java.lang.reflect.InvocationTargetException e) {
                    out.println("invalid " + fields + " " + e.getCause().getMessage());
                }
            }
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException(e);
        }
    }

    // A seeded random scenario: members join, heartbeat at their epoch (now
    // and then a stale or wrong one), change subscriptions, leave, go
    // silent past their session; initializations are reported late.
    static String[] randomScenario(java.util.Random rnd, int n) {
        List<String> steps = new ArrayList<>();
        steps.add("random-" + n);
        String[] members = {"m1", "m2", "m3", "m4", "m5", "x-" + n, "consumer-" + n};
        String[] subs = {"foo", "bar", "foo,bar", "bar,foo", "missing", "foo,missing"};
        int count = 40 + rnd.nextInt(40);
        for (int i = 0; i < count; i++) {
            String m = members[rnd.nextInt(members.length)];
            int op = rnd.nextInt(100);
            if (op < 15) steps.add("hb " + m + " 0 " + subs[rnd.nextInt(subs.length)]);
            else if (op < 55) steps.add("hb " + m + " = -");
            else if (op < 62) steps.add("hb " + m + " = " + subs[rnd.nextInt(subs.length)]);
            else if (op < 67) steps.add("hb " + m + " -1 -");
            else if (op < 70) steps.add("hb " + m + " " + (1 + rnd.nextInt(6)) + " -");
            else if (op < 80) steps.add("init");
            else if (op < 90) steps.add("advance " + (rnd.nextInt(4) == 0 ? 30000 + rnd.nextInt(30000) : rnd.nextInt(3000)));
            else if (op < 95) steps.add("describe");
            else steps.add("list");
        }
        steps.add("describe");
        return steps.toArray(new String[0]);
    }

    static void validate(ShareGroupHeartbeatRequestData req) {
        try {
            java.lang.reflect.Method check = GroupCoordinatorService.class.getDeclaredMethod(
                "throwIfShareGroupHeartbeatRequestIsInvalid", ShareGroupHeartbeatRequestData.class);
            check.setAccessible(true);
            check.invoke(null, req);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw (RuntimeException) e.getCause();
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException(e);
        }
    }

    static String value(String s) {
        switch (s) {
            case "null": return null;
            case "blank": return " ";
            default: return s.replace("\\t", "\t");
        }
    }

    static void run(PrintWriter out, String[] sc) {
        Map<String, Object> props = new HashMap<>();
        props.put(GroupCoordinatorConfig.SHARE_GROUP_ASSIGNMENT_INTERVAL_MS_CONFIG,
            sc[0].startsWith("interval-") ? sc[0].substring(9) : "0");
        props.put(GroupCoordinatorConfig.SHARE_GROUP_ASSIGNOR_OFFLOAD_ENABLE_CONFIG, "false");
        if (sc[0].startsWith("max-size-")) props.put(GroupCoordinatorConfig.SHARE_GROUP_MAX_SIZE_CONFIG, sc[0].substring(9));
        GroupCoordinatorConfig config = GroupCoordinatorConfig.fromProps(props);
        GroupConfigManager groupConfigs = new GroupConfigManager(config, ShareGroupConfig.fromProps(props));
        FakeTime time = new FakeTime();
        FakeTimer timer = new FakeTimer(time);
        SnapshotRegistry registry = new SnapshotRegistry(new LogContext());
        CoordinatorExecutor<CoordinatorRecord> executor = new CoordinatorExecutor<>() {
            public <R> boolean schedule(String key, TaskRunnable<R> task, TaskOperation<CoordinatorRecord, R> op) {
                throw new IllegalStateException("executor used");
            }
            public boolean isScheduled(String key) { return false; }
            public void cancel(String key) { }
        };
        GroupCoordinatorShard.Builder builder = new GroupCoordinatorShard.Builder(config, groupConfigs);
        builder.withAuthorizerPlugin(Optional.empty());
        GroupCoordinatorShard shard = (GroupCoordinatorShard) builder
            .withLogContext(new LogContext()).withTime(time).withTimer(timer).withExecutor(executor)
            .withCoordinatorMetrics(new GroupCoordinatorMetrics()).withTopicPartition(new TopicPartition("__consumer_offsets", 0))
            .withSnapshotRegistry(registry).build();
        shard.onLoaded(image());
        long[] offset = {0};
        Map<Uuid, Set<Integer>> pending = new HashMap<>();
        Map<String, Integer> epochs = new HashMap<>();
        out.println("scenario " + sc[0] + " " + time.ms);
        for (int i = 1; i < sc.length; i++) {
            String[] f = sc[i].split(" ");
            out.println("step " + sc[i]);
            List<CoordinatorRecord> records = new ArrayList<>();
            switch (f[0]) {
                case "hb": {
                    ShareGroupHeartbeatRequestData req = new ShareGroupHeartbeatRequestData()
                        .setGroupId("g").setMemberId(f[1]).setMemberEpoch(f[2].equals("=") ? epochs.getOrDefault(f[1], 0) : Integer.parseInt(f[2]))
                        .setSubscribedTopicNames(f[3].equals("-") ? null : Arrays.asList(f[3].split(",")));
                    ShareGroupHeartbeatResponseData resp;
                    try {
                        validate(req); // GroupCoordinatorService checks the request before the shard sees it
                        CoordinatorResult<Map.Entry<ShareGroupHeartbeatResponseData, Optional<InitializeShareGroupStateParameters>>, CoordinatorRecord> r =
                            shard.shareGroupHeartbeat(context("client-" + f[1]), req);
                        records.addAll(r.records());
                        resp = r.response().getKey();
                        r.response().getValue().ifPresent(p -> p.groupTopicPartitionData().topicsData().forEach(td -> {
                            Set<Integer> ps = pending.computeIfAbsent(td.topicId(), k -> new TreeSet<>());
                            td.partitions().forEach(pd -> ps.add(pd.partition()));
                        }));
                    } catch (org.apache.kafka.common.errors.ApiException e) {
                        resp = new ShareGroupHeartbeatResponseData()
                            .setErrorCode(org.apache.kafka.common.protocol.Errors.forException(e).code()).setErrorMessage(e.getMessage());
                    }
                    if (resp.errorCode() == 0) epochs.put(f[1], resp.memberEpoch());
                    out.println("resp " + resp.errorCode() + " " + resp.memberEpoch() + " " + resp.heartbeatIntervalMs() + " "
                        + assignment(resp.assignment()) + (resp.errorMessage() == null ? "" : " " + resp.errorMessage()));
                    break;
                }
                case "init": {
                    CoordinatorResult<Void, CoordinatorRecord> r = shard.initializeShareGroupState("g", new HashMap<>(pending));
                    records.addAll(r.records());
                    pending.clear();
                    break;
                }
                case "advance": {
                    time.ms += Long.parseLong(f[1]);
                    for (String key : new ArrayList<>(timer.timers.keySet())) {
                        Object[] t = timer.timers.get(key);
                        if (t != null && (long) t[0] <= time.ms) {
                            timer.timers.remove(key);
                            @SuppressWarnings("unchecked")
                            CoordinatorTimer.TimeoutOperation<CoordinatorRecord> op = (CoordinatorTimer.TimeoutOperation<CoordinatorRecord>) t[1];
                            records.addAll(op.generateRecords().records());
                            for (CoordinatorRecord rec : records) shard.replay(offset[0]++, -1, (short) -1, rec);
                            for (CoordinatorRecord rec : records) out.println("rec " + hex(SERDE.serializeKey(rec)) + " " + hex(SERDE.serializeValue(rec)));
                            records.clear();
                        }
                    }
                    break;
                }
                case "describe": {
                    shard.shareGroupDescribe(List.of("g", "nope"), Long.MAX_VALUE).forEach(d -> {
                        StringBuilder sb = new StringBuilder("describe " + d.groupId() + " " + d.errorCode());
                        if (d.errorCode() != 0) {
                            out.println(sb.append(" ").append(d.errorMessage()));
                            return;
                        }
                        sb.append(" ").append(d.groupState()).append(" ").append(d.groupEpoch()).append(" ")
                            .append(d.assignmentEpoch()).append(" ").append(d.assignorName());
                        TreeMap<String, String> members = new TreeMap<>();
                        d.members().forEach(m -> {
                            TreeMap<String, TreeSet<Integer>> a = new TreeMap<>();
                            m.assignment().topicPartitions().forEach(tp -> a.put(tp.topicName(), new TreeSet<>(tp.partitions())));
                            members.put(m.memberId(), m.memberEpoch() + " " + String.join(".", new TreeSet<>(m.subscribedTopicNames()))
                                + " " + m.clientId() + " " + m.clientHost() + " " + (m.rackId() == null ? "-" : m.rackId()) + " " + a);
                        });
                        members.forEach((id, m) -> sb.append(" | ").append(id).append(" ").append(m));
                        out.println(sb);
                    });
                    break;
                }
                case "list": {
                    shard.listGroups(List.of(), List.of(), Long.MAX_VALUE).forEach(l ->
                        out.println("list " + l.groupId() + " " + l.protocolType() + " " + l.groupState() + " " + l.groupType()));
                    break;
                }
                default:
                    throw new IllegalArgumentException(sc[i]);
            }
            for (CoordinatorRecord rec : records) shard.replay(offset[0]++, -1, (short) -1, rec);
            registry.idempotentCreateSnapshot(offset[0]);
            for (CoordinatorRecord rec : records) out.println("rec " + hex(SERDE.serializeKey(rec)) + " " + hex(SERDE.serializeValue(rec)));
        }
    }
}
