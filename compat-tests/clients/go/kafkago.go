package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	kgscram "github.com/segmentio/kafka-go/sasl/scram"
)

type kafkaGoAdapter struct {
	bootstrap string
	cl        *kafka.Client
}

func newKafkaGo(bootstrap string) (Adapter, error) {
	if _, err := kafkaGoSASL(); err != nil {
		return nil, err
	}
	// kafka.Client answers Metadata from its transport's cache (refreshed in the background, every
	// 6 s by default); a short TTL makes topic creation and deletion visible sooner.
	return &kafkaGoAdapter{bootstrap: bootstrap, cl: &kafka.Client{
		Addr:      kafka.TCP(strings.Split(bootstrap, ",")...),
		Timeout:   20 * time.Second,
		Transport: kafkaGoTransport(&kafka.Transport{MetadataTTL: 500 * time.Millisecond}),
	}}, nil
}

func (k *kafkaGoAdapter) Close() {}

func (k *kafkaGoAdapter) NotApplicable(scenario string) string {
	switch scenario {
	case "idempotent-producer":
		return "kafka-go's Writer has no idempotent producer (no producer id / sequence numbers)"
	case "transactions":
		return "kafka-go has no transactional producer API"
	case "delete-records":
		return "kafka-go has no DeleteRecords API"
	}
	return ""
}

// kgoErr converts kafka-go broker errors (kafka.Error) into *CodeError.
func kgoErr(err error) error {
	if err == nil {
		return nil
	}
	var ke kafka.Error
	if errors.As(err, &ke) {
		return &CodeError{Code: int16(ke)}
	}
	return err
}

func (k *kafkaGoAdapter) CreateTopic(ctx context.Context, topic string, partitions int32) error {
	resp, err := k.cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: int(partitions), ReplicationFactor: int(replicationFactor)}},
	})
	if err != nil {
		return kgoErr(err)
	}
	return kgoErr(resp.Errors[topic])
}

func (k *kafkaGoAdapter) DeleteTopic(ctx context.Context, topic string) error {
	resp, err := k.cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil {
		return kgoErr(err)
	}
	return kgoErr(resp.Errors[topic])
}

func (k *kafkaGoAdapter) ListTopics(ctx context.Context) ([]string, error) {
	resp, err := k.cl.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return nil, kgoErr(err)
	}
	var names []string
	for _, t := range resp.Topics {
		if t.Error == nil {
			names = append(names, t.Name)
		}
	}
	return names, nil
}

func (k *kafkaGoAdapter) TopicPartitions(ctx context.Context, topic string) (int, error) {
	resp, err := k.cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, kgoErr(err)
	}
	for _, t := range resp.Topics {
		if t.Name == topic {
			if t.Error != nil {
				return 0, kgoErr(t.Error)
			}
			return len(t.Partitions), nil
		}
	}
	return 0, fmt.Errorf("topic %s missing from metadata response", topic)
}

func kgoCodec(name string) (kafka.Compression, error) {
	switch name {
	case "", "none":
		return 0, nil
	case "gzip":
		return kafka.Gzip, nil
	case "snappy":
		return kafka.Snappy, nil
	case "lz4":
		return kafka.Lz4, nil
	case "zstd":
		return kafka.Zstd, nil
	}
	return 0, fmt.Errorf("unknown codec %q", name)
}

func (k *kafkaGoAdapter) Produce(ctx context.Context, topic string, recs []Record, opts ProduceOpts) error {
	if opts.Idempotent {
		return na("kafka-go has no idempotent producer")
	}
	codec, err := kgoCodec(opts.Codec)
	if err != nil {
		return err
	}
	part := make(map[string]int, len(recs))
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		part[string(r.Key)] = int(r.Partition)
		m := kafka.Message{Key: r.Key, Value: r.Value, Time: time.UnixMilli(r.Timestamp)}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		msgs[i] = m
	}
	w := &kafka.Writer{
		Addr:         kafka.TCP(strings.Split(k.bootstrap, ",")...),
		Transport:    kafkaGoTransport(&kafka.Transport{}),
		Topic:        topic,
		Compression:  codec,
		RequiredAcks: kafka.RequireAll,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
			return part[string(m.Key)]
		}),
	}
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		var we kafka.WriteErrors
		if errors.As(err, &we) {
			for _, e := range we {
				if e != nil {
					return kgoErr(e)
				}
			}
		}
		return kgoErr(err)
	}
	return nil
}

func fromKafkaGo(m kafka.Message) Record {
	r := Record{
		Partition: int32(m.Partition),
		Offset:    m.Offset,
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Time.UnixMilli(),
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, Header{Key: h.Key, Value: h.Value})
	}
	return r
}

type kafkaGoReader struct{ r *kafka.Reader }

