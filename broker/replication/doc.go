// Package replication is a cluster node's replication, as Kafka's
// ReplicaManager and its fetcher threads run it, over the partitions
// package partition keeps. It owns:
//
//   - the replica fetchers (fetcher.go, Kafka's ReplicaFetcherThread):
//     one goroutine and one connection per leader broker, copying the
//     partitions this node follows (Manager.Follow) and truncating them
//     where their log diverges from the leader's;
//   - the replication throttles' decisions (throttle.go): the two rates
//     (Quotas), a leader holding back a throttled follower, a follower
//     leaving a throttled partition out of its fetch;
//   - the leader's periodic work and ISR changes (isr.go): the ISR expiry
//     check and the high watermark checkpoint (Manager.Run), and the
//     AlterPartition an ISR change needs, retried until the controller
//     answers (Manager.AlterISR);
//   - a Produce's acks=all (acks.go): the min.insync.replicas check before
//     the append (EnoughISR) and the wait for the high watermark after it
//     (AwaitAcks), over the partitions alone.
//
// The broker owns the rest and gives it what it needs: the configuration
// (Config, taken from the broker's), and an Env for this node's broker
// epoch, the brokers' endpoints in the metadata image, the connections to
// them, the partitions of its catalogue, and the call that takes an
// AlterPartition to the active controller, in-process or over the
// network. Which partitions are followed, and from which leader, the
// broker decides from each image (its applyRoles), as it serves the
// leader's side of a replica fetch (its readReplica) and sets the
// throttles' bounds from its dynamic configs.
//
// Imports: broker/partition, broker/peer (LoginRefused), broker/quota,
// storage, and
// coordinator/controller and controller/metadata (the AlterPartition
// request's types) of this project, and franz-go's kerr and kmsg; never
// broker.
//
// Lock order: fetcherManager.mu (Follow) before a fetcher's mu, before
// quota.Replication.mu (a follower throttle's check) and storage.Log's
// epoch lock (the log's latest epoch, read as a fetch is built), which
// are leaves. Topic's methods, called under a fetcher's mu, and
// Env.NewConn, called under fetcherManager.mu as a fetcher starts, take no
// lock; no other Env method is called holding a lock of this package. No
// fetch or partition call is made holding one but those reads: a fetch's
// round trip and the partition's appends and truncations run on the
// fetcher's goroutine with nothing held. AwaitAcks and AlterISR hold no
// lock of this package.
package replication
