package broker

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/runtime"
)

// Scrape-time collectors: the partitions' offsets and sizes and the groups'
// lag are read when /metrics is scraped, so appends and commits pay nothing
// for them.

var (
	partitionLabels      = []string{"topic", "partition"}
	descLogStartOffset   = prometheus.NewDesc("gregor_partition_log_start_offset", "First offset of the partition's log.", partitionLabels, nil)
	descLogEndOffset     = prometheus.NewDesc("gregor_partition_log_end_offset", "Offset the partition's next record will get.", partitionLabels, nil)
	descHighWatermark    = prometheus.NewDesc("gregor_partition_high_watermark", "Offset below which records are committed and visible to consumers.", partitionLabels, nil)
	descPartitionSize    = prometheus.NewDesc("gregor_partition_size_bytes", "Bytes of record batches the partition's segments hold.", partitionLabels, nil)
	descPartitionSegment = prometheus.NewDesc("gregor_partition_segments", "Segments of the partition's log, the active one included.", partitionLabels, nil)
	descReplicas         = prometheus.NewDesc("gregor_partition_replicas", "Replicas of a partition this broker leads (cluster mode).", partitionLabels, nil)
	descInSyncReplicas   = prometheus.NewDesc("gregor_partition_in_sync_replicas", "In-sync replicas of a partition this broker leads, the leader included (cluster mode).", partitionLabels, nil)
	descUnderMinISR      = prometheus.NewDesc("gregor_partition_under_min_isr", "1 when a partition this broker leads has fewer in-sync replicas than min.insync.replicas, so acks=all produces are refused (cluster mode).", partitionLabels, nil)

	groupOffsetLabels  = []string{"group", "topic", "partition"}
	descGroupMembers   = prometheus.NewDesc("gregor_group_members", "Members of the group.", []string{"group"}, nil)
	descGroupState     = prometheus.NewDesc("gregor_group_state", "1 for the group's current state (Empty, PreparingRebalance, CompletingRebalance, Stable).", []string{"group", "state"}, nil)
	descGroupCommitted = prometheus.NewDesc("gregor_group_committed_offset", "Offset the group committed for the partition.", groupOffsetLabels, nil)
	descGroupLag       = prometheus.NewDesc("gregor_group_lag", "High watermark minus the group's committed offset, for partitions that exist.", groupOffsetLabels, nil)
)

// partitionCollector reports every partition's log offsets and size.
type partitionCollector struct{ b *Broker }

func (pc partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLogStartOffset
	ch <- descLogEndOffset
	ch <- descHighWatermark
	ch <- descPartitionSize
	ch <- descPartitionSegment
	ch <- descReplicas
	ch <- descInSyncReplicas
	ch <- descUnderMinISR
}

func (pc partitionCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range pc.b.metricsTopics() {
		for _, p := range t.partitions {
			idx := strconv.Itoa(int(p.Index()))
			gauge := func(d *prometheus.Desc, v int64) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), t.name, idx)
			}
			gauge(descLogStartOffset, p.Log().StartOffset())
			gauge(descLogEndOffset, p.Log().EndOffset())
			gauge(descHighWatermark, p.HighWatermark())
			gauge(descPartitionSize, p.Log().Size())
			gauge(descPartitionSegment, int64(p.Log().SegmentCount()))
			if isr, replicas, leading := p.LeaderISR(); leading {
				gauge(descReplicas, int64(replicas))
				gauge(descInSyncReplicas, int64(len(isr)))
				under := int64(0)
				if len(isr) < partition.EffectiveMinISR(t.minISR, replicas) {
					under = 1
				}
				gauge(descUnderMinISR, under)
			}
		}
	}
}

// metricsTopic is a topic's name and partitions, copied under Broker.mu.
type metricsTopic struct {
	name       string
	partitions []*partition.Partition
	minISR     int // min.insync.replicas
}

// metricsTopics returns the topics and their partitions, or nothing before
// the catalogue is loaded.
func (b *Broker) metricsTopics() []metricsTopic {
	if !b.loaded.Load() {
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]metricsTopic, 0, len(b.catalog.byName))
	for _, t := range b.catalog.sortedTopics() {
		out = append(out, metricsTopic{name: t.name, partitions: t.partitions, minISR: t.effective.Load().minInsyncReplicas})
	}
	return out
}

// groupCollector reports the groups' states, members, committed offsets
// and lag, from a snapshot the coordinator's goroutine takes between two
// events.
type groupCollector struct{ b *Broker }

// groupSnapshotTimeout bounds how long a scrape waits for the coordinator.
const groupSnapshotTimeout = 5 * time.Second

func (gc groupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descGroupMembers
	ch <- descGroupState
	ch <- descGroupCommitted
	ch <- descGroupLag
}

func (gc groupCollector) Collect(ch chan<- prometheus.Metric) {
	b := gc.b
	if !b.loaded.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupSnapshotTimeout)
	defer cancel()
	groups, err := b.groups.snapshot(ctx)
	if errors.Is(err, errGroupCoordinatorStopped) { // shutting down
		return
	}
	if err != nil { // reported in the scrape's errors; the other series are still served
		ch <- prometheus.NewInvalidMetric(descGroupMembers, err)
		return
	}
	hw := map[string][]int64{} // high watermarks by topic, read once per topic
	highWatermark := func(topic string, p int32) (int64, bool) {
		marks, ok := hw[topic]
		if !ok {
			if t := b.lookupTopic(topic); t != nil {
				for _, part := range b.partitions(t) {
					marks = append(marks, part.HighWatermark())
				}
			}
			hw[topic] = marks
		}
		if p < 0 || int(p) >= len(marks) {
			return 0, false
		}
		return marks[p], true
	}
	for _, g := range groups {
		ch <- prometheus.MustNewConstMetric(descGroupMembers, prometheus.GaugeValue, float64(g.Members), g.GroupID)
		ch <- prometheus.MustNewConstMetric(descGroupState, prometheus.GaugeValue, 1, g.GroupID, g.State)
		for _, o := range g.Offsets {
			idx := strconv.Itoa(int(o.Partition))
			ch <- prometheus.MustNewConstMetric(descGroupCommitted, prometheus.GaugeValue, float64(o.Offset), g.GroupID, o.Topic, idx)
			if mark, ok := highWatermark(o.Topic, o.Partition); ok {
				ch <- prometheus.MustNewConstMetric(descGroupLag, prometheus.GaugeValue, float64(mark-o.Offset), g.GroupID, o.Topic, idx)
			}
		}
	}
}

// snapshot copies the groups on the coordinator's goroutine, between two
// events, so a scrape neither races with nor holds up the coordinator.
func (gc *groupCoordinator) snapshot(ctx context.Context) ([]group.GroupSnapshot, error) {
	var snap []group.GroupSnapshot
	if err := gc.rt.Run(ctx, func(s *groupShard, _ int64) { snap = s.c.Snapshot() }); err != nil {
		if errors.Is(err, runtime.ErrStopped) {
			err = errGroupCoordinatorStopped
		}
		return nil, err
	}
	return snap, nil
}

var errGroupCoordinatorStopped = errors.New("broker: group coordinator stopped")
