package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

type franzAdapter struct {
	bootstrap string
	cl        *kgo.Client
	adm       *kadm.Client
}

func newFranz(bootstrap string) (Adapter, error) {
	if _, err := franzSecurity(); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(franzOpts(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))...)
	if err != nil {
		return nil, err
	}
	return &franzAdapter{bootstrap: bootstrap, cl: cl, adm: kadm.NewClient(cl)}, nil
}

func (f *franzAdapter) Close() { f.cl.Close() }

// franzErr converts franz-go broker errors into *CodeError.
func franzErr(err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return &CodeError{Code: ke.Code}
	}
	return err
}

func (f *franzAdapter) CreateTopic(ctx context.Context, topic string, partitions int32) error {
	resp, err := f.adm.CreateTopic(ctx, partitions, replicationFactor, nil, topic)
	if err != nil {
		return franzErr(err)
	}
	return franzErr(resp.Err)
}

func (f *franzAdapter) DeleteTopic(ctx context.Context, topic string) error {
	resp, err := f.adm.DeleteTopic(ctx, topic)
	if err != nil {
		return franzErr(err)
	}
	return franzErr(resp.Err)
}

func (f *franzAdapter) ListTopics(ctx context.Context) ([]string, error) {
	tds, err := f.adm.ListTopics(ctx)
	if err != nil {
		return nil, franzErr(err)
	}
	return tds.Names(), nil
}

func (f *franzAdapter) TopicPartitions(ctx context.Context, topic string) (int, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		return 0, err
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && *t.Topic == topic {
			if t.ErrorCode != 0 {
				return 0, &CodeError{Code: t.ErrorCode}
			}
			return len(t.Partitions), nil
		}
	}
	return 0, fmt.Errorf("topic %s missing from metadata response", topic)
}

func franzCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("unknown codec %q", name)
}

func toKgo(topic string, r Record) *kgo.Record {
	kr := &kgo.Record{
		Topic:     topic,
		Partition: r.Partition,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: time.UnixMilli(r.Timestamp),
	}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr
}

func fromKgo(kr *kgo.Record) Record {
	r := Record{
		Partition:     kr.Partition,
		Offset:        kr.Offset,
		Key:           kr.Key,
		Value:         kr.Value,
		Timestamp:     kr.Timestamp.UnixMilli(),
		TimestampType: "CreateTime",
	}
	if kr.Attrs.TimestampType() == 1 {
		r.TimestampType = "LogAppendTime"
	}
	for _, h := range kr.Headers {
		r.Headers = append(r.Headers, Header{Key: h.Key, Value: h.Value})
	}
	return r
}

func (f *franzAdapter) Produce(ctx context.Context, topic string, recs []Record, opts ProduceOpts) error {
	codec, err := franzCodec(opts.Codec)
	if err != nil {
		return err
	}
	kopts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(f.bootstrap, ",")...),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	}
	if opts.Idempotent {
		// franz-go is idempotent by default (and then rejects an explicit in-flight limit);
		// small batches, so that several are produced.
		kopts = append(kopts, kgo.ProducerBatchMaxBytes(4096))
	}
	p, err := kgo.NewClient(franzOpts(kopts...)...)
	if err != nil {
		return err
	}
	defer p.Close()
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = toKgo(topic, r)
	}
	return franzErr(p.ProduceSync(ctx, krs...).FirstErr())
}

type franzReader struct{ c *kgo.Client }

