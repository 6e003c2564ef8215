package broker

import (
	"fmt"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
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

// TestClusterApiVersionsListsTheFeaturesOfTheMetadataLog: every node lists
// the features finalized in the metadata log, at an epoch that is the
// offset of the image it applied: it grows as the log does, and the levels
// come back after the whole cluster restarts.
func TestClusterApiVersionsListsTheFeaturesOfTheMetadataLog(t *testing.T) {
	tc := startCluster(t, 3)
	epochs := map[int32]int64{}
	for _, id := range tc.live() {
		resp := apiVersionsV3(t, tc.nodes[id].Addr())
		supported, finalized := featureLevels(t, resp)
		if !maps.Equal(supported, wantSupported) || !maps.Equal(finalized, wantFinalized) {
			t.Fatalf("node %d: supported %v finalized %v, want %v and %v", id, supported, finalized, wantSupported, wantFinalized)
		}
		if resp.FinalizedFeaturesEpoch <= 0 {
			t.Fatalf("node %d: finalized features epoch %d, want the offset of its metadata image", id, resp.FinalizedFeaturesEpoch)
		}
		epochs[id] = resp.FinalizedFeaturesEpoch
	}

	// A topic is a metadata write: every node's epoch moves past it.
	adm := kadm.NewClient(tc.client(1))
	if _, err := adm.CreateTopic(testCtx(t), 1, 3, nil, "features-epoch"); err != nil {
		t.Fatal(err)
	}
	var created int64
	waitLong(t, "node 1 to apply the topic", func() bool {
		im := tc.nodes[1].cluster.currentImage()
		created = int64(im.Offset)
		return im.TopicByName("features-epoch") != nil
	})
	for _, id := range tc.live() {
		waitLong(t, fmt.Sprintf("node %d's features epoch to pass the topic's creation", id), func() bool {
			e := apiVersionsV3(t, tc.nodes[id].Addr()).FinalizedFeaturesEpoch
			return e >= created && e > epochs[id]
		})
	}

	// The levels are in the log, not in the binary's defaults: a level
	// the log holds is what every node reports, and it survives a restart
	// of the whole cluster.
	last := int64(tc.nodes[1].cluster.currentImage().Offset)
	for _, id := range tc.live() {
		tc.close(id)
	}
	tc.restart(1, 2, 3)
	tc.waitForBrokers(tc.live(), 3)
	for _, id := range tc.live() {
		waitLong(t, fmt.Sprintf("node %d to reapply its metadata log", id), func() bool {
			return int64(tc.nodes[id].cluster.currentImage().Offset) >= last
		})
		resp := apiVersionsV3(t, tc.nodes[id].Addr())
		if _, finalized := featureLevels(t, resp); !maps.Equal(finalized, wantFinalized) || resp.FinalizedFeaturesEpoch < last {
			t.Fatalf("node %d after a restart: finalized %v at epoch %d, want %v at %d or later", id, finalized,
				resp.FinalizedFeaturesEpoch, wantFinalized, last)
		}
	}
}

// TestSingleNodeFinalizesTheBootstrapFeatures: a single node finalizes the
// levels a new metadata log starts with, at epoch 0 (it has no log), and
// supports what a cluster node supports.
func TestSingleNodeFinalizesTheBootstrapFeatures(t *testing.T) {
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
