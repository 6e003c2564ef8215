package broker

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/quota"
	"github.com/gregor-broker/gregor/broker/topicconfig"
	"github.com/gregor-broker/gregor/storage"
	"github.com/gregor-broker/gregor/vfs"
)

// topic is one topic's metadata and its partitions. The partitions slice only
// grows (CreatePartitions) and is replaced, never mutated, under Broker.mu.
//
// configs is replaced, never mutated, under Broker.mu (alterConfigs), so a
// reader holding Broker.mu for reading may keep the map it read. effective
// is the parsed form the data path loads without any lock.
type topic struct {
	name       string
	id         [16]byte
	configs    topicconfig.Configs
	effective  atomic.Pointer[effectiveTopicConfig]
	partitions []*partition.Partition
	metrics    *topicMetrics // the topic's counters (metrics.go)
}

// setConfigs publishes a new config set and its effective form.
func (t *topic) setConfigs(configs topicconfig.Configs, brokerDefaults map[string]string) {
	t.configs = configs
	e := effectiveConfig(configs, brokerDefaults)
	t.effective.Store(&e)
}

// topicRecord is how a topic is persisted in the metadata file.
type topicRecord struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// metadataFile is the broker's durable topic catalogue, a JSON document
// replaced atomically (write to a temporary file, sync, rename). Partition
// data lives beside it in <topic>-<partition> directories, as in Kafka.
const metadataFile = "gregor-topics.json"

type metadataDoc struct {
	ClusterID string        `json:"cluster_id"`
	Topics    []topicRecord `json:"topics"`
	// ProducerIDBlockEnd is the end of the last block of producer ids
	// reserved (22_init_producer_id.go): ids below it may have been handed
	// out, so a restart allocates from it on.
	ProducerIDBlockEnd int64 `json:"producer_id_block_end,omitempty"`
	// ClientQuotas are the client quotas set by AlterClientQuotas
	// (quotas.go), enforced by package quota (throttle.go).
	ClientQuotas []quota.Record `json:"client_quotas,omitempty"`
	// BrokerConfigs are the dynamic broker configs of a single node
	// (replication_throttle.go), by resource name: the node id, or "" for
	// the cluster default. In cluster mode they live in the metadata log.
	BrokerConfigs map[string]map[string]string `json:"broker_configs,omitempty"`
	// ScramCredentials are a single node's SCRAM credentials
	// (scram_credentials.go): salts and keys, never passwords.
	ScramCredentials []scramCredentialRecord `json:"scram_credentials,omitempty"`
}

// Legal topic names: Kafka's rules (Topic.validate).
const maxTopicNameLength = 249

var errInvalidTopic = errors.New("Topic name is invalid")

// validateTopicName applies Kafka's rules (Topic.validate), with its messages.
func validateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the empty string is not allowed", errInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: '%s' is not allowed", errInvalidTopic, name)
	case len(name) > maxTopicNameLength:
		return fmt.Errorf("%w: the length of '%s' is longer than the max allowed length %d", errInvalidTopic, name, maxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: '%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", errInvalidTopic, name)
		}
	}
	return nil
}

func newTopicID() [16]byte {
	var id [16]byte
	for {
		if _, err := io.ReadFull(rand.Reader, id[:]); err != nil {
			panic("broker: crypto/rand failed: " + err.Error())
		}
		// Kafka reserves the zero UUID and the "metadata topic" UUID 1.
		if id != ([16]byte{}) && id != ([16]byte{15: 1}) {
			return id
		}
	}
}

func partitionDir(topic string, p int32) string {
	return topic + "-" + strconv.Itoa(int(p))
}

// storageConfig turns a topic's effective configs into the log's config.
func (e effectiveTopicConfig) storageConfig() storage.Config {
	return storage.Config{
		SegmentBytes:       e.segmentBytes,
		IndexIntervalBytes: e.indexIntervalBytes,
		SegmentIndexBytes:  e.segmentIndexBytes,
		SegmentMs:          e.segmentMs,
		SegmentJitterMs:    e.segmentJitterMs,
		FileDeleteDelay:    time.Duration(e.fileDeleteDelayMs) * time.Millisecond,
	}
}

// catalog holds the topics. Its methods that change topics must be called
// with Broker.mu held for writing; lookups with it held for reading.
type catalog struct {
	fs        vfs.FS
	dir       string
	clusterID string
	byName    map[string]*topic
	byID      map[[16]byte]*topic
	defaults  map[string]string
	// clusterMode: partitions take their leader epochs from the metadata
	// image (partition/replica.go), not epoch 0 at open.
	clusterMode bool
	log         *slog.Logger // nil: slog.Default()
	metrics     *brokerMetrics

	// nextProducerID is the next producer id to hand out, producerIDBlockEnd
	// the end of the reserved block it is taken from (persisted).
	nextProducerID, producerIDBlockEnd int64

	// quotas are the client quotas by entity (quotas.go), replaced, never
	// mutated, under Broker.mu held for writing.
	quotas map[quota.Entity]map[string]float64

	// brokerConfigs are the dynamic broker configs (single node), by
	// resource name; replaced under Broker.mu held for writing.
	brokerConfigs map[string]map[string]string

	// scram holds the SCRAM credentials (single node); nil in a catalogue
	// that keeps none.
	scram *scramStore
}

