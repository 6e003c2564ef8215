package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

type confluentAdapter struct {
	bootstrap string
	adm       *kafka.AdminClient
}

func newConfluent(bootstrap string) (Adapter, error) {
	adm, err := kafka.NewAdminClient(ckConf(kafka.ConfigMap{"bootstrap.servers": bootstrap, "log_level": 3}))
	if err != nil {
		return nil, err
	}
	return &confluentAdapter{bootstrap: bootstrap, adm: adm}, nil
}

func (c *confluentAdapter) Close() { c.adm.Close() }

// ckErr converts librdkafka errors: positive codes are Kafka protocol codes.
func ckErr(err error) error {
	if err == nil {
		return nil
	}
	var ke kafka.Error
	if errors.As(err, &ke) {
		if ke.Code() == kafka.ErrNoError {
			return nil
		}
		if ke.Code() > 0 {
			return &CodeError{Code: int16(ke.Code()), Msg: ke.String()}
		}
	}
	return err
}

func (c *confluentAdapter) CreateTopic(ctx context.Context, topic string, partitions int32) error {
	res, err := c.adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: int(partitions), ReplicationFactor: int(replicationFactor)}})
	if err != nil {
		return ckErr(err)
	}
	for _, r := range res {
		if r.Topic == topic {
			return ckErr(r.Error)
		}
	}
	return fmt.Errorf("no CreateTopics result for %s", topic)
}

func (c *confluentAdapter) DeleteTopic(ctx context.Context, topic string) error {
	res, err := c.adm.DeleteTopics(ctx, []string{topic})
	if err != nil {
		return ckErr(err)
	}
	for _, r := range res {
		if r.Topic == topic {
			return ckErr(r.Error)
		}
	}
	return fmt.Errorf("no DeleteTopics result for %s", topic)
}

func (c *confluentAdapter) ListTopics(ctx context.Context) ([]string, error) {
	md, err := c.adm.GetMetadata(nil, true, 10000)
	if err != nil {
		return nil, ckErr(err)
	}
	var names []string
	for n, t := range md.Topics {
		if t.Error.Code() == kafka.ErrNoError {
			names = append(names, n)
		}
	}
	return names, nil
}

func (c *confluentAdapter) TopicPartitions(ctx context.Context, topic string) (int, error) {
	res, err := c.adm.DescribeTopics(ctx, kafka.NewTopicCollectionOfTopicNames([]string{topic}))
	if err != nil {
		return 0, ckErr(err)
	}
	for _, td := range res.TopicDescriptions {
		if td.Name == topic {
			if td.Error.Code() != kafka.ErrNoError {
				return 0, ckErr(td.Error)
			}
			return len(td.Partitions), nil
		}
	}
	return 0, fmt.Errorf("topic %s missing from DescribeTopics result", topic)
}

func toCk(topic *string, r Record) *kafka.Message {
	m := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: topic, Partition: r.Partition},
		Key:            r.Key,
		Value:          r.Value,
		Timestamp:      time.UnixMilli(r.Timestamp),
		TimestampType:  kafka.TimestampCreateTime,
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	return m
}

func fromCk(m *kafka.Message) Record {
	r := Record{
		Partition: m.TopicPartition.Partition,
		Offset:    int64(m.TopicPartition.Offset),
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Timestamp.UnixMilli(),
	}
	switch m.TimestampType {
	case kafka.TimestampCreateTime:
		r.TimestampType = "CreateTime"
	case kafka.TimestampLogAppendTime:
		r.TimestampType = "LogAppendTime"
	default:
		r.TimestampType = "NoTimestampType"
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, Header{Key: h.Key, Value: h.Value})
	}
	return r
}

