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
// Imports: broker/partition, broker/peer, coordinator/group,
// coordinator/txn, coordinator/runtime, coordinator/controller and
// controller/metadata (cluster mode), protocol, protocol/batch, storage and
// vfs of this project; never cmd.
//
// Lock order: Broker.mu (topic map and producer ids) before a partition's
// locks, which come in the order partition.Partition documents (its
// appendMu, an append and its producer-state check, before its replication
// state's lock, before storage.Log's own locks; its waiters' lock a leaf).
// Partition's methods take and release them: no caller here holds one
// across a call. A replica fetcher (replica_fetcher.go) appends through a
// partition's appendMu, holding nothing else, and an acks=all
// produce waits for the high watermark holding no lock. No lock
// is taken while holding a later one. A produce waits for the fsync its
// flush policy demands (storage.Log.FlushAfterAppend) holding none of
// these, so that appends from other connections join the same fsync. The coordinators' goroutines
// are coordinator/runtime's (groups.go, txns.go). Each holds only the
// runtime's mutex, a leaf that guards the leadership pushed in (applyRoles
// calls Led and Lost holding no lock, and the goroutine takes it to read
// them, calling nothing while it is held). The group coordinator's
// goroutine takes Broker.mu to create __consumer_offsets and a partition's
// appendMu to append to it, like any handler; the transaction
// coordinator's takes a partition's appendMu to append to
// __transaction_state, to write markers and to set a verification guard.
// A transactional produce takes a partition's appendMu only to look at the
// producer's open transaction and releases it before it calls the
// transaction coordinator (txn_verify.go), so the coordinator never waits
// for a lock a caller holds. The log manager's cleaner threads (logmanager.go) take
// logManager.mu before Broker.mu, and release Broker.mu before taking a
// partition's appendMu. apiMetrics.mu (metrics.go),
// byteRateQuota.mu (throttle.go) and connectionRateQuota.mu (connquota.go)
// are leaves: nothing is taken while one is held; clientQuotas.updateMu is
// taken before Broker.mu (refreshQuotas); and the metrics collectors take Broker.mu and
// storage.Log's locks one at a time, never while holding another.
// replicationQuota.mu (replication_throttle.go) is a leaf too; a replica
// fetcher takes it holding its own mu.
package broker
