package metadata

// Kafka's feature names (server-common's Feature enum and the
// FeatureVersion enums behind it).
const (
	FeatureMetadataVersion    = "metadata.version"
	FeatureKRaftVersion       = "kraft.version"
	FeatureTransactionVersion = "transaction.version"
	FeatureGroupVersion       = "group.version"
	FeatureELRVersion         = "eligible.leader.replicas.version"
	FeatureShareVersion       = "share.version"
	FeatureStreamsVersion     = "streams.version"
)

// MetadataVersion is the metadata.version level of Gregor's metadata log:
// 12, Kafka's 3.6-IV0.
//
// Gregor's records are a subset of Kafka's 3.3-era records in an encoding
// of our own: brokers are fenced and unfenced by FenceBroker and
// UnfenceBroker records (Kafka writes BrokerRegistrationChangeRecord from
// 3.3-IV2 on), and there is no NoopRecord (3.3-IV1) or InControlledShutdown
// registration field (3.3-IV3). No level matches the records exactly, and
// Kafka 4.x no longer knows levels below 3.3-IV3 (level 7): its tools print
// them as UNKNOWN. Among the levels it knows, the one whose semantics the
// log follows is 3.6-IV0: an ISR change that keeps the leader does not bump
// the leader epoch (KAFKA-15021), and nothing that 3.6-IV1 and later add is
// in the log: metadata transactions (3.6-IV1), delegation tokens (3.6-IV2),
// controller registrations (KIP-919, 3.7-IV0), replica directories (JBOD,
// 3.7-IV2), eligible leader replicas (KIP-966, 4.0-IV1). The levels between
// 3.3-IV3 and 3.6-IV0 allow records a log need not hold (ZooKeeper
// migration, SCRAM credentials) or change inter-broker RPCs only.
const MetadataVersion int16 = 12

// FeatureRange is the range of levels of one feature that Gregor
// supports (ApiVersions' SupportedFeatures), and the level a new cluster
// finalizes (Bootstrap; 0 leaves the feature unfinalized).
type FeatureRange struct {
	Name      string
	Min, Max  int16
	Bootstrap int16
}

// Features are the features Gregor knows, in name order, with what it
// supports. A feature Gregor does not implement is supported at level 0
// only, so that kafka-features describe lists it, as it lists every
// feature a Kafka broker knows, without claiming it.
//
//   - metadata.version: MetadataVersion only; Gregor writes one layout.
//   - kraft.version 0: static voters (controller.quorum.voters); KIP-853's
//     dynamic quorum is not served.
//   - transaction.version 0-2, finalized 2: transactions V2 (KIP-890 part
//     2) are served, and clients that use V1 are served too.
//   - group.version 1: KIP-848 consumer groups (ConsumerGroupHeartbeat and
//     ConsumerGroupDescribe) are always served; Gregor cannot turn them
//     off, so level 0 is not supported.
//   - eligible.leader.replicas.version, share.version, streams.version 0:
//     KIP-966, KIP-932 and KIP-1071 are not served.
var Features = []FeatureRange{
	{Name: FeatureELRVersion},
	{Name: FeatureGroupVersion, Min: 1, Max: 1, Bootstrap: 1},
	{Name: FeatureKRaftVersion},
	{Name: FeatureMetadataVersion, Min: MetadataVersion, Max: MetadataVersion, Bootstrap: MetadataVersion},
	{Name: FeatureShareVersion},
	{Name: FeatureStreamsVersion},
	{Name: FeatureTransactionVersion, Min: 0, Max: 2, Bootstrap: 2},
}

// BootstrapFeatures returns the records that finalize Features' bootstrap
// levels, metadata.version first, as Kafka's bootstrap metadata: what the
// active controller writes once when the log is created, or when it finds
// a log written before feature levels were (one without metadata.version).
// Features at level 0 need no record.
func BootstrapFeatures() []Record {
	recs := []Record{&FeatureLevelRecord{Name: FeatureMetadataVersion, FeatureLevel: MetadataVersion}}
	for _, f := range Features {
		if f.Bootstrap > 0 && f.Name != FeatureMetadataVersion {
			recs = append(recs, &FeatureLevelRecord{Name: f.Name, FeatureLevel: f.Bootstrap})
		}
	}
	return recs
}
