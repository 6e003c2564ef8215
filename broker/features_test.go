package broker

import (
	"fmt"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// apiVersionsV3 asks addr for ApiVersions v3.
func apiVersionsV3(t *testing.T, addr string) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-test", "1.0"
	return dialRaw(t, addr).do(req).(*kmsg.ApiVersionsResponse)
}

// featureLevels is an ApiVersions answer's features: the supported range
// by name ("min-max") and the finalized levels. A finalized feature whose
// min and max differ is reported as an error.
func featureLevels(t *testing.T, resp *kmsg.ApiVersionsResponse) (map[string]string, map[string]int16) {
	t.Helper()
	supported, finalized := map[string]string{}, map[string]int16{}
	for _, f := range resp.SupportedFeatures {
		supported[f.Name] = fmt.Sprintf("%d-%d", f.MinVersion, f.MaxVersion)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.MinVersionLevel != f.MaxVersionLevel {
			t.Errorf("finalized %s: min %d != max %d", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
		}
		finalized[f.Name] = f.MaxVersionLevel
	}
	return supported, finalized
}

// wantSupported and wantFinalized are what kafka-features describe shows
// of Gregor (see metadata.Features): every feature a Kafka 4.2 broker
// lists, at the range Gregor supports, and the three it finalizes.
var (
	wantSupported = map[string]string{
		"metadata.version": "12-12", "kraft.version": "0-0", "transaction.version": "0-2", "group.version": "1-1",
		"eligible.leader.replicas.version": "0-0", "share.version": "0-0", "streams.version": "0-0",
	}
	wantFinalized = map[string]int16{"metadata.version": 12, "transaction.version": 2, "group.version": 1}
)

// TestSingleNodeFinalizesTheBootstrapFeatures: a single node finalizes the
// levels a new metadata log starts with, at epoch 0 (it has no log), and
// supports what a cluster node supports.
func TestSingleNodeFinalizesTheBootstrapFeatures(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	resp := apiVersionsV3(t, b.Addr())
	supported, finalized := featureLevels(t, resp)
	if !maps.Equal(supported, wantSupported) || !maps.Equal(finalized, wantFinalized) || resp.FinalizedFeaturesEpoch != 0 {
		t.Fatalf("supported %v finalized %v epoch %d, want %v and %v at 0", supported, finalized,
			resp.FinalizedFeaturesEpoch, wantSupported, wantFinalized)
	}
	if finalized[metadata.FeatureTransactionVersion] != finalizedTransactionVersion {
		t.Fatalf("transaction.version %d, the transaction coordinator runs %d", finalized[metadata.FeatureTransactionVersion],
			finalizedTransactionVersion)
	}
}

func TestSingleNodeDoesNotAdvertiseClusterAPIs(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-test", "1.0"
	resp := dialRaw(t, b.Addr()).do(req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	for _, k := range resp.ApiKeys {
		// Nothing can be reassigned on one broker: no
		// AlterPartitionReassignments (45) or ListPartitionReassignments (46).
		if k.ApiKey == 55 || k.ApiKey == 62 || k.ApiKey == 63 || k.ApiKey == 45 || k.ApiKey == 46 {
			t.Fatalf("single node advertises key %d", k.ApiKey)
		}
	}
	// Sending one closes the connection, as for any key not served.
	c := dialRaw(t, b.Addr())
	c.sendRefused(kmsg.NewPtrBrokerHeartbeatRequest())
	c = dialRaw(t, b.Addr())
	c.sendRefused(kmsg.NewPtrAlterPartitionAssignmentsRequest())
	c.expectClosed()
}
