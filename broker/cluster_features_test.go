//go:build cluster

package broker

import (
	"fmt"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
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
