package main

// gregor produce: one record per line of standard input, as
// kafka-console-producer.sh does.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func produceCommand() *cli.Command {
	return &cli.Command{
		Name:      "produce",
		Usage:     "produce the lines of standard input as records",
		ArgsUsage: "TOPIC",
		UsageText: `echo hello | gregor produce greetings
printf 'alice:1\nbob:2\n' | gregor produce scores --key-separator :
gregor produce orders --header source=import --acks 1 --compression zstd < orders.txt`,
		Description: "Each line of standard input (without its line ending) becomes one record's value;\n" +
			"with --key-separator, the text before the first separator is the key. Records are\n" +
			"batched and sent as fast as the cluster takes them; the count and the rate are\n" +
			"printed to standard error at the end, and every second while standard error is a\n" +
			"terminal and standard input is not (or with --progress). The first record the cluster\n" +
			"refuses stops the command with Kafka's error; the records produced before it stay\n" +
			"produced.",
		Flags: append(connectionFlags(&cli.DurationFlag{Value: 30 * time.Second, Usage: "give up on a record the cluster has not acknowledged within `DURATION`"}),
			&cli.StringFlag{Name: "key-separator", Aliases: []string{"k"}, Usage: "split each line at the first `SEP` into key and value; a line without it is an error"},
			&cli.StringSliceFlag{Name: "header", Aliases: []string{"H"}, Usage: "`KEY=VALUE` header added to every record (repeatable)"},
			&cli.IntFlag{Name: "partition", Aliases: []string{"p"}, Value: -1, Usage: "produce to this partition (default: by key, as Kafka's default partitioner)"},
			&cli.StringFlag{Name: "acks", Value: "all", Usage: "acknowledgements to wait for: all (-1), 1 or 0"},
			&cli.StringFlag{Name: "compression", Value: "none", Usage: "none, gzip, snappy, lz4 or zstd"},
			&cli.IntFlag{Name: "max-line-bytes", Value: 1 << 20, Usage: "refuse input lines longer than `N` bytes"},
			&cli.BoolFlag{Name: "progress", Usage: "print progress every second even when standard error is not a terminal"},
		),
		Action: withArgs(runProduce),
	}
}

// produceOptions are produce's flags, checked.
type produceOptions struct {
	topic        string
	keySeparator []byte
	headers      []kgo.RecordHeader
	partition    int32
	maxLine      int
	opts         []kgo.Opt
}

