package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// failoverLogOnce turns sarama's logger on for the leader-failover scenario.
var failoverLogOnce sync.Once

type saramaAdapter struct {
	addrs []string
	adm   sarama.ClusterAdmin
}

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "gregor-compat-sarama"
	cfg.Metadata.AllowAutoTopicCreation = false
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	saramaSecurity(cfg)
	return cfg
}

// saramaMechanisms are the SASL mechanisms the sarama adapter can log in
// with: sarama implements PLAIN itself and takes a SCRAM client from the
// application (xdg-go/scram, as sarama's own example does).
var saramaMechanisms = map[string]sarama.SASLMechanism{
	"PLAIN":         sarama.SASLTypePlaintext,
	"SCRAM-SHA-256": sarama.SASLTypeSCRAMSHA256,
	"SCRAM-SHA-512": sarama.SASLTypeSCRAMSHA512,
}

// saramaSecurity sets the run's TLS and SASL (security.go) on cfg.
func saramaSecurity(cfg *sarama.Config) {
	if sec.UsesTLS() {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = sec.tlsConfig()
	}
	if !sec.UsesSASL() {
		return
	}
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.Mechanism = saramaMechanisms[sec.Mechanism]
	cfg.Net.SASL.User = sec.Username
	cfg.Net.SASL.Password = sec.Password
	switch sec.Mechanism {
	case "SCRAM-SHA-256":
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: scram.SHA256} }
	case "SCRAM-SHA-512":
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: scram.SHA512} }
	}
}

// xdgSCRAM is sarama's SCRAMClient over xdg-go/scram.
type xdgSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, password, authzID string) error {
	c, err := x.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	x.conv = c.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }

func (x *xdgSCRAM) Done() bool { return x.conv.Done() }

func newSarama(bootstrap string) (Adapter, error) {
	if _, ok := saramaMechanisms[sec.Mechanism]; sec.UsesSASL() && !ok {
		return nil, na("the sarama adapter has no SASL mechanism %s", sec.Mechanism)
	}
	addrs := strings.Split(bootstrap, ",")
	adm, err := sarama.NewClusterAdmin(addrs, saramaConfig())
	if err != nil {
		return nil, err
	}
	return &saramaAdapter{addrs: addrs, adm: adm}, nil
}

func (s *saramaAdapter) Close() { s.adm.Close() }

// saramaErr converts sarama broker errors (KError, possibly wrapped) into *CodeError.
func saramaErr(err error) error {
	if err == nil {
		return nil
	}
	var ke sarama.KError
	if errors.As(err, &ke) {
		if ke == sarama.ErrNoError {
			return nil
		}
		return &CodeError{Code: int16(ke), Msg: err.Error()}
	}
	return err
}

func (s *saramaAdapter) CreateTopic(ctx context.Context, topic string, partitions int32) error {
	return saramaErr(s.adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: replicationFactor}, false))
}

func (s *saramaAdapter) DeleteTopic(ctx context.Context, topic string) error {
	return saramaErr(s.adm.DeleteTopic(topic))
}

func (s *saramaAdapter) ListTopics(ctx context.Context) ([]string, error) {
	ts, err := s.adm.ListTopics()
	if err != nil {
		return nil, saramaErr(err)
	}
	var names []string
	for n := range ts {
		names = append(names, n)
	}
	return names, nil
}

func (s *saramaAdapter) TopicPartitions(ctx context.Context, topic string) (int, error) {
	md, err := s.adm.DescribeTopics([]string{topic})
	if err != nil {
		return 0, saramaErr(err)
	}
	for _, t := range md {
		if t.Name == topic {
			if t.Err != sarama.ErrNoError {
				return 0, &CodeError{Code: int16(t.Err)}
			}
			return len(t.Partitions), nil
		}
	}
	return 0, fmt.Errorf("topic %s missing from metadata response", topic)
}

func saramaCodec(name string) (sarama.CompressionCodec, error) {
	switch name {
	case "", "none":
		return sarama.CompressionNone, nil
	case "gzip":
		return sarama.CompressionGZIP, nil
	case "snappy":
		return sarama.CompressionSnappy, nil
	case "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		return sarama.CompressionZSTD, nil
	}
	return sarama.CompressionNone, fmt.Errorf("unknown codec %q", name)
}

func toSarama(topic string, r Record) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{
		Topic:     topic,
		Partition: r.Partition,
		Key:       sarama.ByteEncoder(r.Key),
		Value:     sarama.ByteEncoder(r.Value),
		Timestamp: time.UnixMilli(r.Timestamp),
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
	}
	return m
}

func fromSarama(m *sarama.ConsumerMessage) Record {
	r := Record{
		Partition: m.Partition,
		Offset:    m.Offset,
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Timestamp.UnixMilli(),
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, Header{Key: string(h.Key), Value: h.Value})
	}
	return r
}

func saramaSend(p sarama.SyncProducer, topic string, recs []Record) error {
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		msgs[i] = toSarama(topic, r)
	}
	if err := p.SendMessages(msgs); err != nil {
		var pe sarama.ProducerErrors
		if errors.As(err, &pe) && len(pe) > 0 {
			return saramaErr(pe[0].Err)
		}
		return saramaErr(err)
	}
	return nil
}