func (f *franzAdapter) OpenReader(ctx context.Context, topic string, partition int32, readCommitted bool) (Reader, error) {
	iso := kgo.ReadUncommitted()
	if readCommitted {
		iso = kgo.ReadCommitted()
	}
	c, err := kgo.NewClient(franzOpts(
		kgo.SeedBrokers(strings.Split(f.bootstrap, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return nil, err
	}
	return &franzReader{c: c}, nil
}

func pollFranz(ctx context.Context, c *kgo.Client, d time.Duration) ([]Record, error) {
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	fs := c.PollFetches(pctx)
	for _, e := range fs.Errors() {
		if errors.Is(e.Err, context.DeadlineExceeded) || errors.Is(e.Err, context.Canceled) {
			continue
		}
		return nil, franzErr(e.Err)
	}
	var out []Record
	fs.EachRecord(func(kr *kgo.Record) { out = append(out, fromKgo(kr)) })
	return out, nil
}

func (r *franzReader) Poll(ctx context.Context, d time.Duration) ([]Record, error) {
	return pollFranz(ctx, r.c, d)
}

func (r *franzReader) Close() { r.c.Close() }

func (f *franzAdapter) ListOffset(ctx context.Context, topic string, partition int32, ts int64, readCommitted bool) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if readCommitted {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		return 0, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Partition == partition {
				if p.ErrorCode != 0 {
					return 0, &CodeError{Code: p.ErrorCode}
				}
				return p.Offset, nil
			}
		}
	}
	return 0, fmt.Errorf("partition missing from ListOffsets response")
}

func (f *franzAdapter) DescribeTopicConfig(ctx context.Context, topic, name string) (string, string, error) {
	rcs, err := f.adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return "", "", franzErr(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return "", "", franzErr(err)
	}
	if rc.Err != nil {
		return "", "", franzErr(rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue(), ConfigSourceName(int8(c.Source)), nil
		}
	}
	return "", "", fmt.Errorf("config %s not described", name)
}

func (f *franzAdapter) AlterTopicConfig(ctx context.Context, topic, name, value string) error {
	v := value
	resps, err := f.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: &v}}, topic)
	if err != nil {
		return franzErr(err)
	}
	for _, r := range resps {
		if r.Err != nil {
			return franzErr(r.Err)
		}
	}
	return nil
}

func (f *franzAdapter) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error) {
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: before, LeaderEpoch: -1})
	resps, err := f.adm.DeleteRecords(ctx, os)
	if err != nil {
		return 0, franzErr(err)
	}
	r, ok := resps.Lookup(topic, partition)
	if !ok {
		return 0, errors.New("no DeleteRecords result")
	}
	return r.LowWatermark, franzErr(r.Err)
}

func (f *franzAdapter) Transactions(ctx context.Context, topic, txnID string, committed, aborted []Record) error {
	p, err := kgo.NewClient(franzOpts(
		kgo.SeedBrokers(strings.Split(f.bootstrap, ",")...),
		kgo.TransactionalID(txnID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)...)
	if err != nil {
		return err
	}
	defer p.Close()
	for _, step := range []struct {
		recs []Record
		end  kgo.TransactionEndTry
	}{{committed, kgo.TryCommit}, {aborted, kgo.TryAbort}} {
		if err := p.BeginTransaction(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		krs := make([]*kgo.Record, len(step.recs))
		for i, r := range step.recs {
			krs[i] = toKgo(topic, r)
		}
		if err := p.ProduceSync(ctx, krs...).FirstErr(); err != nil {
			return fmt.Errorf("produce in transaction: %w", franzErr(err))
		}
		if err := p.EndTransaction(ctx, step.end); err != nil {
			return fmt.Errorf("end transaction (commit=%v): %w", step.end, franzErr(err))
		}
	}
	return nil
}

func (f *franzAdapter) DescribeGroup(ctx context.Context, group, topic string) (string, []int, error) {
	// A KIP-848 group is described by ConsumerGroupDescribe; a classic
	// group is not found there (GROUP_ID_NOT_FOUND), as Kafka's admin client
	// finds, and is described by DescribeGroups.
	if cgs, err := f.adm.DescribeConsumerGroups(ctx, group); err == nil {
		if g, ok := cgs[group]; ok && g.Err == nil {
			var sizes []int
			for _, m := range g.Members {
				sizes = append(sizes, len(m.Assignment[topic]))
			}
			return g.State, sizes, nil
		}
	}
	gs, err := f.adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", nil, franzErr(err)
	}
	g, ok := gs[group]
	if !ok {
		return "", nil, errors.New("group missing from DescribeGroups")
	}
	if g.Err != nil {
		return "", nil, franzErr(g.Err)
	}
	var sizes []int
	for _, m := range g.Members {
		n := 0
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				if t.Topic == topic {
					n += len(t.Partitions)
				}
			}
		}
		sizes = append(sizes, n)
	}
	return g.State, sizes, nil
}

