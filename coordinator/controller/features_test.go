package controller

import (
	"context"
	"maps"
	"testing"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// bootstrapLevels are the levels a new log finalizes.
func bootstrapLevels() map[string]int16 {
	m := map[string]int16{}
	for _, f := range metadata.Features {
		if f.Bootstrap > 0 {
			m[f.Name] = f.Bootstrap
		}
	}
	return m
}

// TestNewLogFinalizesTheBootstrapFeatures: the entry that names the
// cluster also finalizes the feature levels, so no image names the cluster
// without them.
func TestNewLogFinalizesTheBootstrapFeatures(t *testing.T) {
	q := newQuorum(t, 1, nil)
	im := q.active().Image()
	if !maps.Equal(im.Features, bootstrapLevels()) {
		t.Fatalf("features of the first image with a cluster id: %v, want %v", im.Features, bootstrapLevels())
	}
	if im.Features[metadata.FeatureMetadataVersion] != metadata.MetadataVersion {
		t.Fatalf("metadata.version %d, want %d", im.Features[metadata.FeatureMetadataVersion], metadata.MetadataVersion)
	}
}

// TestFeaturesSurviveRestartsAndAreWrittenToAnOlderLog: the levels come
// back from the snapshot and the WAL after a restart; a log without
// metadata.version (as one written before Gregor had feature levels) gets
// the bootstrap levels from the active controller without any request,
// and those survive a restart too.
func TestFeaturesSurviveRestartsAndAreWrittenToAnOlderLog(t *testing.T) {
	q := newQuorum(t, 1, func(cfg *Config) { cfg.SnapshotEntries = 3; cfg.CatchUpEntries = 1 })
	q.register(1, "")
	for _, name := range []string{"a", "b", "c", "d"} {
		q.createTopic(name, 1, 1)
	}
	restart := func() *metadata.Image {
		t.Helper()
		want := q.active().Image().Offset
		q.stop(1)
		q.start(1, nil)
		c := q.active()
		waitFor(t, "the restarted controller to reach its old offset", func() bool { return c.Image().Offset >= want })
		return c.Image()
	}
	if im := restart(); !maps.Equal(im.Features, bootstrapLevels()) {
		t.Fatalf("features after a restart: %v, want %v", im.Features, bootstrapLevels())
	}

	// Make the log look like an older Gregor's: every level back to 0.
	c := q.active()
	var unset []metadata.Record
	for name := range bootstrapLevels() {
		unset = append(unset, &metadata.FeatureLevelRecord{Name: name})
	}
	c.writeMu.Lock()
	im, err := c.propose(context.Background(), unset)
	c.writeMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	at := im.Offset
	waitFor(t, "the active controller to finalize the bootstrap levels again", func() bool {
		im := c.Image()
		return im.Offset > at && maps.Equal(im.Features, bootstrapLevels())
	})
	if im := restart(); !maps.Equal(im.Features, bootstrapLevels()) {
		t.Fatalf("rewritten features after a restart: %v, want %v", im.Features, bootstrapLevels())
	}
}

// TestBootstrapRecords: what the active controller writes before an
// operation, for a new log, an older log and a bootstrapped one.
func TestBootstrapRecords(t *testing.T) {
	fresh := metadata.NewImage()
	older := metadata.NewImage()
	older.ClusterID = "c"
	done := metadata.NewImage()
	done.ClusterID = "c"
	for _, r := range metadata.BootstrapFeatures() {
		if err := done.Apply(1, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		im   *metadata.Image
		want int
	}{
		{"new log: cluster id and features", fresh, 1 + len(metadata.BootstrapFeatures())},
		{"older log: features", older, len(metadata.BootstrapFeatures())},
		{"bootstrapped: nothing", done, 0},
	} {
		recs := bootstrapRecords(tc.im, "c", nil)
		if len(recs) != tc.want {
			t.Errorf("%s: %d records %+v, want %d", tc.name, len(recs), recs, tc.want)
		}
		after := tc.im.Clone()
		for _, r := range recs {
			if err := after.Apply(2, r); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		if after.ClusterID != "c" || !maps.Equal(after.Features, bootstrapLevels()) {
			t.Errorf("%s: after bootstrap: cluster %q features %v", tc.name, after.ClusterID, after.Features)
		}
	}
}
