package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func electReq(version int16, typ int8, topics map[string][]int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.SetVersion(version)
	req.ElectionType = typ
	req.TimeoutMillis = 30000
	if topics == nil {
		return req
	}
	req.Topics = []kmsg.ElectLeadersRequestTopic{}
	for name, parts := range topics {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = name, parts
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestElectLeadersSingleNodeNeedsNoElection: on one node every partition's
// leader is its live preferred replica, so both election types answer
// ELECTION_NOT_NEEDED, and missing topics or partitions are
// UNKNOWN_TOPIC_OR_PARTITION with Kafka's messages.
func TestElectLeadersSingleNodeNeedsNoElection(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	adm, _ := newAdmin(t, b.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	tests := []struct {
		name      string
		version   int16
		typ       int8
		partition int32
		topic     string
		want      *kerr.Error
		msg       string
	}{
		{"preferred v0", 0, 0, 1, "t", kerr.ElectionNotNeeded, electionNotNeeded},
		{"preferred v1", 1, 0, 0, "t", kerr.ElectionNotNeeded, electionNotNeeded},
		{"unclean v2", 2, 1, 1, "t", kerr.ElectionNotNeeded, electionNotNeeded},
		{"unknown topic", 2, 0, 0, "nope", kerr.UnknownTopicOrPartition, "No such topic as nope"},
		{"partition past the end", 2, 0, 2, "t", kerr.UnknownTopicOrPartition, "No such partition as t-2"},
		{"negative partition", 1, 1, -1, "t", kerr.UnknownTopicOrPartition, "No such partition as t--1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := c.do(electReq(tt.version, tt.typ, map[string][]int32{tt.topic: {tt.partition}})).(*kmsg.ElectLeadersResponse)
			wantCode(t, "top level", resp.ErrorCode, nil)
			if len(resp.Topics) != 1 || resp.Topics[0].Topic != tt.topic || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("results %+v, want one partition of %s", resp.Topics, tt.topic)
			}
			p := resp.Topics[0].Partitions[0]
			if p.Partition != tt.partition {
				t.Fatalf("partition %d, want %d", p.Partition, tt.partition)
			}
			wantCode(t, "partition", p.ErrorCode, tt.want)
			if p.ErrorMessage == nil || *p.ErrorMessage != tt.msg {
				t.Fatalf("message %v, want %q", p.ErrorMessage, tt.msg)
			}
		})
	}
}

// TestElectLeadersAllPartitionsListsTopicsOnly: a null topic list elects
// every partition; like Kafka, each topic is listed and the partitions that
// need no election (all of them here) are left out.
func TestElectLeadersAllPartitionsListsTopicsOnly(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	adm, _ := newAdmin(t, b.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "b"); err != nil {
		t.Fatal(err)
	}
	resp := dialRaw(t, b.Addr()).do(electReq(2, 1, nil)).(*kmsg.ElectLeadersResponse)
	wantCode(t, "top level", resp.ErrorCode, nil)
	var names []string
	for _, rt := range resp.Topics {
		names = append(names, rt.Topic)
		if len(rt.Partitions) != 0 {
			t.Fatalf("topic %s lists partitions %+v, want none", rt.Topic, rt.Partitions)
		}
	}
	if len(names) != 2 || names[0] != "a" || names[1] != "b" {
		t.Fatalf("topics %v, want [a b]", names)
	}

	// kadm: every partition named explicitly.
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"a": {0: {}, 1: {}, 2: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		if r := res["a"][p]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
			t.Fatalf("a-%d: %v, want ELECTION_NOT_NEEDED", p, r.Err)
		}
	}
}

// TestElectLeadersUnknownElectionType: Kafka fails the request with
// INVALID_REQUEST at the top and on every partition named.
func TestElectLeadersUnknownElectionType(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	resp := c.do(electReq(2, 5, map[string][]int32{"x": {0, 3}})).(*kmsg.ElectLeadersResponse)
	wantCode(t, "top level", resp.ErrorCode, kerr.InvalidRequest)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("results %+v, want both partitions of x", resp.Topics)
	}
	for _, p := range resp.Topics[0].Partitions {
		wantCode(t, "partition", p.ErrorCode, kerr.InvalidRequest)
		if p.ErrorMessage == nil || *p.ErrorMessage != "Unknown election type 5" {
			t.Fatalf("message %v", p.ErrorMessage)
		}
	}
	all := c.do(electReq(1, -1, nil)).(*kmsg.ElectLeadersResponse)
	wantCode(t, "top level, all partitions", all.ErrorCode, kerr.InvalidRequest)
	if len(all.Topics) != 0 {
		t.Fatalf("results %+v, want none", all.Topics)
	}
}

func TestUncleanDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want bool
	}{{"", false}, {"false", false}, {"true", true}, {"TRUE", true}} {
		defaults := map[string]string{}
		if c.v != "" {
			defaults["unclean.leader.election.enable"] = c.v
		}
		if got := uncleanDefault(defaults); got != c.want {
			t.Errorf("unclean.leader.election.enable=%q: %v, want %v", c.v, got, c.want)
		}
	}
}