func (s *saramaAdapter) Produce(ctx context.Context, topic string, recs []Record, opts ProduceOpts) error {
	cfg := saramaConfig()
	codec, err := saramaCodec(opts.Codec)
	if err != nil {
		return err
	}
	cfg.Producer.Compression = codec
	if opts.Idempotent {
		// sarama allows only one request in flight with idempotence; small batches all the same
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Flush.Bytes = 4096
		// Without a frequency sarama flushes a batch only once it holds Flush.Bytes, and warns
		// that "messages may not get flushed": leader-failover hung twice in CI on the round that
		// was in flight when the leader was killed (24 of its records on the killed leader).
		cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	}
	if opts.Failover {
		// sarama's own log goes to the adapter's stderr (kept in the cell's log): what it did
		// around the leader's kill is what a failure here needs explained.
		failoverLogOnce.Do(func() { sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds) })
		// sarama gives up after 3 retries 100 ms apart by default: too soon for a leader election.
		cfg.Producer.Retry.Max = 60
		cfg.Producer.Retry.Backoff = 500 * time.Millisecond
		cfg.Metadata.Retry.Max = 60
		cfg.Metadata.Retry.Backoff = 500 * time.Millisecond
	}
	p, err := sarama.NewSyncProducer(s.addrs, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	return saramaSend(p, topic, recs)
}

type saramaReader struct {
	c  sarama.Consumer
	pc sarama.PartitionConsumer
}

func (s *saramaAdapter) OpenReader(ctx context.Context, topic string, partition int32, readCommitted bool) (Reader, error) {
	cfg := saramaConfig()
	cfg.Consumer.Return.Errors = true
	if readCommitted {
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	c, err := sarama.NewConsumer(s.addrs, cfg)
	if err != nil {
		return nil, err
	}
	pc, err := c.ConsumePartition(topic, partition, sarama.OffsetOldest)
	if err != nil {
		c.Close()
		return nil, saramaErr(err)
	}
	return &saramaReader{c: c, pc: pc}, nil
}

func (r *saramaReader) Poll(ctx context.Context, d time.Duration) ([]Record, error) {
	var out []Record
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case m := <-r.pc.Messages():
			out = append(out, fromSarama(m))
		case e := <-r.pc.Errors():
			return out, saramaErr(e.Err)
		case <-t.C:
			return out, nil
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
}

func (r *saramaReader) Close() {
	r.pc.Close()
	r.c.Close()
}

// leader opens a client with cfg and returns the partition's leader, for requests sent to it
// directly; the caller closes the client.
func (s *saramaAdapter) leader(cfg *sarama.Config, topic string, partition int32) (sarama.Client, *sarama.Broker, error) {
	cl, err := sarama.NewClient(s.addrs, cfg)
	if err != nil {
		return nil, nil, err
	}
	b, err := cl.Leader(topic, partition)
	if err != nil {
		cl.Close()
		return nil, nil, saramaErr(err)
	}
	return cl, b, nil
}

func (s *saramaAdapter) ListOffset(ctx context.Context, topic string, partition int32, ts int64, readCommitted bool) (int64, error) {
	cfg := saramaConfig()
	if ts == -3 {
		return 0, ErrUnsupported // sarama's OffsetRequest stops at v6; max-timestamp needs v7
	}
	cl, b, err := s.leader(cfg, topic, partition)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := sarama.NewOffsetRequest(cfg.Version)
	if readCommitted {
		req.IsolationLevel = sarama.ReadCommitted
	}
	req.AddBlock(topic, partition, ts, 1)
	resp, err := b.GetAvailableOffsets(req)
	if err != nil {
		return 0, saramaErr(err)
	}
	blk := resp.GetBlock(topic, partition)
	if blk == nil {
		return 0, errors.New("partition missing from ListOffsets response")
	}
	if blk.Err != sarama.ErrNoError {
		return 0, &CodeError{Code: int16(blk.Err)}
	}
	return blk.Offset, nil
}

func (s *saramaAdapter) DescribeTopicConfig(ctx context.Context, topic, name string) (string, string, error) {
	entries, err := s.adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{name}})
	if err != nil {
		return "", "", saramaErr(err)
	}
	for _, e := range entries {
		if e.Name == name {
			return e.Value, ConfigSourceName(int8(e.Source)), nil
		}
	}
	return "", "", fmt.Errorf("config %s not described", name)
}

// DeleteRecords goes to the partition leader directly: ClusterAdmin.DeleteRecords
// does not return the new low watermark.
func (s *saramaAdapter) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error) {
	cl, b, err := s.leader(saramaConfig(), topic, partition)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	resp, err := b.DeleteRecords(&sarama.DeleteRecordsRequest{
		Topics:  map[string]*sarama.DeleteRecordsRequestTopic{topic: {PartitionOffsets: map[int32]int64{partition: before}}},
		Timeout: 10 * time.Second,
	})
	if err != nil {
		return 0, saramaErr(err)
	}
	t, ok := resp.Topics[topic]
	if !ok || t.Partitions[partition] == nil {
		return 0, errors.New("partition missing from DeleteRecords response")
	}
	pr := t.Partitions[partition]
	if pr.Err != sarama.ErrNoError {
		return 0, &CodeError{Code: int16(pr.Err)}
	}
	return pr.LowWatermark, nil
}

