package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is the client-neutral record the scenarios produce and consume.
type Record struct {
	Partition     int32
	Offset        int64
	Key           []byte
	Value         []byte
	Headers       []Header
	Timestamp     int64  // milliseconds since the epoch
	TimestampType string // "CreateTime", "LogAppendTime", or "" when the client does not say
}

// BaseTimestamp is the CreateTime of record 0 (scenarios.md, "The records").
const BaseTimestamp int64 = 1700000000000

// GenRecord builds record i of scenarios.md: key "k-<i>", 100 value bytes
// 'a'+((i*7+j*13) mod 26), headers h1="a-<i>" and h2="b-<i>", timestamp
// base+i*tsStep, sent to partition i mod partitions.
func GenRecord(i int, tsStep int64, partitions int32) Record {
	v := make([]byte, 100)
	for j := range v {
		v[j] = byte('a' + (i*7+j*13)%26)
	}
	return Record{
		Partition: int32(i) % partitions,
		Key:       []byte(fmt.Sprintf("k-%d", i)),
		Value:     v,
		Headers: []Header{
			{Key: "h1", Value: []byte(fmt.Sprintf("a-%d", i))},
			{Key: "h2", Value: []byte(fmt.Sprintf("b-%d", i))},
		},
		Timestamp: BaseTimestamp + int64(i)*tsStep,
	}
}

// GenRecords returns records first..first+n-1.
func GenRecords(first, n int, tsStep int64, partitions int32) []Record {
	out := make([]Record, n)
	for k := range out {
		out[k] = GenRecord(first+k, tsStep, partitions)
	}
	return out
}

// IndexOf returns i for a key "k-<i>", else -1.
func IndexOf(key []byte) int {
	s := string(key)
	if !strings.HasPrefix(s, "k-") {
		return -1
	}
	i, err := strconv.Atoi(s[2:])
	if err != nil {
		return -1
	}
	return i
}

func text(b []byte) string {
	if b == nil {
		return `\N`
	}
	return string(b)
}

// HeaderText renders headers as name=value pairs joined by ",".
func HeaderText(hs []Header) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Key + "=" + text(h.Value)
	}
	return strings.Join(parts, ",")
}

// Digests returns scenarios.md's sha256 (offset, key, value, headers,
// timestamp; tab separated, one line per record) and sha256_kvh (the same
// without the timestamp).
func Digests(recs []Record) (full, kvh string) {
	hf, hk := sha256.New(), sha256.New()
	for _, r := range recs {
		common := fmt.Sprintf("%d\t%s\t%s\t%s", r.Offset, text(r.Key), text(r.Value), HeaderText(r.Headers))
		hf.Write([]byte(fmt.Sprintf("%s\t%d\n", common, r.Timestamp)))
		hk.Write([]byte(common + "\n"))
	}
	return hex.EncodeToString(hf.Sum(nil)), hex.EncodeToString(hk.Sum(nil))
}

// CodeError is a Kafka protocol error code returned by the broker.
type CodeError struct {
	Code int16
	Msg  string
}

func (e *CodeError) Error() string {
	s := ErrName(e.Code)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// ErrName maps a Kafka error code to its protocol name (Errors enum name).
func ErrName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) && ke.Message != "" && !strings.HasPrefix(ke.Message, "UNKNOWN_CASE") {
		return ke.Message
	}
	return fmt.Sprintf("CODE_%d", code)
}

// NameOf turns an adapter error into an error code name; "NONE" for nil and
// "CLIENT_ERROR(...)" for an error that carries no broker error code.
func NameOf(err error) string {
	if err == nil {
		return "NONE"
	}
	var ce *CodeError
	if errors.As(err, &ce) {
		return ErrName(ce.Code)
	}
	return "CLIENT_ERROR(" + err.Error() + ")"
}

// NotApplicable marks a scenario the client library cannot express.
type NotApplicable struct{ Reason string }

func (n *NotApplicable) Error() string { return "not applicable: " + n.Reason }

func na(format string, a ...any) error { return &NotApplicable{Reason: fmt.Sprintf(format, a...)} }

// ErrUnsupported marks an optional capability the client's API lacks; the
// scenario then reports null for that observation and does not check it.
var ErrUnsupported = errors.New("not supported by this client")

// Codec names used by the produce-consume scenarios.
var Codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// ProduceOpts select how records are produced. Without Idempotent the
// client's own idempotence default applies; with it, idempotence is on, up
// to 5 requests are in flight and batches are small (batch.size 4096).
type ProduceOpts struct {
	Codec      string
	Idempotent bool
	// Failover: the cluster's leader is killed meanwhile (leader-failover); the client must retry
	// until a new leader is elected rather than give up after its default retries.
	Failover bool
}