// ckSend produces recs and waits for every delivery report.
func ckSend(ctx context.Context, p *kafka.Producer, topic string, recs []Record) error {
	dr := make(chan kafka.Event, len(recs))
	t := topic
	for _, r := range recs {
		if err := p.Produce(toCk(&t, r), dr); err != nil {
			return ckErr(err)
		}
	}
	for i := 0; i < len(recs); i++ {
		select {
		case ev := <-dr:
			m, ok := ev.(*kafka.Message)
			if !ok {
				return fmt.Errorf("unexpected delivery event %v", ev)
			}
			if m.TopicPartition.Error != nil {
				return ckErr(m.TopicPartition.Error)
			}
		case <-ctx.Done():
			return fmt.Errorf("%d of %d delivery reports: %w", i, len(recs), ctx.Err())
		}
	}
	return nil
}

func (c *confluentAdapter) Produce(ctx context.Context, topic string, recs []Record, opts ProduceOpts) error {
	codec := opts.Codec
	if codec == "" {
		codec = "none"
	}
	cm := kafka.ConfigMap{
		"bootstrap.servers": c.bootstrap,
		"acks":              "all",
		"compression.type":  codec,
		"log_level":         3,
	}
	if opts.Idempotent {
		cm["enable.idempotence"] = true
		cm["max.in.flight.requests.per.connection"] = 5
		cm["batch.size"] = 4096
	}
	p, err := kafka.NewProducer(ckConf(cm))
	if err != nil {
		return err
	}
	defer p.Close()
	return ckSend(ctx, p, topic, recs)
}

type ckReader struct{ c *kafka.Consumer }

func (c *confluentAdapter) OpenReader(ctx context.Context, topic string, partition int32, readCommitted bool) (Reader, error) {
	iso := "read_uncommitted"
	if readCommitted {
		iso = "read_committed"
	}
	cons, err := kafka.NewConsumer(ckConf(kafka.ConfigMap{
		"bootstrap.servers":  c.bootstrap,
		"group.id":           topic + "-reader", // required by the constructor; no group is joined (assign)
		"enable.auto.commit": false,
		"isolation.level":    iso,
		"log_level":          3,
	}))
	if err != nil {
		return nil, err
	}
	t := topic
	if err := cons.Assign([]kafka.TopicPartition{{Topic: &t, Partition: partition, Offset: kafka.OffsetBeginning}}); err != nil {
		cons.Close()
		return nil, ckErr(err)
	}
	return &ckReader{c: cons}, nil
}

func pollCk(c *kafka.Consumer, d time.Duration) ([]Record, error) {
	var out []Record
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return out, nil
		}
		switch ev := c.Poll(int(left.Milliseconds()) + 1).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				return out, ckErr(ev.TopicPartition.Error)
			}
			out = append(out, fromCk(ev))
		case kafka.Error:
			if ev.IsFatal() {
				return out, ckErr(ev)
			}
		}
	}
}

func (r *ckReader) Poll(ctx context.Context, d time.Duration) ([]Record, error) {
	return pollCk(r.c, d)
}

func (r *ckReader) Close() { r.c.Close() }

func (c *confluentAdapter) ListOffset(ctx context.Context, topic string, partition int32, ts int64, readCommitted bool) (int64, error) {
	var spec kafka.OffsetSpec
	switch ts {
	case -3:
		spec = kafka.MaxTimestampOffsetSpec
	case -2:
		spec = kafka.EarliestOffsetSpec
	case -1:
		spec = kafka.LatestOffsetSpec
	default:
		spec = kafka.NewOffsetSpecForTimestamp(ts)
	}
	iso := kafka.IsolationLevelReadUncommitted
	if readCommitted {
		iso = kafka.IsolationLevelReadCommitted
	}
	t := topic
	res, err := c.adm.ListOffsets(ctx, map[kafka.TopicPartition]kafka.OffsetSpec{{Topic: &t, Partition: partition}: spec},
		kafka.SetAdminIsolationLevel(iso))
	if err != nil {
		return 0, ckErr(err)
	}
	for tp, info := range res.ResultInfos {
		if tp.Topic != nil && *tp.Topic == topic && tp.Partition == partition {
			if info.Error.Code() != kafka.ErrNoError {
				return 0, ckErr(info.Error)
			}
			return int64(info.Offset), nil
		}
	}
	return 0, errors.New("partition missing from ListOffsets result")
}

