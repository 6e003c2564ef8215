package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/share"
)

// adminTimeout bounds a write the broker sends the controller and the wait
// for its result to reach the local catalogue.
const adminTimeout = 30 * time.Second

// brokerRegistered reports whether id names a broker: this node on a
// single node, a registered broker of the image in cluster mode.
func (b *Broker) brokerRegistered(id int32) bool {
	if !b.isCluster() {
		return id == b.cfg.NodeID
	}
	im := b.cluster.currentImage()
	return im != nil && im.Brokers[id] != nil
}

// kerrOf splits a controller error into the Kafka error and its message.
func kerrOf(err error) (*kerr.Error, string) {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.UnknownServerError, err.Error()
	}
	return ke, err.Error()
}

// createTopic creates a topic through the active controller, in-process
// or forwarded to its node, and returns the local topic once the
// catalogue has applied it. A replication factor above the number of
// unfenced brokers is INVALID_REPLICATION_FACTOR, from the controller's
// placement, as Kafka.
func (c *cluster) createTopic(tc topicCreation) (*topic, *kerr.Error, string) {
	ct := controller.CreateTopic{Name: tc.name, NumPartitions: tc.partitions, ReplicationFactor: tc.replicationFactor, Configs: map[string]*string{}}
	for k, v := range tc.configs {
		ct.Configs[k] = &v
	}
	if len(tc.assignments) > 0 {
		ct.NumPartitions, ct.ReplicationFactor, ct.Assignments = -1, -1, tc.assignments
	}
	ctx, cancel := context.WithTimeout(c.ctx, adminTimeout)
	defer cancel()
	res, err := c.ctrl.CreateTopics(ctx, []controller.CreateTopic{ct}, tc.validateOnly)
	var result controller.TopicResult
	if leader := remoteLeader(err, c.b.cfg.NodeID); leader >= 0 && !tc.forwarded {
		addr, aerr := c.activeEndpoint(leader)
		if aerr != nil {
			ke, msg := kerrOf(aerr)
			return nil, ke, msg
		}
		result, err = c.rpc.createTopic(ctx, addr, ct, tc.validateOnly)
	} else if err == nil {
		result = res[0]
	}
	if err == nil {
		err = result.Err
	}
	if err != nil {
		ke, msg := kerrOf(err)
		if ke == kerr.TopicAlreadyExists {
			// Created through another broker: let the caller find it here.
			c.waitFor(ctx, func(im *metadata.Image) bool { _, ok := im.TopicIDs[tc.name]; return ok })
		}
		return nil, ke, msg
	}
	if tc.validateOnly {
		return nil, nil, ""
	}
	id := result.TopicID
	if !c.waitFor(ctx, func(im *metadata.Image) bool { return im.Topics[id] != nil }) {
		return nil, kerr.RequestTimedOut, fmt.Sprintf("Topic '%s' was created, but this broker has not applied it yet.", tc.name)
	}
	t := c.b.lookupTopicID([16]byte(id))
	if t == nil { // deleted again already
		return nil, kerr.UnknownTopicOrPartition, fmt.Sprintf("Topic '%s' was deleted right after it was created.", tc.name)
	}
	return t, nil, ""
}