func (s *saramaAdapter) DescribeGroup(ctx context.Context, group, topic string) (string, []int, error) {
	ds, err := s.adm.DescribeConsumerGroups([]string{group})
	if err != nil {
		return "", nil, saramaErr(err)
	}
	for _, d := range ds {
		if d.GroupId != group {
			continue
		}
		if d.Err != sarama.ErrNoError {
			return "", nil, &CodeError{Code: int16(d.Err)}
		}
		var sizes []int
		for _, m := range d.Members {
			a, err := m.GetMemberAssignment()
			if err != nil {
				return "", nil, err
			}
			n := 0
			if a != nil {
				n = len(a.Topics[topic])
			}
			sizes = append(sizes, n)
		}
		return d.State, sizes, nil
	}
	return "", nil, errors.New("group missing from DescribeGroups")
}

func (s *saramaAdapter) CommittedOffsets(ctx context.Context, group, topic string, partitions int32) ([]int64, error) {
	ps := make([]int32, partitions)
	for i := range ps {
		ps[i] = int32(i)
	}
	resp, err := s.adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: ps})
	if err != nil {
		return nil, saramaErr(err)
	}
	out := make([]int64, partitions)
	for p := int32(0); p < partitions; p++ {
		out[p] = -1
		if b := resp.GetBlock(topic, p); b != nil && b.Err == sarama.ErrNoError {
			out[p] = b.Offset
		}
	}
	return out, nil
}

func (s *saramaAdapter) AlterTopicConfig(ctx context.Context, topic, name, value string) error {
	v := value
	return saramaErr(s.adm.IncrementalAlterConfig(sarama.TopicResource, topic,
		map[string]sarama.IncrementalAlterConfigsEntry{name: {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}}, false))
}

func (s *saramaAdapter) Transactions(ctx context.Context, topic, txnID string, committed, aborted []Record) error {
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = txnID
	p, err := sarama.NewSyncProducer(s.addrs, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	for _, step := range []struct {
		recs   []Record
		commit bool
	}{{committed, true}, {aborted, false}} {
		if err := p.BeginTxn(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if err := saramaSend(p, topic, step.recs); err != nil {
			return fmt.Errorf("produce in transaction: %w", err)
		}
		if step.commit {
			err = p.CommitTxn()
		} else {
			err = p.AbortTxn()
		}
		if err != nil {
			return fmt.Errorf("end transaction (commit=%v): %w", step.commit, saramaErr(err))
		}
	}
	return nil
}

type saramaDelivery struct {
	sess sarama.ConsumerGroupSession
	msg  *sarama.ConsumerMessage
}

type saramaGroupConsumer struct {
	loopMember
	cg    sarama.ConsumerGroup
	topic string
	ch    chan saramaDelivery
	sess  sarama.ConsumerGroupSession // under mu
	errMu sync.Mutex
	err   error
}

func (g *saramaGroupConsumer) Setup(sess sarama.ConsumerGroupSession) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sess = sess
	g.assigned = len(sess.Claims()[g.topic])
	return nil
}

func (g *saramaGroupConsumer) Cleanup(sess sarama.ConsumerGroupSession) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.assigned = 0
	return nil
}

func (g *saramaGroupConsumer) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			select {
			case g.ch <- saramaDelivery{sess, m}:
			case <-sess.Context().Done():
				return nil
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

func (s *saramaAdapter) NewGroupConsumer(ctx context.Context, group, topic string) (GroupConsumer, error) {
	cfg := saramaConfig()
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Heartbeat.Interval = time.Second // members notice rebalances sooner
	cg, err := sarama.NewConsumerGroup(s.addrs, group, cfg)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	g := &saramaGroupConsumer{loopMember: loopMember{cancel: cancel, done: make(chan struct{})}, cg: cg, topic: topic, ch: make(chan saramaDelivery)}
	go func() {
		defer close(g.done)
		for cctx.Err() == nil {
			if err := cg.Consume(cctx, []string{topic}, g); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				g.errMu.Lock()
				g.err = err
				g.errMu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return g, nil
}

func (g *saramaGroupConsumer) Poll(ctx context.Context, d time.Duration) ([]Record, error) {
	return collect(ctx, g.ch, d, func(dl saramaDelivery) Record {
		dl.sess.MarkMessage(dl.msg, "")
		return fromSarama(dl.msg)
	})
}

func (g *saramaGroupConsumer) Commit(ctx context.Context) error {
	g.mu.Lock()
	sess := g.sess
	g.mu.Unlock()
	if sess == nil {
		return errors.New("no group session")
	}
	sess.Commit()
	return nil
}

func (g *saramaGroupConsumer) Close() error { return g.closeOnce(g.cg.Close) }