// Reader reads one partition from its earliest offset.
type Reader interface {
	Poll(ctx context.Context, d time.Duration) ([]Record, error)
	Close()
}

// GroupConsumer is one member of a consumer group (classic protocol).
type GroupConsumer interface {
	// Assigned is the number of partitions currently assigned.
	Assigned() int
	// Poll returns records fetched within about d.
	Poll(ctx context.Context, d time.Duration) ([]Record, error)
	// Commit synchronously commits the offsets of all records Poll returned.
	Commit(ctx context.Context) error
	Close() error
}

// Adapter is what each Go client provides; the scenarios are written once
// on top of it so that observations are identical across clients.
type Adapter interface {
	Close()
	CreateTopic(ctx context.Context, topic string, partitions int32) error
	DeleteTopic(ctx context.Context, topic string) error
	ListTopics(ctx context.Context) ([]string, error)
	// TopicPartitions describes topic (no auto-creation): its partition
	// count, or a *CodeError for a topic-level error.
	TopicPartitions(ctx context.Context, topic string) (int, error)
	// Produce writes recs (each to its Partition) and waits for every ack.
	Produce(ctx context.Context, topic string, recs []Record, opts ProduceOpts) error
	// OpenReader reads partition from its earliest offset (no group where possible).
	OpenReader(ctx context.Context, topic string, partition int32, readCommitted bool) (Reader, error)
	// ListOffset sends ListOffsets for ts (-2 earliest, -1 latest, -3 max
	// timestamp) under the isolation level; -1 = no such offset.
	ListOffset(ctx context.Context, topic string, partition int32, ts int64, readCommitted bool) (int64, error)
	// DescribeTopicConfig returns the value and the ConfigSource name.
	DescribeTopicConfig(ctx context.Context, topic, name string) (value, source string, err error)
	AlterTopicConfig(ctx context.Context, topic, name, value string) error
	// DeleteRecords deletes partition's records before offset; returns the low watermark.
	DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error)
	// Transactions commits one transaction holding committed, then aborts
	// one holding aborted, with transactional id txnID.
	Transactions(ctx context.Context, topic, txnID string, committed, aborted []Record) error
	// DescribeGroup returns the group state name and, per member, how many
	// partitions of topic it is assigned.
	DescribeGroup(ctx context.Context, group, topic string) (state string, memberPartitions []int, err error)
	// CommittedOffsets returns the group's committed offset for partitions
	// 0..partitions-1 of topic, -1 where none.
	CommittedOffsets(ctx context.Context, group, topic string, partitions int32) ([]int64, error)
	NewGroupConsumer(ctx context.Context, group, topic string) (GroupConsumer, error)
}

// ConfigSourceName maps a DescribeConfigs config_source to the name of
// Kafka's ConfigEntry.ConfigSource.
func ConfigSourceName(s int8) string {
	switch s {
	case 1:
		return "DYNAMIC_TOPIC_CONFIG"
	case 2:
		return "DYNAMIC_BROKER_CONFIG"
	case 3:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case 4:
		return "STATIC_BROKER_CONFIG"
	case 5:
		return "DEFAULT_CONFIG"
	case 6:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	case 7:
		return "DYNAMIC_CLIENT_METRICS_CONFIG"
	case 8:
		return "DYNAMIC_GROUP_CONFIG"
	}
	return "UNKNOWN"
}

// loopMember is what the group consumers fed by a goroutine of their own (sarama's Consume loop,
// kafka-go's generation loop) share: the size of the member's assignment, the loop's cancel and
// done, and closing once. The embedding consumer may keep its own session state under mu too.
type loopMember struct {
	mu       sync.Mutex // guards assigned, closed and the embedding consumer's session state
	assigned int
	closed   bool
	cancel   context.CancelFunc
	done     chan struct{} // closed when the loop has returned
}

func (m *loopMember) Assigned() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.assigned
}

// closeOnce closes the client's group with closeGroup, then stops the loop and waits for it to
// return; a second call does nothing.
func (m *loopMember) closeOnce(closeGroup func() error) error {
	m.mu.Lock()
	closed := m.closed
	m.closed = true
	m.mu.Unlock()
	if closed {
		return nil
	}
	err := closeGroup()
	m.cancel()
	<-m.done
	return err
}

// collect returns what arrives on ch within d, each delivery turned into a Record by take; it
// stops early, with what it has and ctx's error, when ctx ends.
func collect[T any](ctx context.Context, ch <-chan T, d time.Duration, take func(T) Record) ([]Record, error) {
	var out []Record
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case dl := <-ch:
			out = append(out, take(dl))
		case <-t.C:
			return out, nil
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
}
