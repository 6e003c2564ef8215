// Writes the fixtures of Gregor's share group tests with Kafka 4.4.0's own
// classes: the ShareGroup* records of __consumer_offsets as
// GroupCoordinatorRecordHelpers builds them and GroupCoordinatorRecordSerde
// serializes them (share-records.txt), and the targets Kafka's
// SimpleAssignor computes for seeded random share groups over several
// rounds, each round's targets being the next round's current assignment
// (share-assign.txt).
//
// Usage: FixtureGen <fixtures dir>
package org.apache.kafka.coordinator.group;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.SimpleAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberState;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.share.ShareGroup;
import org.apache.kafka.coordinator.group.modern.share.ShareGroupMember;

public class FixtureGen {
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args[0]);
        Files.createDirectories(dir);
        writeRecords(dir.resolve("share-records.txt"));
        ConsumerRecordsGen.write(dir.resolve("consumer-records.txt"));
        ConsumerHeartbeatProbe.write(dir.resolve("consumer-heartbeats.txt"));
        writeAssignments(dir.resolve("share-assign.txt"));
        HeartbeatScenarios.write(dir.resolve("share-heartbeats.txt"));
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

    private static void writeRecords(Path file) throws IOException {
        Uuid foo = new Uuid(0x0102030405060708L, 0x090a0b0c0d0e0f10L);
        Uuid bar = new Uuid(0x1112131415161718L, 0x191a1b1c1d1e1f20L);
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
            out.println("# name key-hex value-hex, from Kafka 4.4.0's GroupCoordinatorRecordHelpers and");
            out.println("# GroupCoordinatorRecordSerde (compat-tests/sharegroup). Topic foo is");
            out.println("# 0102030405060708090a0b0c0d0e0f10, bar 1112131415161718191a1b1c1d1e1f20.");
            ShareGroupMember m1 = new ShareGroupMember.Builder("m1")
                .setClientId("client-1").setClientHost("/127.0.0.1")
                .setSubscribedTopicNames(List.of("foo")).build();
            rec(out, "member", GroupCoordinatorRecordHelpers.newShareGroupMemberSubscriptionRecord("grp", m1));
            ShareGroupMember m2 = new ShareGroupMember.Builder("member-two")
                .setRackId("rack-a").setClientId("c").setClientHost("/10.0.0.1")
                .setSubscribedTopicNames(List.of("foo")).build();
            rec(out, "member-rack", GroupCoordinatorRecordHelpers.newShareGroupMemberSubscriptionRecord("grp", m2));
            rec(out, "member-tombstone", GroupCoordinatorRecordHelpers.newShareGroupMemberSubscriptionTombstoneRecord("grp", "m1"));
            rec(out, "epoch", GroupCoordinatorRecordHelpers.newShareGroupEpochRecord("grp", 7, 0x1122334455667788L));
            rec(out, "epoch-zero-hash", GroupCoordinatorRecordHelpers.newShareGroupEpochRecord("grp", 1, 0L));
            rec(out, "epoch-tombstone", GroupCoordinatorRecordHelpers.newShareGroupEpochTombstoneRecord("grp"));
            Map<Uuid, Set<Integer>> target = new HashMap<>();
            target.put(foo, new TreeSet<>(List.of(0, 2)));
            rec(out, "target-member", GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentRecord("grp", "m1", target));
            rec(out, "target-member-empty", GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentRecord("grp", "m1", Map.of()));
            rec(out, "target-member-tombstone", GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentTombstoneRecord("grp", "m1"));
            rec(out, "target-metadata", GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentMetadataRecord("grp", 3, 1700000000000L));
            rec(out, "target-metadata-zero-time", GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentMetadataRecord("grp", 5, 0L));
            rec(out, "target-metadata-tombstone", GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentMetadataTombstoneRecord("grp"));
            ShareGroupMember cur = new ShareGroupMember.Builder("m1")
                .setMemberEpoch(4).setPreviousMemberEpoch(3).setState(MemberState.STABLE)
                .setAssignedPartitions(target).build();
            rec(out, "current", GroupCoordinatorRecordHelpers.newShareGroupCurrentAssignmentRecord("grp", cur));
            rec(out, "current-tombstone", GroupCoordinatorRecordHelpers.newShareGroupCurrentAssignmentTombstoneRecord("grp", "m1"));
            Map<Uuid, ShareGroup.InitMapValue> initializing = Map.of(foo, new ShareGroup.InitMapValue("foo", new TreeSet<>(List.of(0, 1, 2)), 1L));
            Map<Uuid, ShareGroup.InitMapValue> initialized = Map.of(bar, new ShareGroup.InitMapValue("bar", new TreeSet<>(List.of(0)), 1L));
            rec(out, "state-partitions", GroupCoordinatorRecordHelpers.newShareGroupStatePartitionMetadataRecord("grp", initializing, initialized, Map.of()));
            rec(out, "state-partitions-deleting", GroupCoordinatorRecordHelpers.newShareGroupStatePartitionMetadataRecord("grp", Map.of(), Map.of(), Map.of(bar, "bar")));
            rec(out, "state-partitions-empty", GroupCoordinatorRecordHelpers.newShareGroupStatePartitionMetadataRecord("grp", Map.of(), Map.of(), Map.of()));
            rec(out, "state-partitions-tombstone", GroupCoordinatorRecordHelpers.newShareGroupStatePartitionMetadataTombstoneRecord("grp"));
        }
    }

    private static String assignmentString(Map<Uuid, Set<Integer>> a, Map<Uuid, String> names) {
        TreeMap<String, TreeSet<Integer>> sorted = new TreeMap<>();
        a.forEach((t, ps) -> { if (!ps.isEmpty()) sorted.put(names.get(t), new TreeSet<>(ps)); });
        List<String> parts = new ArrayList<>();
        sorted.forEach((n, ps) -> {
            List<String> s = new ArrayList<>();
            ps.forEach(p -> s.add(Integer.toString(p)));
            parts.add(n + ":" + String.join(".", s));
        });
        return parts.isEmpty() ? "-" : String.join(";", parts);
    }

    private static String randomMemberId(Random rnd) {
        switch (rnd.nextInt(3)) {
            case 0: return "m" + rnd.nextInt(40);
            case 1: return new Uuid(rnd.nextLong(), rnd.nextLong()).toString();
            default: return "consumer-" + rnd.nextInt(1000) + "-" + rnd.nextInt(1000);
        }
    }

    private static void writeAssignments(Path file) throws IOException {
        SimpleAssignor assignor = new SimpleAssignor();
        Random rnd = new Random(932);
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
            out.println("# Kafka 4.4.0's SimpleAssignor on seeded random share groups (compat-tests/sharegroup).");
            out.println("# case: topics (name id partitions assignable), then rounds of members");
            out.println("# (id, subscribed names, current target) and the targets Kafka computed.");
            for (int c = 0; c < 300; c++) {
                int numTopics = 1 + rnd.nextInt(3);
                Map<String, Uuid> ids = new LinkedHashMap<>();
                Map<Uuid, String> names = new HashMap<>();
                Map<Uuid, Integer> partitions = new HashMap<>();
                Map<Uuid, Set<Integer>> assignable = new HashMap<>();
                out.println("case " + c);
                for (int t = 0; t < numTopics; t++) {
                    String name = "t" + t;
                    Uuid id = new Uuid(rnd.nextLong(), rnd.nextLong());
                    int n = 1 + rnd.nextInt(rnd.nextBoolean() ? 4 : 12);
                    Set<Integer> as = new TreeSet<>();
                    boolean all = rnd.nextInt(4) != 0;
                    for (int p = 0; p < n; p++) if (all || rnd.nextBoolean()) as.add(p);
                    ids.put(name, id);
                    names.put(id, name);
                    partitions.put(id, n);
                    assignable.put(id, as);
                    List<String> s = new ArrayList<>();
                    as.forEach(p -> s.add(Integer.toString(p)));
                    out.println("topic " + name + " " + id.toString() + " " + n + " " + (s.isEmpty() ? "-" : String.join(".", s)));
                }
                boolean homogeneousBias = rnd.nextBoolean();
                TreeMap<String, List<String>> subs = new TreeMap<>();
                Map<String, Map<Uuid, Set<Integer>>> current = new HashMap<>();
                int numMembers = 1 + rnd.nextInt(rnd.nextBoolean() ? 4 : 14);
                List<String> allNames = new ArrayList<>(ids.keySet());
                for (int m = 0; m < numMembers; m++) subs.put(randomMemberId(rnd), randomSubscription(rnd, allNames, homogeneousBias));
                for (int round = 0; round < 4; round++) {
                    if (round > 0) mutate(rnd, subs, current, allNames, homogeneousBias);
                    out.println("round " + round);
                    Map<String, MemberSubscriptionAndAssignmentImpl> specs = new HashMap<>();
                    Map<String, Integer> counts = new HashMap<>();
                    for (Map.Entry<String, List<String>> e : subs.entrySet()) {
                        Set<String> nameSet = new HashSet<>(e.getValue());
                        Set<Uuid> topicIds = new LinkedHashSet<>();
                        for (String n : nameSet) { topicIds.add(ids.get(n)); counts.merge(n, 1, Integer::sum); }
                        Map<Uuid, Set<Integer>> cur = current.getOrDefault(e.getKey(), Map.of());
                        specs.put(e.getKey(), new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), topicIds, new Assignment(cur)));
                        out.println("member " + e.getKey() + " " + String.join(".", new TreeSet<>(e.getValue())) + " " + assignmentString(cur, names));
                    }
                    SubscriptionType type = SubscriptionType.HOMOGENEOUS;
                    for (int n : counts.values()) if (n != subs.size()) type = SubscriptionType.HETEROGENEOUS;
                    GroupSpecImpl spec = new GroupSpecImpl(specs, type, Map.of(), Optional.of(assignable));
                    SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
                        public int numPartitions(Uuid topicId) { return partitions.getOrDefault(topicId, -1); }
                        public Set<String> racksForPartition(Uuid topicId, int partition) { return Set.of(); }
                    };
                    GroupAssignment result = assignor.assign(spec, describer);
                    Map<String, Map<Uuid, Set<Integer>>> next = new HashMap<>();
                    for (String id : subs.keySet()) {
                        MemberAssignment ma = result.members().get(id);
                        Map<Uuid, Set<Integer>> a = new HashMap<>();
                        if (ma != null) ma.partitions().forEach((t, ps) -> { if (!ps.isEmpty()) a.put(t, new TreeSet<>(ps)); });
                        // The next round's current assignment: topics put into a
                        // HashMap in the byte order of their ids, partitions added
                        // to a HashSet in ascending order (Gregor's convention).
                        Map<Uuid, Set<Integer>> replayed = new HashMap<>();
                        List<Uuid> topicsInOrder = new ArrayList<>(a.keySet());
                        topicsInOrder.sort((x, y) -> {
                            int c1 = Long.compareUnsigned(x.getMostSignificantBits(), y.getMostSignificantBits());
                            return c1 != 0 ? c1 : Long.compareUnsigned(x.getLeastSignificantBits(), y.getLeastSignificantBits());
                        });
                        for (Uuid t : topicsInOrder) {
                            Set<Integer> ps = new HashSet<>();
                            new TreeSet<>(a.get(t)).forEach(ps::add);
                            replayed.put(t, ps);
                        }
                        next.put(id, replayed);
                        out.println("result " + id + " " + assignmentString(a, names));
                    }
                    current = next;
                }
            }
        }
    }

    private static List<String> randomSubscription(Random rnd, List<String> names, boolean homogeneousBias) {
        if (homogeneousBias) return new ArrayList<>(names);
        List<String> out = new ArrayList<>();
        for (String n : names) if (rnd.nextBoolean()) out.add(n);
        if (out.isEmpty()) out.add(names.get(rnd.nextInt(names.size())));
        return out;
    }

    private static void mutate(Random rnd, TreeMap<String, List<String>> subs, Map<String, Map<Uuid, Set<Integer>>> current,
                               List<String> names, boolean homogeneousBias) {
        int op = rnd.nextInt(4);
        if (op == 0 || subs.size() <= 1) {
            subs.put(randomMemberId(rnd), randomSubscription(rnd, names, homogeneousBias));
        } else if (op == 1) {
            String victim = new ArrayList<>(subs.keySet()).get(rnd.nextInt(subs.size()));
            subs.remove(victim);
            current.remove(victim);
        } else if (op == 2) {
            String who = new ArrayList<>(subs.keySet()).get(rnd.nextInt(subs.size()));
            subs.put(who, randomSubscription(rnd, names, false));
        } else {
            for (int k = 0; k < 3; k++) subs.put(randomMemberId(rnd), randomSubscription(rnd, names, homogeneousBias));
        }
    }
}
