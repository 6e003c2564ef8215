// Package controller is Gregor's cluster metadata quorum: the controllers
// that agree, through Raft, on the metadata log of brokers, topics,
// partitions, leaders, ISRs and configs, in the manner of Kafka's KRaft
// QuorumController. The broker runs one voter per node in combined mode
// (process.roles=broker,controller), and one observer per broker-only node
// (process.roles=broker; broker/cluster.go).
//
// Every voter runs a Controller: a raftnode.Node (etcd raft with our Ready
// loop, WAL, snapshots and transport; see package raftnode) whose state
// machine is a metadata.Image. Committed entries are applied in log order
// on every voter, and each applied image is published (Image, Subscribe).
//
// The raft leader is the active controller. Each operation runs alone
// (writeMu): it validates the request against the applied image, builds
// records, proposes them as one entry and waits until that entry is
// applied, so the next operation sees it. A leader becomes active only
// once it has applied an entry of its own term, so its image holds every
// earlier commit. The first active controller writes the cluster id.
//
// The Go API the broker calls, each with Kafka's error codes (kerr) and
// each following the Kafka class named in its doc comment:
//
//	RegisterBroker, Heartbeat         ClusterControlManager, BrokerHeartbeatManager
//	CreateTopics, DeleteTopics,
//	CreatePartitions, AlterConfigs    ReplicationControlManager, ConfigurationControlManager
//	AlterPartition, ElectLeaders      ReplicationControlManager
//	AlterPartitionReassignments,
//	ListPartitionReassignments        ReplicationControlManager (KIP-455)
//	AlterClientQuotas                 ClientQuotaControlManager (client_quotas.go)
//	Image, Subscribe, Leader          the applied metadata image and who is active
//	Node().Quorum()                   leader, term, commit index, voter and observer progress (DescribeQuorum)
//	Observers                         the broker-only nodes in the quorum, with raft addresses
//
// Observers (observers.go, Config.Observer) are raft learners: Kafka's
// brokers fetch the metadata log, but etcd raft pushes it, so a broker-only
// node has a raft listener of its own and names it when its broker
// registers (BrokerRegistration.RaftAddr). The active controller writes the
// registration, then adds the node as a learner (a conf change whose
// context is the address, so every voter's transport learns it). An
// observer applies the log and publishes images as a voter does, never
// votes or leads, and answers every operation NOT_CONTROLLER naming the
// leader.
//
// On a follower, or on a leader that has lost its majority (raft's check
// quorum makes it step down within an election timeout), every operation
// answers NotControllerError (NOT_CONTROLLER, naming the leader this node
// knows, -1 for none); a write that does not commit within the context's
// deadline (Config.WriteTimeout without one) is REQUEST_TIMED_OUT and is
// logged as a write no majority acknowledged. Followers do not forward.
//
// Broker sessions: the active controller keeps each broker's last
// heartbeat and fences a broker silent for Config.SessionTimeout
// (broker.session.timeout.ms, 9s): a FenceBrokerRecord, and partition
// changes that take it out of every ISR (never emptying one) and give its
// leaderships to the first unfenced ISR member in replica order, or with
// unclean.leader.election.enable to any unfenced replica, or to no one
// (-1). A new active controller gives every broker a fresh session. A
// fenced broker that heartbeats and has caught up to its registration is
// unfenced and leads the leaderless partitions it is in the ISR of. A
// heartbeat with WantShutDown starts KIP-631's controlled shutdown (see
// Heartbeat): leaderships move and the broker leaves the ISRs while it
// stays unfenced, and ShouldShutDown is answered, and the broker fenced,
// once it leads nothing and every other active broker has reported a
// metadata offset past the move. Meanwhile no election picks it and an
// AlterPartition whose ISR holds it is INELIGIBLE_REPLICA. The set is the
// active controller's own (Kafka also writes InControlledShutdown to the
// log): a new active controller starts with none, and the broker's next
// WantShutDown heartbeat starts it again.
//
// Lock order: Controller.writeMu before Controller.mu. mu guards what the
// raft goroutine changes (the live image, leader, term, waiters,
// subscribers) and is never held while calling into raft or waiting; the
// raft goroutine takes only mu.
//
// Partition changes: every change of a partition's ISR, replicas or
// leadership other than a registration or an unfence is built by
// partitionChange (change.go), Kafka's PartitionChangeBuilder: it
// completes a reassignment whose target replicas are all in the new ISR
// (the removed replicas leave the replicas and the ISR), elects a leader
// when the current one is no longer in the ISR or is fenced (online,
// preferred or unclean), and bumps the leader epoch when a replica leaves.
// During a reassignment the replicas are the target followed by the
// replicas being removed, with Adding and Removing recorded (record
// version 1, reassign.go).
//
// Placement (Place) spreads replicas as Kafka's replica assignment does,
// from a random start, rack-aware when brokers have racks.
//
// Imports: controller/metadata, controller/raftnode, vfs (the FS seam),
// etcd raft and franz-go's kerr; nothing of the broker.
package controller
