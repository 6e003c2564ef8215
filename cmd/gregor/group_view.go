package main

// What group describe and group reset-offsets know of a group, whichever
// protocol it speaks. Classic groups are described with DescribeGroups;
// Kafka answers that with GROUP_ID_NOT_FOUND (or Dead) for a group of the
// consumer protocol (KIP-848), which ConsumerGroupDescribe describes. As
// Kafka's admin client, a group that DescribeGroups does not know is looked
// up in ListGroups, and described with ConsumerGroupDescribe if it is a
// consumer group.

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupView is one group as the group commands show it.
type groupView struct {
	name         string
	groupType    string // "classic" or "consumer"
	state        string // Kafka's state name: Empty, Stable, ...
	protocolType string // classic groups: "consumer", "connect", ...
	protocol     string // the assignor
	coordinator  kadm.BrokerDetail
	members      []memberView
}

// memberView is one member of a group.
type memberView struct {
	id, instance, clientID, host string
	assigned                     map[string][]int32 // partitions by topic
}

// describeGroups describes the named groups. A group that does not exist
// (or that this command cannot describe) has an error instead.
func describeGroups(adm *adminSession, names []string) (map[string]groupView, map[string]error, error) {
	views := make(map[string]groupView)
	errs := make(map[string]error)
	classic, err := adm.DescribeGroups(adm.ctx, names...)
	if err != nil {
		return nil, nil, adm.check(err)
	}
	var unknown []string
	for _, name := range names {
		d, ok := classic[name]
		switch {
		case !ok || errors.Is(d.Err, kerr.GroupIDNotFound) || (d.Err == nil && d.State == "Dead"):
			unknown = append(unknown, name)
		case d.Err != nil:
			errs[name] = kafkaError("group "+name, d.Err, d.ErrMessage)
		default:
			views[name] = classicView(d)
		}
	}
	if len(unknown) == 0 {
		return views, errs, nil
	}
	listed, err := adm.ListGroups(adm.ctx)
	if err != nil {
		return nil, nil, adm.check(err)
	}
	var consumer []string
	for _, name := range unknown {
		switch lg, ok := listed[name]; {
		case !ok:
			errs[name] = kafkaError("group "+name, kerr.GroupIDNotFound, "")
		case lg.GroupType == "consumer":
			consumer = append(consumer, name)
		default:
			errs[name] = fmt.Errorf("group %s is a %s group; gregor group handles classic and consumer groups", name, orDash(lg.GroupType))
		}
	}
	if len(consumer) == 0 {
		return views, errs, nil
	}
	described, err := adm.DescribeConsumerGroups(adm.ctx, consumer...)
	if err != nil {
		return nil, nil, adm.check(err)
	}
	for _, name := range consumer {
		d, ok := described[name]
		switch {
		case !ok:
			errs[name] = kafkaError("group "+name, kerr.GroupIDNotFound, "")
		case d.Err != nil:
			errs[name] = kafkaError("group "+name, d.Err, "")
		default:
			views[name] = consumerView(d)
		}
	}
	return views, errs, nil
}

func classicView(d kadm.DescribedGroup) groupView {
	v := groupView{name: d.Group, groupType: "classic", state: d.State, protocolType: d.ProtocolType, protocol: d.Protocol, coordinator: d.Coordinator}
	for _, m := range d.Members {
		mv := memberView{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost, assigned: make(map[string][]int32)}
		if m.InstanceID != nil {
			mv.instance = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				mv.assigned[t.Topic] = append(mv.assigned[t.Topic], t.Partitions...)
			}
		}
		v.members = append(v.members, mv)
	}
	return v
}

func consumerView(d kadm.DescribedConsumerGroup) groupView {
	v := groupView{name: d.Group, groupType: "consumer", state: d.State, protocolType: "consumer", protocol: d.AssignorName, coordinator: d.Coordinator}
	for _, m := range d.Members {
		mv := memberView{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost, assigned: make(map[string][]int32)}
		if m.InstanceID != nil {
			mv.instance = *m.InstanceID
		}
		for t, ps := range m.Assignment {
			for p := range ps {
				mv.assigned[t] = append(mv.assigned[t], p)
			}
		}
		v.members = append(v.members, mv)
	}
	return v
}

// owners maps each assigned partition to the member consuming it.
func (v groupView) owners() map[string]map[int32]string {
	out := make(map[string]map[int32]string)
	for _, m := range v.members {
		for t, ps := range m.assigned {
			if out[t] == nil {
				out[t] = make(map[int32]string)
			}
			for _, p := range ps {
				out[t][p] = m.id
			}
		}
	}
	return out
}

// assignment formats a member's partitions as topic:0,1 topic2:3.
func (m memberView) assignment() string {
	var parts []string
	for t, ps := range m.assigned {
		ps = append([]int32(nil), ps...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		parts = append(parts, t+":"+nodeList(ps))
	}
	if len(parts) == 0 {
		return "-"
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// partitionLag is one row of group describe.
type partitionLag struct {
	topic     string
	partition int32
	committed int64 // -1: none
	end       int64 // -1: not known
	lag       int64 // -1: not known (no commit, or no end offset)
	member    string
	err       error
}

// groupLag lists, for every partition the group has committed to or is
// assigned, the committed offset, the end offset and the lag, sorted by
// topic and partition.
func groupLag(adm *adminSession, v groupView) ([]partitionLag, error) {
	committed, err := adm.FetchOffsets(adm.ctx, v.name)
	if err != nil {
		return nil, adm.check(err)
	}
	if err := committed.Error(); err != nil {
		return nil, kafkaError("group "+v.name, err, "")
	}
	owners := v.owners()
	rows := make(map[string]map[int32]*partitionLag)
	add := func(t string, p int32) *partitionLag {
		if rows[t] == nil {
			rows[t] = make(map[int32]*partitionLag)
		}
		if rows[t][p] == nil {
			rows[t][p] = &partitionLag{topic: t, partition: p, committed: -1, end: -1, lag: -1, member: owners[t][p]}
		}
		return rows[t][p]
	}
	committed.Each(func(o kadm.OffsetResponse) { add(o.Topic, o.Partition).committed = o.At })
	for t, ps := range owners {
		for p := range ps {
			add(t, p)
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	topics := make([]string, 0, len(rows))
	for t := range rows {
		topics = append(topics, t)
	}
	ends, err := adm.ListEndOffsets(adm.ctx, topics...)
	if err != nil {
		var se *kadm.ShardErrors
		if !errors.As(err, &se) {
			return nil, adm.check(err)
		}
		// Partitions whose leaders did not answer show their error.
	}
	var out []partitionLag
	for t, ps := range rows {
		for p, r := range ps {
			switch end, ok := ends.Lookup(t, p); {
			case !ok:
				r.err = kerr.UnknownTopicOrPartition
			case end.Err != nil:
				r.err = end.Err
			default:
				r.end = end.Offset
				if r.committed >= 0 {
					// As kafka-consumer-groups.sh: no lag without a commit.
					r.lag = max(end.Offset-r.committed, 0)
				}
			}
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out, nil
}