func parseProduceOptions(c *cli.Context, args []string) (produceOptions, error) {
	if len(args) != 1 {
		return produceOptions{}, errors.New("produce: name exactly one topic")
	}
	o := produceOptions{topic: args[0], keySeparator: []byte(c.String("key-separator")), maxLine: c.Int("max-line-bytes")}
	if c.IsSet("key-separator") && len(o.keySeparator) == 0 {
		return o, errors.New("--key-separator: the separator is empty")
	}
	kvs, err := parseKeyValues("header", c.StringSlice("header"))
	if err != nil {
		return o, err
	}
	for _, kv := range kvs {
		o.headers = append(o.headers, kgo.RecordHeader{Key: kv[0], Value: []byte(kv[1])})
	}
	p := c.Int("partition")
	if p < -1 || p > 1<<31-1 {
		return o, fmt.Errorf("--partition %d: must be 0 or more", p)
	}
	o.partition = int32(p)
	if o.maxLine < 1 {
		return o, fmt.Errorf("--max-line-bytes %d: must be at least 1", o.maxLine)
	}
	// As Kafka's console producer, ask for the topic to be created if the
	// broker creates topics on first use (auto.create.topics.enable).
	o.opts = append(o.opts, kgo.DefaultProduceTopic(o.topic), kgo.RecordDeliveryTimeout(c.Duration("timeout")), kgo.AllowAutoTopicCreation())
	switch c.String("acks") {
	case "all", "-1":
		o.opts = append(o.opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		o.opts = append(o.opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		o.opts = append(o.opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return o, fmt.Errorf("--acks %q: want all, -1, 1 or 0", c.String("acks"))
	}
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	codec, ok := codecs[strings.ToLower(c.String("compression"))]
	if !ok {
		return o, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", c.String("compression"))
	}
	o.opts = append(o.opts, kgo.ProducerBatchCompression(codec))
	if o.partition >= 0 {
		o.opts = append(o.opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if c.Duration("timeout") <= 0 {
		return o, fmt.Errorf("--timeout %v: must be positive", c.Duration("timeout"))
	}
	return o, nil
}

func runProduce(c *cli.Context, args []string) error {
	o, err := parseProduceOptions(c, args)
	if err != nil {
		return err
	}
	cl, err := newClient(c, o.opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()

	// The first failure stops reading; records in flight still finish.
	var (
		produced, bytesOut atomic.Int64
		failOnce           sync.Once
		failure            error
	)
	done := func(r *kgo.Record, err error) {
		if err != nil {
			failOnce.Do(func() {
				failure = reachError(c.String("bootstrap-server"), fmt.Errorf("record at line %d: %w", r.Context.Value(lineKey{}), err))
				cancel()
			})
			return
		}
		produced.Add(1)
		bytesOut.Add(int64(len(r.Key) + len(r.Value)))
	}

	start := time.Now()
	stopProgress := func() {}
	// Progress is for piped input; lines typed at a terminal need none.
	if c.Bool("progress") || (isTerminal(c.App.ErrWriter) && !isTerminal(c.App.Reader)) {
		stopProgress = startProgress(c.App.ErrWriter, "produced", start, &produced, &bytesOut)
	}
	in := bufio.NewReaderSize(c.App.Reader, 64<<10)
	line := 0
	var readErr error
	for ctx.Err() == nil {
		text, err := readLine(in, o.maxLine)
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			readErr = fmt.Errorf("line %d: %w", line, err)
			break
		}
		r := &kgo.Record{Value: text, Headers: o.headers, Partition: o.partition}
		if len(o.keySeparator) > 0 {
			k, v, ok := bytes.Cut(text, o.keySeparator)
			if !ok {
				readErr = fmt.Errorf("line %d: no key separator %q", line, o.keySeparator)
				break
			}
			r.Key, r.Value = k, v
		}
		// Produce blocks while the client's buffer is full, until a
		// record is acknowledged or ctx ends.
		cl.Produce(context.WithValue(ctx, lineKey{}, line), r, done)
	}
	flushErr := cl.Flush(context.Background())
	stopProgress()
	elapsed := time.Since(start)
	n := produced.Load()
	fmt.Fprintf(c.App.ErrWriter, "Produced %d records (%s) to %s in %v: %s records/s, %s/s.\n",
		n, byteSize(bytesOut.Load()), o.topic, elapsed.Round(time.Millisecond), rate(n, elapsed), byteSize(int64(float64(bytesOut.Load())/max(elapsed.Seconds(), 1e-9))))
	switch {
	case failure != nil:
		return failure
	case readErr != nil:
		return readErr
	case c.Context.Err() != nil:
		return c.Context.Err()
	}
	return flushErr
}

// lineKey is the context key of a record's input line number.
type lineKey struct{}

// readLine returns the next line of in without its line ending ("\n" or
// "\r\n"), refusing lines longer than max. The last line need not end in
// a newline. It returns io.EOF when there are no more lines.
func readLine(in *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := in.ReadSlice('\n')
		if len(line)+len(chunk) > max+2 {
			return nil, fmt.Errorf("longer than %d bytes (--max-line-bytes)", max)
		}
		line = append(line, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) == 0:
			return nil, io.EOF
		case err != nil && err != io.EOF:
			return nil, err
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > max {
			return nil, fmt.Errorf("longer than %d bytes (--max-line-bytes)", max)
		}
		return line, nil
	}
}

// startProgress prints, every second until the returned function is
// called, how many records have been done and at what rate.
func startProgress(w io.Writer, verb string, start time.Time, records, bytes *atomic.Int64) func() {
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		lastN, last := int64(0), start
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				n := records.Load()
				fmt.Fprintf(w, "%s %d records (%s) in %v, now %s records/s\n", verb, n, byteSize(bytes.Load()),
					now.Sub(start).Round(time.Second), rate(n-lastN, now.Sub(last)))
				lastN, last = n, now
			}
		}
	}()
	return func() { close(stop); <-finished }
}
