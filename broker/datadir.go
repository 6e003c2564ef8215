package broker

import (
	"log/slog"
	"strings"

	"github.com/gregor-broker/gregor/vfs"
)

// warnStrayEntries logs each entry of the data dir that is neither the
// topic catalogue nor the directory of a partition it lists, and leaves it
// alone. The catalogue, not the directory listing, says which partitions
// exist, so a stray file or directory (an operator's notes, lost+found, a
// copy of a partition) can neither be loaded as a partition nor stop the
// broker. Kafka's LogManager likewise skips plain files in a log dir, but
// refuses to start on a directory whose name is not topic-partition;
// Gregor warns instead. Holds no lock: called before the broker serves.
func (c *catalog) warnStrayEntries(log *slog.Logger) {
	entries, err := c.fs.ReadDir(c.dir)
	if err != nil {
		log.Warn("cannot list the data dir to look for stray entries", "dir", c.dir, "err", err)
		return
	}
	known := map[string]bool{metadataFile: true, metadataFile + vfs.TempSuffix: true, metadataDirName: true}
	for _, t := range c.byName {
		for i := range t.partitions {
			known[partitionDir(t.name, int32(i))] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		if known[name] || strings.HasPrefix(name, ".") {
			continue
		}
		kind := "file"
		if e.IsDir() {
			kind = "directory"
		}
		log.Warn("ignoring a "+kind+" in the data dir that is no partition of a known topic", "dir", c.dir, "name", name)
	}
}