func (k *kafkaGoAdapter) OpenReader(ctx context.Context, topic string, partition int32, readCommitted bool) (Reader, error) {
	cfg := kafka.ReaderConfig{
		Brokers:   strings.Split(k.bootstrap, ","),
		Dialer:    kafkaGoDialer(),
		Topic:     topic,
		Partition: int(partition),
		MinBytes:  1,
		MaxBytes:  10 << 20,
		MaxWait:   500 * time.Millisecond,
	}
	if readCommitted {
		cfg.IsolationLevel = kafka.ReadCommitted
	}
	r := kafka.NewReader(cfg)
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		r.Close()
		return nil, err
	}
	return &kafkaGoReader{r: r}, nil
}

func (r *kafkaGoReader) Poll(ctx context.Context, d time.Duration) ([]Record, error) {
	var out []Record
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		m, err := r.r.ReadMessage(pctx)
		if err != nil {
			if pctx.Err() != nil && ctx.Err() == nil {
				return out, nil
			}
			return out, kgoErr(err)
		}
		out = append(out, fromKafkaGo(m))
	}
}

func (r *kafkaGoReader) Close() { r.r.Close() }

func (k *kafkaGoAdapter) ListOffset(ctx context.Context, topic string, partition int32, ts int64, readCommitted bool) (int64, error) {
	switch {
	case ts == -3:
		return 0, ErrUnsupported // kafka-go's ListOffsets stops at v5; max-timestamp needs v7
	case ts == -1 && readCommitted:
		// Client.ListOffsets carries the isolation level (the Conn helpers use v1, which has none).
		resp, err := k.cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{
			Topics:         map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(int(partition))}},
			IsolationLevel: kafka.ReadCommitted,
		})
		if err != nil {
			return 0, kgoErr(err)
		}
		for _, po := range resp.Topics[topic] {
			if po.Partition == int(partition) {
				if po.Error != nil {
					return 0, kgoErr(po.Error)
				}
				return po.LastOffset, nil
			}
		}
		return 0, errors.New("partition missing from ListOffsets response")
	}
	conn, err := kafkaGoDialer().DialLeader(ctx, "tcp", strings.Split(k.bootstrap, ",")[0], topic, int(partition))
	if err != nil {
		return 0, kgoErr(err)
	}
	defer conn.Close()
	var off int64
	switch ts {
	case -2:
		off, err = conn.ReadFirstOffset()
	case -1:
		off, err = conn.ReadLastOffset()
	default:
		off, err = conn.ReadOffset(time.UnixMilli(ts))
	}
	return off, kgoErr(err)
}

func (k *kafkaGoAdapter) DescribeTopicConfig(ctx context.Context, topic, name string) (string, string, error) {
	resp, err := k.cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{name}}},
	})
	if err != nil {
		return "", "", kgoErr(err)
	}
	for _, res := range resp.Resources {
		if res.Error != nil {
			return "", "", kgoErr(res.Error)
		}
		for _, e := range res.ConfigEntries {
			if e.ConfigName == name {
				return e.ConfigValue, ConfigSourceName(e.ConfigSource), nil
			}
		}
	}
	return "", "", fmt.Errorf("config %s not described", name)
}

func (k *kafkaGoAdapter) AlterTopicConfig(ctx context.Context, topic, name, value string) error {
	resp, err := k.cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{
		Resources: []kafka.IncrementalAlterConfigsRequestResource{{
			ResourceType: kafka.ResourceTypeTopic,
			ResourceName: topic,
			Configs:      []kafka.IncrementalAlterConfigsRequestConfig{{Name: name, Value: value, ConfigOperation: kafka.ConfigOperationSet}},
		}},
	})
	if err != nil {
		return kgoErr(err)
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return kgoErr(r.Error)
		}
	}
	return nil
}

func (k *kafkaGoAdapter) Transactions(ctx context.Context, topic, txnID string, committed, aborted []Record) error {
	return na("kafka-go has no transactional producer API")
}

func (k *kafkaGoAdapter) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error) {
	return 0, na("kafka-go has no DeleteRecords API")
}

func (k *kafkaGoAdapter) DescribeGroup(ctx context.Context, group, topic string) (string, []int, error) {
	resp, err := k.cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return "", nil, kgoErr(err)
	}
	for _, g := range resp.Groups {
		if g.GroupID != group {
			continue
		}
		if g.Error != nil {
			return "", nil, kgoErr(g.Error)
		}
		var sizes []int
		for _, m := range g.Members {
			n := 0
			for _, t := range m.MemberAssignments.Topics {
				if t.Topic == topic {
					n += len(t.Partitions)
				}
			}
			sizes = append(sizes, n)
		}
		return g.GroupState, sizes, nil
	}
	return "", nil, errors.New("group missing from DescribeGroups")
}

func (k *kafkaGoAdapter) CommittedOffsets(ctx context.Context, group, topic string, partitions int32) ([]int64, error) {
	ps := make([]int, partitions)
	for i := range ps {
		ps[i] = i
	}
	resp, err := k.cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
	if err != nil {
		return nil, kgoErr(err)
	}
	out := make([]int64, partitions)
	for i := range out {
		out[i] = -1
	}
	for _, p := range resp.Topics[topic] {
		if p.Error == nil && p.Partition >= 0 && p.Partition < int(partitions) {
			out[p.Partition] = p.CommittedOffset
		}
	}
	return out, nil
}

