package broker

// The broker's side of package replication: its Config, taken from the
// broker's, and the Env the cluster gives it.

import (
	"time"

	"github.com/gregor-broker/gregor/broker/peer"
	"github.com/gregor-broker/gregor/broker/replication"
)

// replicationConfig is the replication package's part of b's config.
func (b *Broker) replicationConfig() replication.Config {
	cfg := &b.cfg
	return replication.Config{
		NodeID:                       cfg.NodeID,
		ReplicaFetchWaitMaxMs:        cfg.ReplicaFetchWaitMaxMs,
		ReplicaFetchMinBytes:         cfg.ReplicaFetchMinBytes,
		ReplicaFetchMaxBytes:         cfg.ReplicaFetchMaxBytes,
		ReplicaFetchResponseMaxBytes: cfg.ReplicaFetchResponseMaxBytes,
		ReplicaFetchBackoffMs:        cfg.ReplicaFetchBackoffMs,
		ListOffsetsVersion:           handlers[2].max,
		Logger:                       b.log,
		BeforeFetch:                  cfg.testHooks.replicaFetch,
	}
}

// replicationEnv is the cluster as package replication sees it.
type replicationEnv struct{ c *cluster }

func (e replicationEnv) BrokerEpoch() int64 { return e.c.epoch.Load() }

func (e replicationEnv) Endpoint(id int32) (host string, port int32, registered bool) {
	im := e.c.currentImage()
	if im == nil || im.Brokers[id] == nil {
		return "", -1, false
	}
	host, port = brokerEndpoint(im.Brokers[id])
	return host, port, true
}

func (e replicationEnv) NewConn() replication.Conn {
	return &peer.Conn{ClientID: replication.FetchClientID, MaxResponseBytes: e.c.b.cfg.MaxFrameBytes, DialTimeout: 10 * time.Second}
}

// FollowerThrottled is replication.Topic's: whether the topic's
// follower.replication.throttled.replicas names the replica (an atomic
// load).
func (t *topic) FollowerThrottled(partition, broker int32) bool {
	return t.effective.Load().followerThrottled.Has(partition, broker)
}
