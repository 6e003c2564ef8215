// Package quota measures and enforces Gregor's quotas, as Kafka's quota
// managers do: the client byte rates producer_byte_rate and
// consumer_byte_rate (ByteRate, ClientQuotaManager), the IP quota
// connection_creation_rate (ConnectionRate, ConnectionQuotas), and the
// replication throttles' rates (Replication, ReplicationQuotaManager).
//
// It owns the rates they are measured by (Kafka's Rate and SimpleRate
// over a WindowedSum), the client quota entities (Entity: a user, a client
// id, both, or an IP address, each named or the default) with the order in
// which a client resolves to one (DefaultQuotaCallback's), and the records
// the quotas of a single node are persisted as (Record). Times are
// milliseconds given by the caller, so tests drive the clock.
//
// The broker owns everything around it: where the quotas are stored and
// how they change (AlterClientQuotas, the metadata image), their
// conversion from the controller's entities (so this package knows
// nothing of the controller), which requests and connections are
// recorded, and muting or holding a connection for the throttle time.
//
// Imports: nothing of this project, and of others only Prometheus's
// client, for the throttle-time counter of Clients.
//
// Locks: ByteRate.mu, ConnectionRate.mu and Replication.mu each guard
// their own sensors or rate and are leaves: nothing is taken while one is
// held. Clients.updateMu serializes Refresh, and the stored-quotas
// callback Refresh is given runs under it, so whatever that callback locks
// comes after it. The quotas in force are swapped atomically: with no
// quota of a kind set, recording it takes no lock.
package quota