// load reads the metadata file and opens every partition log.
func (c *catalog) load() error {
	c.byName = map[string]*topic{}
	c.byID = map[[16]byte]*topic{}
	c.quotas = map[quota.Entity]map[string]float64{}
	raw, err := readAll(c.fs, path.Join(c.dir, metadataFile))
	if errors.Is(err, os.ErrNotExist) {
		c.clusterID = newClusterID()
		return c.save()
	}
	if err != nil {
		return err
	}
	var doc metadataDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("broker: %s is corrupt: %w", metadataFile, err)
	}
	c.clusterID = doc.ClusterID
	c.nextProducerID, c.producerIDBlockEnd = doc.ProducerIDBlockEnd, doc.ProducerIDBlockEnd
	c.brokerConfigs = doc.BrokerConfigs
	if c.quotas, err = quota.LoadRecords(doc.ClientQuotas); err != nil {
		return fmt.Errorf("broker: %s: %w", metadataFile, err)
	}
	if c.scram != nil {
		users, err := loadScramUsers(doc.ScramCredentials)
		if err != nil {
			return fmt.Errorf("broker: %s: %w", metadataFile, err)
		}
		c.scram.set(users)
	}
	for _, rec := range doc.Topics {
		idBytes, err := hex.DecodeString(rec.ID)
		if err != nil || len(idBytes) != 16 {
			return fmt.Errorf("broker: %s: topic %q has a bad id %q", metadataFile, rec.Name, rec.ID)
		}
		t := &topic{name: rec.Name, metrics: c.metrics.topic(rec.Name)}
		copy(t.id[:], idBytes)
		if rec.Configs == nil {
			rec.Configs = topicconfig.Configs{}
		}
		t.setConfigs(rec.Configs, c.defaults)
		for p := int32(0); p < rec.Partitions; p++ {
			part, err := c.openPartition(t, p)
			if err != nil {
				c.closeAll()
				return err
			}
			t.partitions = append(t.partitions, part)
		}
		c.byName[t.name] = t
		c.byID[t.id] = t
	}
	return nil
}

func (c *catalog) openPartition(t *topic, p int32) (*partition.Partition, error) {
	sc := t.effective.Load().storageConfig()
	if c.metrics != nil {
		sc.SyncObserver = c.metrics.observeFsync
	}
	l, err := storage.Open(c.fs, path.Join(c.dir, partitionDir(t.name, p)), sc)
	if err != nil {
		return nil, fmt.Errorf("broker: opening partition %s-%d: %w", t.name, p, err)
	}
	flush := t.effective.Load().flush
	l.SetFlushPolicy(flush)
	if flush.PerAppend() && l.DurableOffset() < l.EndOffset() {
		// The tail recovered after a crash is not known to be on disk; under
		// flush.messages=1 the high watermark waits for that.
		if err := l.Sync(); err != nil {
			l.Close()
			return nil, fmt.Errorf("broker: syncing partition %s-%d: %w", t.name, p, err)
		}
	}
	part := partition.New(t.name, p, l)
	l.OnBackgroundFlush(part.Appended)
	if c.log != nil {
		part.SetLogger(c.log)
	}
	if c.clusterMode {
		// The image gives the partition its role and leader epoch; until
		// then its high watermark is the checkpointed one.
		hw, _ := l.HighWatermarkCheckpoint()
		part.RestoreHighWatermark(hw)
	} else if err := l.AssignEpoch(part.LeaderEpoch(), l.EndOffset()); err != nil {
		// A single node takes the lead as Kafka's Partition.makeLeader
		// does: the leader epoch starts at the log end, unless the log has
		// reached it already. Append records it too, at the first batch
		// stamped with it.
		l.Close()
		return nil, fmt.Errorf("broker: opening partition %s-%d: %w", t.name, p, err)
	}
	if err := part.LoadProducers(time.Now().UnixMilli()); err != nil {
		l.Close()
		return nil, fmt.Errorf("broker: rebuilding the producer state of %s-%d: %w", t.name, p, err)
	}
	return part, nil
}

// create adds a topic with n partitions and persists the catalogue.
func (c *catalog) create(name string, n int32, configs topicconfig.Configs) (*topic, error) {
	return c.createWithID(name, newTopicID(), n, configs)
}