// deleteTopic deletes a topic through the active controller and answers
// once the local catalogue has deleted it.
//
// It returns the error code and message, and the id of the topic deleted.
func (c *cluster) deleteTopic(name *string, id [16]byte, forwarded bool) (int16, *string, [16]byte) {
	hasID := id != [16]byte{}
	if (name != nil) == hasID {
		return kerr.InvalidRequest.Code, nil, id
	}
	ref := controller.TopicRef{ID: metadata.UUID(id)}
	if name != nil {
		ref.Name = *name
	}
	ctx, cancel := context.WithTimeout(c.ctx, adminTimeout)
	defer cancel()
	res, err := c.ctrl.DeleteTopics(ctx, []controller.TopicRef{ref})
	var result controller.TopicResult
	if leader := remoteLeader(err, c.b.cfg.NodeID); leader >= 0 && !forwarded {
		addr, aerr := c.activeEndpoint(leader)
		if aerr != nil {
			err = aerr
		} else {
			result, err = c.rpc.deleteTopic(ctx, addr, ref)
		}
	} else if err == nil {
		result = res[0]
	}
	if err == nil {
		err = result.Err
	}
	if err != nil {
		ke, msg := kerrOf(err)
		return ke.Code, &msg, id
	}
	gone := func(im *metadata.Image) bool {
		if hasID {
			return im.Topics[metadata.UUID(id)] == nil
		}
		return im.Topics[result.TopicID] == nil
	}
	if !c.waitFor(ctx, gone) {
		msg := "The topic was deleted, but this broker has not applied the deletion yet."
		return kerr.RequestTimedOut.Code, &msg, [16]byte(result.TopicID)
	}
	return 0, nil, [16]byte(result.TopicID)
}

// coordinator answers FindCoordinator for one key in cluster mode: the
// leader of the key's partition of the coordinator's topic, created
// through the controller when missing. A share-partition key (type 2) is
// coordinated by the leader of its partition of __share_group_state
// (share.PartitionFor), as Kafka's ShareCoordinatorService.partitionFor.
// The address is the coordinator's on the client's listener: a
// coordinator without that listener is COORDINATOR_NOT_AVAILABLE, as
// Kafka's getAliveBrokerNode finds none.
func (c *cluster) coordinator(keyType int8, key string, l *listener) (code int16, node int32, host string, port int32) {
	b := c.b
	var tc topicCreation
	partitionFor := func(n int32) int32 { return group.PartitionFor(key, n) }
	switch keyType {
	case 0:
		tc = b.offsetsTopicCreation()
	case 1:
		tc = b.txnStateTopicCreation()
	case 2:
		k, err := parseShareCoordinatorKey(key)
		if err != nil {
			return kerr.InvalidRequest.Code, -1, "", -1
		}
		tc = b.shareStateTopicCreation()
		partitionFor = func(n int32) int32 { return share.PartitionFor(k, n) }
	default:
		return 0, b.cfg.NodeID, l.host, l.port
	}
	t := b.lookupTopic(tc.name)
	if t == nil {
		var kErr *kerr.Error
		t, kErr, _ = b.createTopic(tc)
		if errors.Is(kErr, kerr.TopicAlreadyExists) {
			t = b.lookupTopic(tc.name)
		}
		if t == nil {
			return kerr.CoordinatorNotAvailable.Code, -1, "", -1
		}
	}
	parts := b.partitions(t)
	if len(parts) == 0 {
		return kerr.CoordinatorNotAvailable.Code, -1, "", -1
	}
	p := parts[partitionFor(int32(len(parts)))]
	_, br, ok := c.leaderEndpoint(p)
	if !ok || br.Fenced {
		return kerr.CoordinatorNotAvailable.Code, -1, "", -1
	}
	host, port, found := brokerEndpoint(br, l.cfg.Name)
	if !found {
		return kerr.CoordinatorNotAvailable.Code, -1, "", -1
	}
	return 0, br.ID, host, port
}

// createPartitions grows a topic through the active controller and
// answers once the local catalogue has the new partitions.
func (c *cluster) createPartitions(rt kmsg.CreatePartitionsRequestTopic, validateOnly, forwarded bool) (*kerr.Error, string) {
	cp := controller.CreatePartitions{Name: rt.Topic, Count: rt.Count}
	for _, a := range rt.Assignment {
		cp.Assignments = append(cp.Assignments, a.Replicas)
	}
	ctx, cancel := context.WithTimeout(c.ctx, adminTimeout)
	defer cancel()
	res, err := c.ctrl.CreatePartitions(ctx, []controller.CreatePartitions{cp}, validateOnly)
	var result controller.TopicResult
	if leader := remoteLeader(err, c.b.cfg.NodeID); leader >= 0 && !forwarded {
		addr, aerr := c.activeEndpoint(leader)
		if aerr != nil {
			err = aerr
		} else {
			result, err = c.rpc.createPartitions(ctx, addr, rt, validateOnly)
		}
	} else if err == nil {
		result = res[0]
	}
	if err == nil {
		err = result.Err
	}
	if err != nil {
		return kerrOf(err)
	}
	if validateOnly {
		return nil, ""
	}
	grown := func(im *metadata.Image) bool {
		id, ok := im.TopicIDs[rt.Topic]
		return ok && int32(len(im.Topics[id].Partitions)) >= rt.Count
	}
	if !c.waitFor(ctx, grown) {
		return kerr.RequestTimedOut, fmt.Sprintf("The partitions of '%s' were created, but this broker has not applied them yet.", rt.Topic)
	}
	return nil, ""
}

