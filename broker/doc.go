// Package broker is Gregor's Kafka-compatible server: listeners and
// connections, the handler for each API key, the topic and partition state,
// and delayed operations such as long-poll fetches.
//
// It is also a library: Start runs a complete broker in-process (a single
// node, or with Config.ControllerQuorumVoters one node of a cluster), which
// is how Gregor's own integration tests, and any Go test elsewhere, get a
// real broker:
//
//	b, err := broker.Start(ctx, broker.Config{}) // random loopback port, in-memory data
//	...
//	defer b.Close()
//	client, _ := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
//
// Handlers live one file per API key, named by key number (00_produce.go,
// 01_fetch.go, ...). Each registers its version range in its init function,
// and ApiVersions is built from that registry alone, so the broker advertises
// exactly what it serves. A handler takes the kmsg request and returns the
// kmsg response; a per-topic or per-partition failure is a Kafka error code
// inside the response, and a Go error returned from a handler means one
// thing: close the connection.
//
// A partition's own state (its log, producer state, leader epoch, high
// watermark, role and ISR) is package partition's Partition; this package
// reaches it only through Partition's methods.
//
// Imports: broker/partition, broker/peer, broker/quota, broker/share,
// broker/replication, broker/security/principal, broker/security/sasl,
// broker/security/scram, broker/security/ssl, broker/topicconfig,
// coordinator/group, coordinator/share, coordinator/txn,
// coordinator/runtime, coordinator/controller and controller/metadata
// (cluster mode), protocol, protocol/batch, storage and vfs of this
// project; never cmd.
//
// Lock order: take the left lock before the right one, never the reverse.
//
//	quota.Clients.updateMu -> Broker.mu           (refreshQuotas)
//	logManager.mu          -> Broker.mu           (the cleaner threads, logmanager.go)
//	Broker.mu              -> partition.Partition (appendMu -> replicaState.mu -> storage.Log's locks)
//	replication's replicaFetcher.mu -> quota.Replication.mu (broker/replication/doc.go)
//
// Leaves, held with nothing taken inside: apiMetrics.mu (metrics.go),
// requestMemory.mu (request_memory.go), connLimits.mu (conn_limits.go),
// quota.ByteRate.mu, quota.ConnectionRate.mu, quota.Replication.mu, a
// peer.Conn's mutex, a Partition's waiters' mutex, and a
// coordinator/runtime Runtime's mutex (the leadership pushed in).
//
// Beside the order:
//   - Partition's methods take and release its locks: no caller here holds
//     one across a call. The cleaner threads release Broker.mu before they
//     take a partition's appendMu.
//   - Nothing waits holding a lock: an acks=all produce waits for the high
//     watermark, and a produce for the fsync its flush policy demands
//     (storage.Log.FlushAfterAppend), holding none, so that appends from
//     other connections join the same fsync.
//   - The group and transaction coordinators' goroutines are
//     coordinator/runtime's (groups.go, txns.go) and hold no lock of the
//     broker's; they take Broker.mu to create their topic and a
//     partition's appendMu to append, write markers and set a
//     verification guard, like any handler. applyRoles pushes leadership
//     in (Led, Lost) holding no lock.
//   - A transactional produce looks at the producer's open transaction
//     under appendMu and releases it before it calls the transaction
//     coordinator (txn_verify.go), so the coordinator never waits for a
//     lock a caller holds.
//   - The metrics collectors take Broker.mu and storage.Log's locks one at
//     a time.
package broker
