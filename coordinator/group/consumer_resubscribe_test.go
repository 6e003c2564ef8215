package group

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
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

// slidingClient is a KIP-848 member driven the way librdkafka drives one:
// each heartbeat carries only what changed (null subscription, null owned
// partitions), and the client revokes or takes partitions when the test
// says so. Every heartbeat, its answer and the group's state afterwards
// go into a transcript.
type slidingClient struct {
	h      *consumerHarness
	log    strings.Builder
	names  map[TopicID]string
	id     string
	epoch  int32
	owned  []OwnedTopic // what the client holds
	target []OwnedTopic // the last assignment the coordinator sent
	n      int
}

func (c *slidingClient) ownedString(ts []OwnedTopic) string {
	if ts == nil {
		return "null"
	}
	var parts []string
	for _, t := range ts {
		var ps []string
		for _, p := range t.Partitions {
			ps = append(ps, fmt.Sprint(p))
		}
		parts = append(parts, c.names[t.TopicID]+":"+strings.Join(ps, ","))
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func (c *slidingClient) send(req ConsumerHeartbeatRequest) *ConsumerHeartbeatResult {
	c.h.t.Helper()
	c.n++
	req.MemberID = c.id
	names := "null"
	if req.SubscribedTopicNames != nil {
		names = "[" + strings.Join(req.SubscribedTopicNames, " ") + "]"
	}
	fmt.Fprintf(&c.log, "#%d heartbeat epoch=%d names=%s owned=%s rebalance=%d\n", c.n, req.MemberEpoch, names, c.ownedString(req.TopicPartitions), req.RebalanceTimeoutMs)
	res := c.h.hb(req)
	a := "none"
	if res.Assignment != nil {
		a = c.ownedString(res.Assignment)
		c.target = res.Assignment
	}
	fmt.Fprintf(&c.log, "  reply %s epoch=%d assignment=%s\n", errName(res.ErrorCode), res.MemberEpoch, a)
	c.epoch = res.MemberEpoch
	for _, g := range c.h.c.ConsumerGroupDescribe([]string{"g"}) {
		if g.ErrorCode != 0 {
			fmt.Fprintf(&c.log, "  group %s\n", errName(g.ErrorCode))
			continue
		}
		fmt.Fprintf(&c.log, "  group %s epoch=%d assignment-epoch=%d", g.State, g.Epoch, g.AssignmentEpoch)
		for _, m := range g.Members {
			st := c.h.c.groups["g"].cg.members[m.MemberID].state
			fmt.Fprintf(&c.log, " %s(epoch=%d %s assigned=%s target=%s)", m.MemberID, m.MemberEpoch, st, c.ownedString(m.Assignment), c.ownedString(m.TargetAssign))
		}
		fmt.Fprintln(&c.log)
	}
	return res
}

// subscribe sends a new subscription and nothing else, as librdkafka does
// when the application calls subscribe.
func (c *slidingClient) subscribe(topics ...string) {
	c.send(ConsumerHeartbeatRequest{MemberEpoch: c.epoch, RebalanceTimeoutMs: -1, SubscribedTopicNames: topics})
}

// revoke gives up what the last assignment no longer holds and says so.
func (c *slidingClient) revoke() {
	var kept []OwnedTopic
	for _, t := range c.owned {
		var ps []int32
		for _, p := range t.Partitions {
			for _, a := range c.target {
				if a.TopicID == t.TopicID && contains32(a.Partitions, p) {
					ps = append(ps, p)
				}
			}
		}
		if len(ps) > 0 {
			kept = append(kept, OwnedTopic{TopicID: t.TopicID, Partitions: ps})
		}
	}
	c.owned = append([]OwnedTopic{}, kept...)
	fmt.Fprintf(&c.log, "client revokes, holds %s\n", c.ownedString(c.owned))
	c.send(ConsumerHeartbeatRequest{MemberEpoch: c.epoch, RebalanceTimeoutMs: -1, TopicPartitions: c.owned})
}

// take takes the whole last assignment and acknowledges it.
func (c *slidingClient) take() {
	c.owned = append([]OwnedTopic{}, c.target...)
	fmt.Fprintf(&c.log, "client takes, holds %s\n", c.ownedString(c.owned))
	c.send(ConsumerHeartbeatRequest{MemberEpoch: c.epoch, RebalanceTimeoutMs: -1, TopicPartitions: c.owned})
}

func contains32(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// TestConsumerSlidingResubscriptionTranscript is issue #26's sequence on
// the state machine, against testdata/sliding.txt: a member changes its
// subscription twice before revoking anything, revokes late, leaves and
// rejoins under the same member id (librdkafka's unsubscribe and
// subscribe), and every step ends with the assignment of its current
// subscription; a heartbeat carrying only changed fields (null
// subscription, null owned partitions) changes nothing else.
func TestConsumerSlidingResubscriptionTranscript(t *testing.T) {
	h := newConsumerHarness(t, Config{})
	c := &slidingClient{h: h, names: map[TopicID]string{}, id: "m"}
	for i := range 8 {
		n := fmt.Sprintf("t%d", i)
		c.names[h.addTopic(n, 2)] = n
	}
	c.send(ConsumerHeartbeatRequest{MemberEpoch: 0, RebalanceTimeoutMs: 30000, SubscribedTopicNames: []string{"t0", "t1", "t2"}, TopicPartitions: []OwnedTopic{}})
	c.take()
	// Two new subscriptions before the client revokes anything.
	c.subscribe("t1", "t2", "t3")
	c.subscribe("t2", "t3", "t4")
	c.send(ConsumerHeartbeatRequest{MemberEpoch: c.epoch, RebalanceTimeoutMs: -1})
	c.revoke()
	c.revoke()
	c.take()
	// A subscription whose revocation the client acknowledges at once.
	c.subscribe("t3", "t4", "t5")
	c.revoke()
	c.take()
	// unsubscribe, then subscribe: leave, and join again as the same member.
	c.send(ConsumerHeartbeatRequest{MemberEpoch: leaveEpoch, RebalanceTimeoutMs: -1})
	c.owned = nil
	c.send(ConsumerHeartbeatRequest{MemberEpoch: 0, RebalanceTimeoutMs: 30000, SubscribedTopicNames: []string{"t5", "t6", "t7"}, TopicPartitions: []OwnedTopic{}})
	c.take()
	// A full heartbeat (after an error, librdkafka sends every field):
	// the assignment comes back whole though unchanged.
	c.send(ConsumerHeartbeatRequest{MemberEpoch: c.epoch, RebalanceTimeoutMs: 30000, SubscribedTopicNames: []string{"t5", "t6", "t7"}, TopicPartitions: c.owned})
	if got := c.ownedString(c.owned); got != "[t5:0,1 t6:0,1 t7:0,1]" {
		t.Fatalf("ends with %s", got)
	}
	checkGoldenText(t, "sliding", c.log.String())
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
