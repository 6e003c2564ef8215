package broker

// DescribeLogDirs (key 35), v1-v4, the range Kafka 4 serves.
//
// Behavior:
//   - one log dir: the data directory, or "memory" for an in-memory broker;
//   - every partition (null topic list) or the requested ones that exist,
//     the rest silently left out, as Kafka; a partition's size is its
//     batches' bytes; never a future replica (no log-dir moves);
//   - in cluster mode the partitions this broker is a replica of, with the
//     offset lag high watermark minus log end offset, at least 0 (Kafka's
//     getLogEndOffsetLag).
//
// Version notes:
//   - v3 adds the top-level ErrorCode (always 0: only authorization fails
//     it in Kafka);
//   - v4 adds TotalBytes and UsableBytes of the directory's file system, or
//     -1 (Kafka's "unknown") in memory or where the platform cannot tell.

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
)

func init() { register(35, 1, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(b *Broker, r *request, req *kmsg.DescribeLogDirsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DescribeLogDirsResponse](req)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.logDir()
	dir.TotalBytes, dir.UsableBytes = -1, -1
	if req.Version >= 4 && b.cfg.DataDir != "" {
		if total, usable, ok := diskSpace(b.cfg.DataDir); ok {
			dir.TotalBytes, dir.UsableBytes = total, usable
		}
	}

	wanted := map[string][]int32{} // nil: every partition of the topic
	b.mu.RLock()
	if req.Topics == nil {
		for name := range b.catalog.byName {
			wanted[name] = nil
		}
	} else {
		for _, rt := range req.Topics {
			if b.catalog.byName[rt.Topic] != nil {
				wanted[rt.Topic] = append(wanted[rt.Topic], rt.Partitions...)
			}
		}
	}
	b.mu.RUnlock()
	names := make([]string, 0, len(wanted))
	for name := range wanted {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t := b.lookupTopic(name)
		if t == nil {
			continue
		}
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = name
		var parts []*partition.Partition
		if ids := wanted[name]; ids == nil && req.Topics == nil {
			parts = b.partitions(t)
		} else {
			seen := map[int32]bool{}
			for _, id := range ids {
				if p := b.partition(t, id); p != nil && !seen[id] {
					seen[id] = true
					parts = append(parts, p)
				}
			}
		}
		for _, p := range parts {
			st := p.State()
			if st != nil && !slices.Contains(st.Replicas, b.cfg.NodeID) {
				continue // not a replica here
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = p.Index()
			dp.Size = p.Log().Size()
			if st != nil {
				dp.OffsetLag = max(p.HighWatermark()-p.Log().EndOffset(), 0)
			}
			dt.Partitions = append(dt.Partitions, dp)
		}
		if len(dt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
	return resp, nil
}
