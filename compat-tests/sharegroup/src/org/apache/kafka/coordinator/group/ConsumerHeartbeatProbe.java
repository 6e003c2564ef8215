// Writes consumer-heartbeats.txt: a KIP-848 consumer group scenario run on
// Kafka 4.4.0's GroupCoordinatorShard (a fake clock, assignment interval 0,
// offload off: two members join topic foo, the first revokes, the second
// takes its partition), each heartbeat's answer and the records Kafka
// writes for it, serialized by GroupCoordinatorRecordSerde.
//
// Usage: ConsumerHeartbeatProbe <fixtures dir> (FixtureGen runs it too).
package org.apache.kafka.coordinator.group;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.coordinator.common.runtime.*;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetrics;
import org.apache.kafka.coordinator.group.modern.share.ShareGroupConfig;
import org.apache.kafka.timeline.SnapshotRegistry;

public class ConsumerHeartbeatProbe {
    static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args[0]);
        Files.createDirectories(dir);
        write(dir.resolve("consumer-heartbeats.txt"));
    }

    static void write(Path file) throws IOException {
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
            out.println("# A consumer group on Kafka 4.4.0's GroupCoordinatorShard (compat-tests/sharegroup, ConsumerHeartbeatProbe).");
            out.println("# step member epoch owned(join|-|revoked|none) t=ms -> err E epoch N; then rec key-hex value-hex.");
            run(out);
        }
    }

    static void run(PrintWriter out) {
        Map<String, Object> props = new HashMap<>();
        props.put(GroupCoordinatorConfig.CONSUMER_GROUP_ASSIGNMENT_INTERVAL_MS_CONFIG, "0");
        props.put(GroupCoordinatorConfig.CONSUMER_GROUP_ASSIGNOR_OFFLOAD_ENABLE_CONFIG, "false");
        GroupCoordinatorConfig config = GroupCoordinatorConfig.fromProps(props);
        GroupConfigManager groupConfigs = new GroupConfigManager(config, ShareGroupConfig.fromProps(props));
        HeartbeatScenarios.FakeTime time = new HeartbeatScenarios.FakeTime();
        HeartbeatScenarios.FakeTimer timer = new HeartbeatScenarios.FakeTimer(time);
        CoordinatorExecutor<CoordinatorRecord> executor = new CoordinatorExecutor<>() {
            public <R> boolean schedule(String key, TaskRunnable<R> task, TaskOperation<CoordinatorRecord, R> op) { throw new IllegalStateException(); }
            public boolean isScheduled(String key) { return false; }
            public void cancel(String key) { }
        };
        GroupCoordinatorShard.Builder builder = new GroupCoordinatorShard.Builder(config, groupConfigs);
        builder.withAuthorizerPlugin(Optional.empty());
        GroupCoordinatorShard shard = (GroupCoordinatorShard) builder
            .withLogContext(new LogContext()).withTime(time).withTimer(timer).withExecutor(executor)
            .withCoordinatorMetrics(new GroupCoordinatorMetrics()).withTopicPartition(new TopicPartition("__consumer_offsets", 0))
            .withSnapshotRegistry(new SnapshotRegistry(new LogContext())).build();
        shard.onLoaded(HeartbeatScenarios.image());
        long[] offset = {0};
        String[][] steps = {{"m1", "0", "join"}, {"m2", "0", "join"}, {"m1", "2", "-"}, {"m1", "2", "revoked"}, {"m2", "3", "none"}};
        for (String[] s : steps) {
            time.ms += 10;
            ConsumerGroupHeartbeatRequestData req = new ConsumerGroupHeartbeatRequestData().setGroupId("g").setMemberId(s[0])
                .setMemberEpoch(Integer.parseInt(s[1])).setRebalanceTimeoutMs(-1);
            if (s[2].equals("join")) {
                req.setRebalanceTimeoutMs(30000).setSubscribedTopicNames(List.of("foo")).setTopicPartitions(List.of());
            } else if (s[2].equals("revoked")) {
                req.setTopicPartitions(List.of(new ConsumerGroupHeartbeatRequestData.TopicPartitions().setTopicId(HeartbeatScenarios.FOO).setPartitions(List.of(0))));
            } else if (s[2].equals("none")) {
                req.setTopicPartitions(List.of());
            }
            CoordinatorResult<ConsumerGroupHeartbeatResponseData, CoordinatorRecord> r = shard.consumerGroupHeartbeat(HeartbeatScenarios.context("client-" + s[0]), req);
            out.println("step " + String.join(" ", s) + " t=" + time.ms + " -> err " + r.response().errorCode() + " epoch " + r.response().memberEpoch());
            for (CoordinatorRecord rec : r.records()) {
                shard.replay(offset[0]++, -1, (short) -1, rec);
                out.println("rec " + HeartbeatScenarios.hex(SERDE.serializeKey(rec)) + " " + HeartbeatScenarios.hex(SERDE.serializeValue(rec)));
            }
        }
    }
}