func (f *franzAdapter) CommittedOffsets(ctx context.Context, group, topic string, partitions int32) ([]int64, error) {
	os, err := f.adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, franzErr(err)
	}
	out := make([]int64, partitions)
	for p := int32(0); p < partitions; p++ {
		out[p] = -1
		if r, ok := os.Lookup(topic, p); ok && r.Err == nil {
			out[p] = r.At
		}
	}
	return out, nil
}

type franzGroupConsumer struct {
	cl       *kgo.Client
	mu       sync.Mutex
	assigned map[int32]bool
	closed   bool
}

func (f *franzAdapter) NewGroupConsumer(ctx context.Context, group, topic string) (GroupConsumer, error) {
	return f.newGroupConsumer(group, topic, kgo.HeartbeatInterval(time.Second)) // members notice rebalances sooner
}

// NewConsumerProtocolGroupConsumer is a member using KIP-848
// (kgo.ServerSideBalancer, which needs the range or sticky balancer
// named); the broker sets the heartbeat interval.
func (f *franzAdapter) NewConsumerProtocolGroupConsumer(ctx context.Context, group, topic string) (GroupConsumer, error) {
	return f.newGroupConsumer(group, topic, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
}

func (f *franzAdapter) newGroupConsumer(group, topic string, extra ...kgo.Opt) (GroupConsumer, error) {
	g := &franzGroupConsumer{assigned: map[int32]bool{}}
	drop := func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, p := range m[topic] {
			delete(g.assigned, p)
		}
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(strings.Split(f.bootstrap, ",")...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, p := range m[topic] {
				g.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(drop),
		kgo.OnPartitionsLost(drop),
	}, extra...)
	cl, err := kgo.NewClient(franzOpts(opts...)...)
	if err != nil {
		return nil, err
	}
	g.cl = cl
	return g, nil
}

func (g *franzGroupConsumer) Assigned() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.assigned)
}

func (g *franzGroupConsumer) Poll(ctx context.Context, d time.Duration) ([]Record, error) {
	return pollFranz(ctx, g.cl, d)
}

func (g *franzGroupConsumer) Commit(ctx context.Context) error {
	return franzErr(g.cl.CommitUncommittedOffsets(ctx))
}

func (g *franzGroupConsumer) Close() error {
	g.mu.Lock()
	closed := g.closed
	g.closed = true
	g.mu.Unlock()
	if !closed {
		g.cl.Close()
	}
	return nil
}

// franzTransformMember is a consume-transform-produce member: a kgo.GroupTransactSession, which aborts a
// transaction that a rebalance got in the way of and rewinds to the committed offsets itself.
type franzTransformMember struct {
	s      *kgo.GroupTransactSession
	input  string
	output string
	txnID  string

	mu       sync.Mutex
	assigned map[int32]bool // the input partitions held, from the session's callbacks
}

func (f *franzAdapter) NewTransformMember(ctx context.Context, group, input, output, txnID string) (TransformMember, error) {
	m := &franzTransformMember{input: input, output: output, txnID: txnID, assigned: map[int32]bool{}}
	track := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			ctpLog("%s assigned=%v %v\n", txnID, add, ps[input])
			for _, p := range ps[input] {
				if add {
					m.assigned[p] = true
				} else {
					delete(m.assigned, p)
				}
			}
		}
	}
	var debug []kgo.Opt
	if os.Getenv("COMPAT_DEBUG") != "" { // franz-go's own log, for a failing or slow run
		debug = append(debug, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, func() string {
			return fmt.Sprintf("+%.3fs %s ", time.Since(ctpStart).Seconds(), txnID)
		})))
	}
	s, err := kgo.NewGroupTransactSession(franzOpts(append(debug,
		kgo.SeedBrokers(strings.Split(f.bootstrap, ",")...),
		kgo.OnPartitionsAssigned(track(true)),
		kgo.OnPartitionsRevoked(track(false)),
		kgo.OnPartitionsLost(track(false)),
		kgo.TransactionalID(txnID),
		// a member that dies inside a transaction must not hold back the output's LSO for long
		kgo.TransactionTimeout(10*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.HeartbeatInterval(time.Second), // members notice rebalances sooner
		kgo.FetchMaxWait(500*time.Millisecond),
		// A transaction begun right after the last one committed may have its first produce answered
		// CONCURRENT_TRANSACTIONS (Kafka) while the markers are written; franz-go retries it after a
		// metadata refresh, which it spaces by MetadataMinAge (5 s by default: 20-25 s of a run).
		kgo.MetadataMinAge(500*time.Millisecond),
	)...)...)
	if err != nil {
		return nil, err
	}
	m.s = s
	return m, nil
}