func (c *confluentAdapter) DescribeTopicConfig(ctx context.Context, topic, name string) (string, string, error) {
	res, err := c.adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil {
		return "", "", ckErr(err)
	}
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError {
			return "", "", ckErr(r.Error)
		}
		if e, ok := r.Config[name]; ok {
			return e.Value, ConfigSourceName(int8(e.Source)), nil
		}
	}
	return "", "", fmt.Errorf("config %s not described", name)
}

func (c *confluentAdapter) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error) {
	t := topic
	res, err := c.adm.DeleteRecords(ctx, []kafka.TopicPartition{{Topic: &t, Partition: partition, Offset: kafka.Offset(before)}})
	if err != nil {
		return 0, ckErr(err)
	}
	for _, r := range res.DeleteRecordsResults {
		if r.TopicPartition.Error != nil {
			return 0, ckErr(r.TopicPartition.Error)
		}
		if r.DeletedRecords != nil {
			return int64(r.DeletedRecords.LowWatermark), nil
		}
	}
	return 0, errors.New("no DeleteRecords result")
}

func (c *confluentAdapter) DescribeGroup(ctx context.Context, group, topic string) (string, []int, error) {
	res, err := c.adm.DescribeConsumerGroups(ctx, []string{group})
	if err != nil {
		return "", nil, ckErr(err)
	}
	for _, d := range res.ConsumerGroupDescriptions {
		if d.GroupID != group {
			continue
		}
		if d.Error.Code() != kafka.ErrNoError {
			return "", nil, ckErr(d.Error)
		}
		var sizes []int
		for _, m := range d.Members {
			n := 0
			for _, tp := range m.Assignment.TopicPartitions {
				if tp.Topic != nil && *tp.Topic == topic {
					n++
				}
			}
			sizes = append(sizes, n)
		}
		return d.State.String(), sizes, nil
	}
	return "", nil, errors.New("group missing from DescribeConsumerGroups")
}

func (c *confluentAdapter) CommittedOffsets(ctx context.Context, group, topic string, partitions int32) ([]int64, error) {
	t := topic
	var tps []kafka.TopicPartition
	for p := int32(0); p < partitions; p++ {
		tps = append(tps, kafka.TopicPartition{Topic: &t, Partition: p})
	}
	res, err := c.adm.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: group, Partitions: tps}})
	if err != nil {
		return nil, ckErr(err)
	}
	out := make([]int64, partitions)
	for i := range out {
		out[i] = -1
	}
	for _, g := range res.ConsumerGroupsTopicPartitions {
		for _, tp := range g.Partitions {
			if tp.Error == nil && tp.Offset >= 0 && tp.Partition >= 0 && tp.Partition < partitions {
				out[tp.Partition] = int64(tp.Offset)
			}
		}
	}
	return out, nil
}

func (c *confluentAdapter) AlterTopicConfig(ctx context.Context, topic, name, value string) error {
	res, err := c.adm.IncrementalAlterConfigs(ctx, []kafka.ConfigResource{{
		Type:   kafka.ResourceTopic,
		Name:   topic,
		Config: []kafka.ConfigEntry{{Name: name, Value: value, IncrementalOperation: kafka.AlterConfigOpTypeSet}},
	}})
	if err != nil {
		return ckErr(err)
	}
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError {
			return ckErr(r.Error)
		}
	}
	return nil
}

