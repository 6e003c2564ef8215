// Writes consumer-records.txt: the ConsumerGroup* records of
// __consumer_offsets whose Kafka 4.4 fields Gregor writes (the group epoch,
// the target assignment metadata with its AssignmentTimestamp, the current
// member assignment with its per-partition AssignmentEpochs) as Kafka
// 4.4.0's GroupCoordinatorRecordHelpers builds them and
// GroupCoordinatorRecordSerde serializes them, in FixtureGen's format.
//
// Usage: ConsumerRecordsGen <fixtures dir> (FixtureGen runs it too).
package org.apache.kafka.coordinator.group;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.modern.MemberState;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroupMember;

public class ConsumerRecordsGen {
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args[0]);
        Files.createDirectories(dir);
        write(dir.resolve("consumer-records.txt"));
    }

    private static String hex(byte[] b) {
        if (b == null) return "null";
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    private static void rec(PrintWriter out, String name, CoordinatorRecord r) {
        out.println(name + " " + hex(SERDE.serializeKey(r)) + " " + hex(SERDE.serializeValue(r)));
    }

    // epochs builds a partition -> assignment epoch map from pairs.
    private static Map<Integer, Integer> epochs(int... pairs) {
        Map<Integer, Integer> m = new HashMap<>();
        for (int i = 0; i < pairs.length; i += 2) m.put(pairs[i], pairs[i + 1]);
        return m;
    }

    static void write(Path file) throws IOException {
        Uuid foo = new Uuid(0x0102030405060708L, 0x090a0b0c0d0e0f10L);
        Uuid bar = new Uuid(0x1112131415161718L, 0x191a1b1c1d1e1f20L);
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
            out.println("# name key-hex value-hex, from Kafka 4.4.0's GroupCoordinatorRecordHelpers and");
            out.println("# GroupCoordinatorRecordSerde (compat-tests/sharegroup, ConsumerRecordsGen). Topic foo is");
            out.println("# 0102030405060708090a0b0c0d0e0f10, bar 1112131415161718191a1b1c1d1e1f20.");
            rec(out, "epoch", GroupCoordinatorRecordHelpers.newConsumerGroupEpochRecord("grp", 7, 0x1122334455667788L));
            rec(out, "epoch-first", GroupCoordinatorRecordHelpers.newConsumerGroupEpochRecord("grp", 2, 0L));
            rec(out, "target-metadata", GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentMetadataRecord("grp", 3, 1700000000000L));
            rec(out, "target-metadata-zero-time", GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentMetadataRecord("grp", 5, 0L));
            ConsumerGroupMember stable = new ConsumerGroupMember.Builder("m1")
                .setMemberEpoch(4).setPreviousMemberEpoch(3).setState(MemberState.STABLE)
                .setAssignedPartitions(Map.of(foo, epochs(0, 2, 2, 4, 3, 4)))
                .setPartitionsPendingRevocation(Map.of()).build();
            rec(out, "current", GroupCoordinatorRecordHelpers.newConsumerGroupCurrentAssignmentRecord("grp", stable));
            ConsumerGroupMember revoking = new ConsumerGroupMember.Builder("m1")
                .setMemberEpoch(5).setPreviousMemberEpoch(4).setState(MemberState.UNREVOKED_PARTITIONS)
                .setAssignedPartitions(Map.of(foo, epochs(1, 5)))
                .setPartitionsPendingRevocation(Map.of(bar, epochs(0, 2, 7, 3))).build();
            rec(out, "current-revoking", GroupCoordinatorRecordHelpers.newConsumerGroupCurrentAssignmentRecord("grp", revoking));
            ConsumerGroupMember empty = new ConsumerGroupMember.Builder("m2")
                .setMemberEpoch(2).setPreviousMemberEpoch(0).setState(MemberState.UNRELEASED_PARTITIONS)
                .setAssignedPartitions(Map.of()).setPartitionsPendingRevocation(Map.of()).build();
            rec(out, "current-empty", GroupCoordinatorRecordHelpers.newConsumerGroupCurrentAssignmentRecord("grp", empty));
            ConsumerGroupMember left = new ConsumerGroupMember.Builder(stable)
                .setMemberEpoch(-2).setPartitionsPendingRevocation(Map.of())
                .resetAssignedPartitionsEpochsToZero().build();
            rec(out, "current-static-left", GroupCoordinatorRecordHelpers.newConsumerGroupCurrentAssignmentRecord("grp", left));
        }
    }
}
