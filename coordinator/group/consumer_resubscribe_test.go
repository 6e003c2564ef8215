package group

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
)

// TestConsumerSlidingResubscriptionConvergesRandomized: a member slides
// its subscription over 12 topics with, per seed, a random number of
// heartbeats between steps, late or prompt revocations, owned partitions
// sent or left null, and sometimes dropping unsubscribed partitions itself
// (as librdkafka does); once it stops changing, a few heartbeats bring it
// exactly the partitions of its last subscription, with no error on the
// way.
func TestConsumerSlidingResubscriptionConvergesRandomized(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		if msg := simOnce(t, seed); msg != "" {
			t.Fatalf("seed %d: %s", seed, msg)
		}
	}
}

// simOnce runs one seed and describes what went wrong ("" for nothing).
func simOnce(t *testing.T, seed int64) string {
	r := rand.New(rand.NewSource(seed))
	h := newConsumerHarness(t, Config{})
	const nt = 12
	var names []string
	for i := 0; i < nt; i++ {
		n := fmt.Sprintf("t%02d", i)
		names = append(names, n)
		h.addTopic(n, 4)
	}
	idName := map[TopicID]string{}
	for n, ti := range h.topics {
		idName[ti.ID] = n
	}
	type key struct {
		id TopicID
		p  int32
	}
	owned := map[key]bool{}
	var target map[key]bool
	toOwned := func(m map[key]bool) []OwnedTopic {
		by := map[TopicID][]int32{}
		for k := range m {
			by[k.id] = append(by[k.id], k.p)
		}
		out := []OwnedTopic{}
		for id, ps := range by {
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			out = append(out, OwnedTopic{TopicID: id, Partitions: ps})
		}
		sort.Slice(out, func(i, j int) bool { return string(out[i].TopicID[:]) < string(out[j].TopicID[:]) })
		return out
	}
	sub := names[0:5]
	res := ok(t, h.join("m", sub...))
	epoch := res.MemberEpoch
	var lastSentOwned string
	var log []string
	apply := func(res *ConsumerHeartbeatResult) {
		epoch = res.MemberEpoch
		if res.Assignment != nil {
			target = map[key]bool{}
			for _, a := range res.Assignment {
				for _, p := range a.Partitions {
					target[key{a.TopicID, p}] = true
				}
			}
		}
	}
	apply(res)
	reconcile := func() {
		if target == nil {
			return
		}
		revoked := false
		for k := range owned {
			if !target[k] {
				delete(owned, k)
				revoked = true
			}
		}
		if revoked && r.Intn(2) == 0 {
			return
		}
		for k := range target {
			owned[k] = true
		}
	}
	sentSub := true
	beat := func() string {
		req := ConsumerHeartbeatRequest{MemberID: "m", MemberEpoch: epoch, RebalanceTimeoutMs: -1}
		if !sentSub {
			req.SubscribedTopicNames = append([]string(nil), sub...)
			sentSub = true
		}
		o := toOwned(owned)
		if s := fmt.Sprint(o); s != lastSentOwned || r.Intn(4) == 0 {
			req.TopicPartitions = o
			lastSentOwned = s
		}
		res := h.hb(req)
		log = append(log, fmt.Sprintf("hb e=%d sub=%v owned=%v -> err=%d e=%d a=%v", req.MemberEpoch, req.SubscribedTopicNames, req.TopicPartitions != nil, res.ErrorCode, res.MemberEpoch, res.Assignment != nil))
		if res.ErrorCode != 0 {
			return fmt.Sprintf("error %d %s", res.ErrorCode, optStr(res.ErrorMessage))
		}
		apply(res)
		return ""
	}
	for i := 1; i+5 <= nt; i++ {
		sub = names[i : i+5]
		sentSub = false
		if r.Intn(2) == 0 {
			// client drops unsubscribed partitions itself
			for k := range owned {
				in := false
				for _, n := range sub {
					if idName[k.id] == n {
						in = true
					}
				}
				if !in {
					delete(owned, k)
				}
			}
		}
		for j := r.Intn(3); j > 0; j-- {
			if r.Intn(2) == 0 {
				reconcile()
			}
			if m := beat(); m != "" {
				return m
			}
		}
	}
	for j := 0; j < 20; j++ {
		reconcile()
		if m := beat(); m != "" {
			return m
		}
	}
	want := map[key]bool{}
	for _, n := range sub {
		for p := int32(0); p < 4; p++ {
			want[key{h.topics[n].ID, p}] = true
		}
	}
	if fmt.Sprint(toOwned(owned)) != fmt.Sprint(toOwned(want)) {
		return fmt.Sprintf("owned %v want %v\n%v", toOwned(owned), toOwned(want), log)
	}
	return ""
}

func contains32(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// TestConsumerPartitionPendingRevocationComesBackAtOnce: a member told to
// revoke topic a re-subscribes to a before acknowledging; once it has
// revoked, it gets a back in the same heartbeat as b, since the only
// holder of a's partitions was itself (Kafka 4's CurrentAssignmentBuilder
// does not count a member's own pending revocations as unreleased).
func TestConsumerPartitionPendingRevocationComesBackAtOnce(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	h.addTopic("a", 2)
	h.addTopic("b", 2)
	r := ok(t, h.join("m", "a"))
	r = ok(t, h.beat("m", r.MemberEpoch, r.Assignment))
	r = ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m", MemberEpoch: r.MemberEpoch, RebalanceTimeoutMs: -1, SubscribedTopicNames: []string{"b"}}))
	if countPartitions(r.Assignment) != 0 {
		t.Fatalf("revocation of a: %+v", r.Assignment)
	}
	r = ok(t, h.hb(ConsumerHeartbeatRequest{MemberID: "m", MemberEpoch: r.MemberEpoch, RebalanceTimeoutMs: -1, SubscribedTopicNames: []string{"a", "b"}}))
	r = ok(t, h.beat("m", r.MemberEpoch, []OwnedTopic{}))
	if countPartitions(r.Assignment) != 4 {
		t.Fatalf("after the revocation: %d partitions, want a's and b's 4", countPartitions(r.Assignment))
	}
	if m := h.c.groups["g"].cg.members["m"]; m.state != memberStable {
		t.Fatalf("member state %v", m.state)
	}
}