func (c *confluentAdapter) Transactions(ctx context.Context, topic, txnID string, committed, aborted []Record) error {
	p, err := kafka.NewProducer(ckConf(kafka.ConfigMap{
		"bootstrap.servers": c.bootstrap,
		"transactional.id":  txnID,
		"acks":              "all",
		"log_level":         3,
	}))
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.InitTransactions(ctx); err != nil {
		return fmt.Errorf("init transactions: %w", ckErr(err))
	}
	for _, step := range []struct {
		recs   []Record
		commit bool
	}{{committed, true}, {aborted, false}} {
		if err := p.BeginTransaction(); err != nil {
			return fmt.Errorf("begin: %w", ckErr(err))
		}
		if err := ckSend(ctx, p, topic, step.recs); err != nil {
			return fmt.Errorf("produce in transaction: %w", err)
		}
		if step.commit {
			err = p.CommitTransaction(ctx)
		} else {
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			return fmt.Errorf("end transaction (commit=%v): %w", step.commit, ckErr(err))
		}
	}
	return nil
}

type confluentGroupConsumer struct {
	c      *kafka.Consumer
	closed bool
}

func (c *confluentAdapter) NewGroupConsumer(ctx context.Context, group, topic string) (GroupConsumer, error) {
	return c.newGroupConsumer(group, topic, kafka.ConfigMap{
		"heartbeat.interval.ms": 1000, // members notice rebalances sooner
	})
}

// NewConsumerProtocolGroupConsumer is a member using KIP-848
// (group.protocol=consumer); the broker sets the heartbeat interval.
func (c *confluentAdapter) NewConsumerProtocolGroupConsumer(ctx context.Context, group, topic string) (GroupConsumer, error) {
	return c.newGroupConsumer(group, topic, kafka.ConfigMap{"group.protocol": "consumer"})
}

func (c *confluentAdapter) newGroupConsumer(group, topic string, extra kafka.ConfigMap) (GroupConsumer, error) {
	cfg := kafka.ConfigMap{
		"bootstrap.servers":  c.bootstrap,
		"group.id":           group,
		"enable.auto.commit": false,
		"auto.offset.reset":  "earliest",
		"log_level":          3,
	}
	for k, v := range extra {
		cfg[k] = v
	}
	cons, err := kafka.NewConsumer(ckConf(cfg))
	if err != nil {
		return nil, err
	}
	if err := cons.Subscribe(topic, nil); err != nil {
		cons.Close()
		return nil, ckErr(err)
	}
	return &confluentGroupConsumer{c: cons}, nil
}

func (g *confluentGroupConsumer) Assigned() int {
	a, err := g.c.Assignment()
	if err != nil {
		return 0
	}
	return len(a)
}

func (g *confluentGroupConsumer) Poll(ctx context.Context, d time.Duration) ([]Record, error) {
	return pollCk(g.c, d)
}

func (g *confluentGroupConsumer) Commit(ctx context.Context) error {
	_, err := g.c.Commit()
	var ke kafka.Error
	if errors.As(err, &ke) && ke.Code() == kafka.ErrNoOffset {
		return nil
	}
	return ckErr(err)
}

func (g *confluentGroupConsumer) Close() error {
	if g.closed {
		return nil
	}
	g.closed = true
	return g.c.Close()
}

// ckConf adds the run's security (security.go) to a librdkafka configuration,
// with librdkafka's own keys: the CA, the client certificate and key (mTLS),
// the SASL mechanism and login.
func ckConf(m kafka.ConfigMap) *kafka.ConfigMap {
	if sec.Protocol == "PLAINTEXT" {
		return &m
	}
	m["security.protocol"] = strings.ToLower(sec.Protocol)
	if sec.UsesTLS() {
		m["ssl.ca.location"] = sec.CAFile
		if sec.CertFile != "" {
			m["ssl.certificate.location"] = sec.CertFile
			m["ssl.key.location"] = sec.KeyFile
		}
	}
	if sec.UsesSASL() {
		m["sasl.mechanisms"] = sec.Mechanism
		m["sasl.username"] = sec.Username
		m["sasl.password"] = sec.Password
	}
	return &m
}
