package main

// gregor consume: print a topic's records, as kafka-console-consumer.sh
// does, as text or as JSON.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func consumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "consume",
		Usage:     "print a topic's records",
		ArgsUsage: "TOPIC",
		UsageText: `gregor consume greetings --from-beginning --max-messages 10
gregor consume scores --from-beginning --print-key --key-separator " = " --timeout 5s
gregor consume orders --partition 2 --offset 1000 --format json
gregor consume orders --timestamp 2026-11-29T18:00:00Z
gregor consume orders --group billing --from-beginning`,
		Description: "Without a position, consumption starts at the end of each partition, as in Kafka.\n" +
			"--from-beginning, --offset and --timestamp choose where it starts; with --group they\n" +
			"apply only to partitions where the group has no committed offset, and the offsets of\n" +
			"the records printed are committed to the group. The command ends after --max-messages\n" +
			"records, after --timeout without a record, or on Ctrl-C, and prints the count to\n" +
			"standard error.\n\n" +
			"--format json prints one object per line: topic, partition, offset, timestamp\n" +
			"(milliseconds), key, value and headers. A key, value or header value that is not valid\n" +
			"UTF-8 is base64-encoded and marked with key_encoding, value_encoding or encoding:\n" +
			"\"base64\". A null key or value is null.",
		Flags: append(connectionFlags(&cli.DurationFlag{Usage: "stop when no record has arrived for `DURATION` (default: wait forever)"}),
			&cli.BoolFlag{Name: "from-beginning", Usage: "start at the earliest offset of each partition"},
			&cli.StringFlag{Name: "offset", Usage: "start at offset `N` of each partition, or at earliest or latest"},
			&cli.StringFlag{Name: "timestamp", Usage: "start at the first record at or after `TIME` (RFC 3339, or milliseconds since the epoch)"},
			&cli.IntFlag{Name: "partition", Aliases: []string{"p"}, Value: -1, Usage: "consume only partition `N` (not with --group)"},
			&cli.StringFlag{Name: "group", Aliases: []string{"g"}, Usage: "consume as a member of consumer group `G`, committing offsets"},
			&cli.IntFlag{Name: "max-messages", Aliases: []string{"n"}, Usage: "stop after `N` records (default: no limit)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"},
			&cli.BoolFlag{Name: "print-key", Usage: "text format: print each record's key before its value"},
			&cli.BoolFlag{Name: "print-headers", Usage: "text format: print each record's headers (k:v,k2:v2) before its key and value"},
			&cli.StringFlag{Name: "key-separator", Value: "\t", Usage: "text format: `SEP` after the key and after the headers"},
			&cli.StringFlag{Name: "line-separator", Value: "\n", Usage: "text format: `SEP` after each record"},
			&cli.BoolFlag{Name: "progress", Usage: "print the count and rate to standard error every second"},
		),
		Action: withArgs(runConsume),
	}
}

// consumeOptions are consume's flags, checked.
type consumeOptions struct {
	topic       string
	start       kgo.Offset
	partition   int32
	group       string
	maxMessages int
	idle        time.Duration
	json        bool
}

func parseConsumeOptions(c *cli.Context, args []string) (consumeOptions, error) {
	if len(args) != 1 {
		return consumeOptions{}, errors.New("consume: name exactly one topic")
	}
	o := consumeOptions{topic: args[0], start: kgo.NewOffset().AtEnd(), group: c.String("group"), maxMessages: c.Int("max-messages"), idle: c.Duration("timeout")}
	positions := 0
	if c.Bool("from-beginning") {
		positions++
		o.start = kgo.NewOffset().AtStart()
	}
	if c.IsSet("offset") {
		positions++
		switch s := c.String("offset"); s {
		case "earliest":
			o.start = kgo.NewOffset().AtStart()
		case "latest":
			o.start = kgo.NewOffset().AtEnd()
		default:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return o, fmt.Errorf("--offset %q: want an offset (0 or more), earliest or latest", s)
			}
			o.start = kgo.NewOffset().At(n)
		}
	}
	if c.IsSet("timestamp") {
		positions++
		ms, err := parseTime(c.String("timestamp"))
		if err != nil {
			return o, fmt.Errorf("--timestamp %w", err)
		}
		o.start = kgo.NewOffset().AfterMilli(ms)
	}
	if positions > 1 {
		return o, errors.New("give only one of --from-beginning, --offset and --timestamp")
	}
	p := c.Int("partition")
	if p < -1 || p > 1<<31-1 {
		return o, fmt.Errorf("--partition %d: must be 0 or more", p)
	}
	o.partition = int32(p)
	if o.group != "" && o.partition >= 0 {
		return o, errors.New("--partition cannot be used with --group: the group assigns partitions")
	}
	if o.maxMessages < 0 {
		return o, fmt.Errorf("--max-messages %d: must be 0 or more", o.maxMessages)
	}
	if o.idle < 0 {
		return o, fmt.Errorf("--timeout %v: must not be negative", o.idle)
	}
	switch c.String("format") {
	case "text":
	case "json":
		o.json = true
	default:
		return o, fmt.Errorf("--format %q: want text or json", c.String("format"))
	}
	return o, nil
}