// createWithID is create with the topic id given, as the metadata log
// names it in cluster mode.
func (c *catalog) createWithID(name string, id [16]byte, n int32, configs topicconfig.Configs) (*topic, error) {
	t := &topic{name: name, id: id}
	t.setConfigs(configs, c.defaults)
	for p := int32(0); p < n; p++ {
		part, err := c.openPartition(t, p)
		if err != nil {
			for _, opened := range t.partitions {
				opened.Log().Delete()
			}
			return nil, err
		}
		t.partitions = append(t.partitions, part)
	}
	c.byName[name] = t
	c.byID[t.id] = t
	if err := c.save(); err != nil {
		delete(c.byName, name)
		delete(c.byID, t.id)
		for _, part := range t.partitions {
			part.Log().Delete()
		}
		return nil, err
	}
	t.metrics = c.metrics.topic(name)
	return t, nil
}

// addPartitions grows t to n partitions.
func (c *catalog) addPartitions(t *topic, n int32) error {
	parts := append([]*partition.Partition(nil), t.partitions...)
	for p := int32(len(parts)); p < n; p++ {
		part, err := c.openPartition(t, p)
		if err != nil {
			for _, added := range parts[len(t.partitions):] {
				added.Log().Delete()
			}
			return err
		}
		parts = append(parts, part)
	}
	old := t.partitions
	t.partitions = parts
	if err := c.save(); err != nil {
		for _, added := range parts[len(old):] {
			added.Log().Delete()
		}
		t.partitions = old
		return err
	}
	return nil
}

// alterConfigs replaces t's configs with configs (already validated) and
// persists the catalogue; on failure t keeps its old configs. The new
// effective config applies to the next request at once, the segment
// settings to each partition log's next append (segment.bytes,
// index.interval.bytes) or next segment (segment.index.bytes), and the
// flush policy (flush.messages, flush.ms) to the next append.
func (c *catalog) alterConfigs(t *topic, configs topicconfig.Configs) error {
	old := t.configs
	t.setConfigs(configs, c.defaults)
	if err := c.save(); err != nil {
		t.setConfigs(old, c.defaults)
		return err
	}
	sc := t.effective.Load().storageConfig()
	var errs []error
	for _, p := range t.partitions {
		p.Log().SetFlushPolicy(t.effective.Load().flush)
		// Switching to flush.messages=1 hides the unflushed tail from
		// consumers until it is fsynced: start that now.
		p.Log().FlushAfterAppendAsync(p.Log().EndOffset())
		if err := p.Log().SetConfig(sc); err != nil {
			errs = append(errs, fmt.Errorf("broker: applying configs to %s-%d: %w", t.name, p.Index(), err))
		}
	}
	return errors.Join(errs...)
}

// remove deletes a topic and its data.
func (c *catalog) remove(t *topic) error {
	delete(c.byName, t.name)
	delete(c.byID, t.id)
	if err := c.save(); err != nil {
		c.byName[t.name] = t
		c.byID[t.id] = t
		return err
	}
	c.metrics.forgetTopic(t.name)
	var firstErr error
	for _, p := range t.partitions {
		p.Close()
		if err := p.Log().Delete(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

func (c *catalog) sortedTopics() []*topic {
	out := make([]*topic, 0, len(c.byName))
	for _, t := range c.byName {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// save writes the catalogue atomically.
func (c *catalog) save() error {
	doc := metadataDoc{ClusterID: c.clusterID, ProducerIDBlockEnd: c.producerIDBlockEnd, ClientQuotas: quota.Records(c.quotas),
		BrokerConfigs: c.brokerConfigs, ScramCredentials: c.scram.current().records()}
	for _, t := range c.sortedTopics() {
		doc.Topics = append(doc.Topics, topicRecord{
			Name:       t.name,
			ID:         hex.EncodeToString(t.id[:]),
			Partitions: int32(len(t.partitions)),
			Configs:    t.configs,
		})
	}
	raw, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	// The directory fsync matters: a rename lost to a power loss would
	// bring back a block of producer ids already handed out. The file is
	// the owner's alone: it may hold SCRAM salts and keys, with which a
	// reader could guess passwords offline.
	name := path.Join(c.dir, metadataFile)
	if err := vfs.WriteFileAtomic(c.fs, name, raw, 0o600); err != nil {
		return fmt.Errorf("broker: writing %s: %w", name, err)
	}
	return nil
}

func (c *catalog) closeAll() {
	for _, t := range c.byName {
		for _, p := range t.partitions {
			p.Close()
			p.Log().Close()
		}
	}
}

func newClusterID() string {
	id := newTopicID()
	// Kafka cluster ids are URL-safe base64 of a UUID, 22 characters.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	out := make([]byte, 0, 22)
	var acc uint32
	bits := 0
	for _, b := range id {
		acc = acc<<8 | uint32(b)
		bits += 8
		for bits >= 6 {
			bits -= 6
			out = append(out, alphabet[(acc>>bits)&63])
		}
	}
	if bits > 0 {
		out = append(out, alphabet[(acc<<(6-bits))&63])
	}
	return string(out)
}

func readAll(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}