func (m *franzTransformMember) Step(ctx context.Context, d time.Duration) (int, bool, error) {
	pctx, cancel := context.WithTimeout(ctx, d)
	fs := m.s.PollRecords(pctx, ctpMaxPoll)
	cancel()
	for _, e := range fs.Errors() {
		if errors.Is(e.Err, context.DeadlineExceeded) || errors.Is(e.Err, context.Canceled) {
			continue
		}
		return 0, false, fmt.Errorf("poll: %w (%v)", franzErr(e.Err), e.Err)
	}
	var recs []*kgo.Record
	fs.EachRecord(func(r *kgo.Record) {
		out := &kgo.Record{
			Topic:     m.output,
			Partition: r.Partition,
			Key:       r.Key,
			Value:     Transform(r.Value),
			Headers:   r.Headers,
			Timestamp: r.Timestamp,
		}
		recs = append(recs, out)
	})
	if len(recs) == 0 {
		return 0, false, nil
	}
	if err := m.s.Begin(); err != nil {
		return 0, false, fmt.Errorf("begin: %w (%v)", franzErr(err), err)
	}
	end := kgo.TryCommit
	began := time.Now()
	if err := m.s.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		ctpLog("produce in a transaction failed, aborting: %v\n", err)
		end = kgo.TryAbort
	}
	produced := time.Now()
	committed, err := m.s.End(ctx, end)
	if d := time.Since(began); d > 500*time.Millisecond {
		ctpLog("%s: a slow transaction of %d records: produce %v, end %v (committed %v, err %v)\n",
			m.txnID, len(recs), produced.Sub(began).Round(time.Millisecond), time.Since(produced).Round(time.Millisecond), committed, err)
	}
	if err != nil {
		return 0, false, fmt.Errorf("end transaction: %w (%v)", franzErr(err), err)
	}
	if !committed {
		ctpLog("a transaction of %d records was aborted\n", len(recs))
		return 0, true, nil
	}
	return len(recs), false, nil
}

// Hold pauses the input topic, which stays paused across rebalances until resumed.
func (m *franzTransformMember) Hold(pause bool) {
	if pause {
		m.s.Client().PauseFetchTopics(m.input)
	} else {
		m.s.Client().ResumeFetchTopics(m.input)
	}
}

func (m *franzTransformMember) Assigned() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.assigned)
}

func (m *franzTransformMember) Close() { m.s.Close() }

// franzSecurity is the TLS dialer and the SASL mechanism of the run's
// security (security.go) as franz-go options.
func franzSecurity() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if sec.UsesTLS() {
		opts = append(opts, kgo.DialTLSConfig(sec.tlsConfig()))
	}
	if sec.UsesSASL() {
		auth := scram.Auth{User: sec.Username, Pass: sec.Password}
		switch sec.Mechanism {
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(auth.AsSha512Mechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(auth.AsSha256Mechanism()))
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: sec.Username, Pass: sec.Password}.AsMechanism()))
		default:
			return nil, na("the franz-go adapter has no SASL mechanism %s", sec.Mechanism)
		}
	}
	return opts, nil
}

// franzOpts appends the run's security options to a client's options
// (newFranz has checked that they can be built).
func franzOpts(opts ...kgo.Opt) []kgo.Opt {
	s, _ := franzSecurity()
	return append(opts, s...)
}
