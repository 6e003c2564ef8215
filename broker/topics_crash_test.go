package broker

import (
	"log/slog"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

// TestProducerIDBlockSurvivesPowerLoss reserves a block of producer ids
// (InitProducerId writes it to gregor-topics.json before handing out the
// first id), takes the file system as a power loss would leave it
// (vfs.MemFS.CrashClone: only what was fsynced, names only once their
// directory was synced), and starts a broker on that: its first producer
// id must lie beyond the id handed out before the crash. Were the rename
// of the topics file not made durable, the old file would come back and
// the same ids would be handed out twice.
func TestProducerIDBlockSurvivesPowerLoss(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name string
		// existing makes a topics file durable before the reservation, so
		// that the reservation replaces it.
		existing bool
	}{{"fresh data dir", false}, {"existing topics file", true}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMemFS()
			b := startBroker(t, Config{FS: mem, DataDir: "/data", Logger: quiet})
			if tc.existing {
				createTopic(t, dialRaw(t, b.Addr()), "t", 1, nil)
				if err := mem.SyncDir("/data"); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := initProducerID(t, dialRaw(t, b.Addr()), 4)
			lost := mem.CrashClone()

			b2 := startBroker(t, Config{FS: lost, DataDir: "/data", Logger: quiet})
			after, _ := initProducerID(t, dialRaw(t, b2.Addr()), 4)
			if after <= before {
				t.Fatalf("producer id %d handed out after the power loss, but %d was handed out before it: "+
					"the reserved block was lost", after, before)
			}
		})
	}
}