type kgoDelivery struct {
	gen *kafka.Generation
	msg kafka.Message
}

type kafkaGoGroupConsumer struct {
	loopMember
	cg    *kafka.ConsumerGroup
	topic string
	ch    chan kgoDelivery
	gen   *kafka.Generation // under mu
	next  map[int]int64     // under mu: partition -> offset to commit (last polled + 1)
}

func (k *kafkaGoAdapter) NewGroupConsumer(ctx context.Context, group, topic string) (GroupConsumer, error) {
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                group,
		Brokers:           strings.Split(k.bootstrap, ","),
		Dialer:            kafkaGoDialer(),
		Topics:            []string{topic},
		StartOffset:       kafka.FirstOffset,
		HeartbeatInterval: time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		JoinGroupBackoff:  200 * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	g := &kafkaGoGroupConsumer{loopMember: loopMember{cancel: cancel, done: make(chan struct{})}, cg: cg, topic: topic, ch: make(chan kgoDelivery), next: map[int]int64{}}
	go g.run(cctx, k.bootstrap)
	return g, nil
}

func (g *kafkaGoGroupConsumer) run(ctx context.Context, bootstrap string) {
	defer close(g.done)
	for {
		gen, err := g.cg.Next(ctx)
		if err != nil {
			if errors.Is(err, kafka.ErrGroupClosed) || ctx.Err() != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		as := gen.Assignments[g.topic]
		g.mu.Lock()
		g.gen = gen
		g.assigned = len(as)
		g.next = map[int]int64{}
		g.mu.Unlock()
		gen.Start(func(gctx context.Context) {
			<-gctx.Done()
			g.mu.Lock()
			if g.gen == gen {
				g.assigned = 0
			}
			g.mu.Unlock()
		})
		for _, pa := range as {
			pa := pa
			gen.Start(func(gctx context.Context) {
				r := kafka.NewReader(kafka.ReaderConfig{
					Brokers:   strings.Split(bootstrap, ","),
					Dialer:    kafkaGoDialer(),
					Topic:     g.topic,
					Partition: pa.ID,
					MinBytes:  1,
					MaxBytes:  10 << 20,
					MaxWait:   500 * time.Millisecond,
				})
				defer r.Close()
				if err := r.SetOffset(pa.Offset); err != nil {
					return
				}
				for {
					m, err := r.ReadMessage(gctx)
					if err != nil {
						return
					}
					select {
					case g.ch <- kgoDelivery{gen, m}:
					case <-gctx.Done():
						return
					}
				}
			})
		}
	}
}

func (g *kafkaGoGroupConsumer) Poll(ctx context.Context, d time.Duration) ([]Record, error) {
	return collect(ctx, g.ch, d, func(dl kgoDelivery) Record {
		g.mu.Lock()
		if dl.gen == g.gen {
			g.next[dl.msg.Partition] = dl.msg.Offset + 1
		}
		g.mu.Unlock()
		return fromKafkaGo(dl.msg)
	})
}

func (g *kafkaGoGroupConsumer) Commit(ctx context.Context) error {
	g.mu.Lock()
	gen := g.gen
	offs := map[int]int64{}
	for p, o := range g.next {
		offs[p] = o
	}
	g.mu.Unlock()
	if gen == nil {
		return errors.New("no generation")
	}
	if len(offs) == 0 {
		return nil
	}
	return kgoErr(gen.CommitOffsets(map[string]map[int]int64{g.topic: offs}))
}

func (g *kafkaGoGroupConsumer) Close() error { return g.closeOnce(g.cg.Close) }

// kafkaGoSASL is the run's SASL mechanism (security.go) as kafka-go's own
// (sasl/plain, sasl/scram), nil without SASL.
func kafkaGoSASL() (sasl.Mechanism, error) {
	if !sec.UsesSASL() {
		return nil, nil
	}
	switch sec.Mechanism {
	case "PLAIN":
		return plain.Mechanism{Username: sec.Username, Password: sec.Password}, nil
	case "SCRAM-SHA-256":
		return kgscram.Mechanism(kgscram.SHA256, sec.Username, sec.Password)
	case "SCRAM-SHA-512":
		return kgscram.Mechanism(kgscram.SHA512, sec.Username, sec.Password)
	}
	return nil, na("the kafka-go adapter has no SASL mechanism %s", sec.Mechanism)
}

// kafkaGoTransport sets the run's TLS and SASL on t (Client, Writer).
func kafkaGoTransport(t *kafka.Transport) *kafka.Transport {
	t.TLS = sec.tlsConfig()
	t.SASL, _ = kafkaGoSASL() // newKafkaGo checked the mechanism
	return t
}

// kafkaGoDialer is a Dialer with the run's TLS and SASL (Reader,
// ConsumerGroup), with kafka-go's default timeouts.
func kafkaGoDialer() *kafka.Dialer {
	d := &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: sec.tlsConfig()}
	d.SASLMechanism, _ = kafkaGoSASL()
	return d
}