// alterTopicConfigs writes a topic's new config set (validated) through
// the active controller, as the keys set or deleted against old, and
// answers once the local catalogue has it. A forwarded alteration is sent
// as IncrementalAlterConfigs with those SET and DELETE operations.
func (c *cluster) alterTopicConfigs(name string, old, next topicconfig.Configs, forwarded bool) alterResult {
	changes := configChanges(metadata.ResourceTopic, name, old, next)
	if len(changes) == 0 {
		return alterResult{}
	}
	ctx, cancel := context.WithTimeout(c.ctx, adminTimeout)
	defer cancel()
	err := c.ctrl.AlterConfigs(ctx, changes)
	if leader := remoteLeader(err, c.b.cfg.NodeID); leader >= 0 && !forwarded {
		addr, aerr := c.activeEndpoint(leader)
		if aerr != nil {
			err = aerr
		} else {
			err = c.rpc.alterTopicConfigs(ctx, addr, name, changes)
		}
	}
	if err != nil {
		ke, msg := kerrOf(err)
		return alterResult{ke, msg}
	}
	applied := func(im *metadata.Image) bool {
		return maps.Equal(im.Configs[metadata.ConfigResource{Type: metadata.ResourceTopic, Name: name}], map[string]string(next)) ||
			(len(next) == 0 && len(im.Configs[metadata.ConfigResource{Type: metadata.ResourceTopic, Name: name}]) == 0)
	}
	if !c.waitFor(ctx, applied) {
		return alterResult{kerr.RequestTimedOut, fmt.Sprintf("The configs of '%s' were altered, but this broker has not applied them yet.", name)}
	}
	return alterResult{}
}

// configChanges are the ConfigRecord changes that take resource name's
// configs from old to next: a SET of each key added or changed, a DELETE
// of each key removed, in key order.
func configChanges(typ int8, name string, old, next map[string]string) []controller.ConfigChange {
	var changes []controller.ConfigChange
	for _, k := range sortedConfigNames(old, next) {
		ov, inOld := old[k]
		nv, inNext := next[k]
		switch {
		case inNext && (!inOld || ov != nv):
			changes = append(changes, controller.ConfigChange{ResourceType: typ, ResourceName: name, Name: k, Value: &nv})
		case inOld && !inNext:
			changes = append(changes, controller.ConfigChange{ResourceType: typ, ResourceName: name, Name: k})
		}
	}
	return changes
}

func sortedConfigNames(a, b topicconfig.Configs) []string {
	var names []string
	for k := range a {
		names = append(names, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

// coordinates reports whether this broker leads groupID's partition of
// __consumer_offsets, and so coordinates the group. Without the topic (not
// created yet, or not applied here yet) no broker does: the client is
// answered NOT_COORDINATOR and asks FindCoordinator, which creates it. A
// group served before its partition is loaded would be dropped by the load.
func (c *cluster) coordinates(groupID string) bool {
	t := c.b.lookupTopic(offsetsTopic)
	if t == nil {
		return false
	}
	parts := c.b.partitions(t)
	if len(parts) == 0 {
		return false
	}
	return c.b.leadsHere(parts[group.PartitionFor(groupID, int32(len(parts)))])
}