func runConsume(c *cli.Context, args []string) error {
	o, err := parseConsumeOptions(c, args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Refuse an unknown topic or partition rather than wait for it.
	if err := checkPartition(c, ctx, o.topic, o.partition); err != nil {
		return err
	}
	opts := []kgo.Opt{kgo.ConsumeResetOffset(o.start)}
	switch {
	case o.group != "":
		opts = append(opts, kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(o.topic), kgo.DisableAutoCommit())
	case o.partition >= 0:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: {o.partition: o.start}}))
	default:
		opts = append(opts, kgo.ConsumeTopics(o.topic))
	}
	cl, err := newClient(c, opts...)
	if err != nil {
		return err
	}
	defer cl.Close() // leaves the group

	out := bufio.NewWriter(c.App.Writer)
	printRecord := textPrinter(c)
	if o.json {
		printRecord = jsonPrinter
	}
	start := time.Now()
	count := 0
	var consumed, consumedBytes atomic.Int64
	stopProgress := func() {}
	if c.Bool("progress") {
		stopProgress = startProgress(c.App.ErrWriter, "consumed", start, &consumed, &consumedBytes)
	}
	var result error
	for result == nil && (o.maxMessages == 0 || count < o.maxMessages) {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if o.idle > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, o.idle)
		}
		fetches := cl.PollRecords(pollCtx, o.maxMessages-count)
		idle := pollCtx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			break // interrupted
		}
		if fetches.IsClientClosed() {
			break
		}
		var printed []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			if o.maxMessages > 0 && count >= o.maxMessages {
				return
			}
			printRecord(out, r)
			printed = append(printed, r)
			count++
			consumed.Add(1)
			consumedBytes.Add(int64(len(r.Key) + len(r.Value)))
		})
		if err := out.Flush(); err != nil {
			result = err
			break
		}
		if o.group != "" && len(printed) > 0 {
			if err := cl.CommitRecords(ctx, printed...); err != nil {
				result = fmt.Errorf("committing offsets to group %s: %w", o.group, err)
			}
		}
		fetches.EachError(func(topic string, p int32, err error) {
			switch {
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			case result == nil:
				result = fmt.Errorf("%s-%d: %w", topic, p, err)
			}
		})
		if len(printed) == 0 && idle && o.idle > 0 && result == nil {
			break // idle for --timeout
		}
	}
	stopProgress()
	elapsed := time.Since(start)
	fmt.Fprintf(c.App.ErrWriter, "Consumed %d records in %v (%s records/s).\n", count, elapsed.Round(time.Millisecond), rate(int64(count), elapsed))
	return result
}

// checkPartition refuses a topic (or a partition of it) that the cluster
// does not have, with Kafka's error.
func checkPartition(c *cli.Context, ctx context.Context, topic string, partition int32) error {
	const timeout = 30 * time.Second
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	meta, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("no answer from %s within %v: %w", c.String("bootstrap-server"), timeout, err)
		}
		return reachError(c.String("bootstrap-server"), err)
	}
	td, err := describedTopic(meta, topic)
	if err != nil {
		return err
	}
	if _, ok := td.Partitions[partition]; partition >= 0 && !ok {
		return missingPartition(topic, partition, len(td.Partitions))
	}
	return nil
}

// textPrinter prints records as kafka-console-consumer.sh does: the value,
// after the headers and the key when asked for.
func textPrinter(c *cli.Context) func(w *bufio.Writer, r *kgo.Record) {
	printKey, printHeaders := c.Bool("print-key"), c.Bool("print-headers")
	keySep, lineSep := c.String("key-separator"), c.String("line-separator")
	orNull := func(b []byte) []byte {
		if b == nil {
			return []byte("null")
		}
		return b
	}
	return func(w *bufio.Writer, r *kgo.Record) {
		if printHeaders {
			if len(r.Headers) == 0 {
				w.WriteString("NO_HEADERS")
			}
			for i, h := range r.Headers {
				if i > 0 {
					w.WriteByte(',')
				}
				w.WriteString(h.Key)
				w.WriteByte(':')
				w.Write(orNull(h.Value))
			}
			w.WriteString(keySep)
		}
		if printKey {
			w.Write(orNull(r.Key))
			w.WriteString(keySep)
		}
		w.Write(orNull(r.Value))
		w.WriteString(lineSep)
	}
}

// jsonRecord is a record as --format json prints it.
type jsonRecord struct {
	Topic         string       `json:"topic"`
	Partition     int32        `json:"partition"`
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	Headers       []jsonHeader `json:"headers"`
}

type jsonHeader struct {
	Key      string  `json:"key"`
	Value    *string `json:"value"`
	Encoding string  `json:"encoding,omitempty"`
}

// jsonBytes returns b as a JSON string: as is if it is valid UTF-8,
// otherwise base64-encoded with encoding "base64". Nil is null.
func jsonBytes(b []byte) (s *string, encoding string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		str := string(b)
		return &str, ""
	}
	str := base64.StdEncoding.EncodeToString(b)
	return &str, "base64"
}

func jsonPrinter(w *bufio.Writer, r *kgo.Record) {
	j := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Headers: []jsonHeader{}}
	j.Key, j.KeyEncoding = jsonBytes(r.Key)
	j.Value, j.ValueEncoding = jsonBytes(r.Value)
	for _, h := range r.Headers {
		jh := jsonHeader{Key: h.Key}
		jh.Value, jh.Encoding = jsonBytes(h.Value)
		j.Headers = append(j.Headers, jh)
	}
	writeJSON(w, j)
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
