// Command rawdiff is the raw-protocol differential between Gregor and a
// reference Apache Kafka: a catalogue of requests, valid and invalid, is sent
// to both over raw connections, and the decoded responses are compared field
// by field after masking what may legitimately differ (node and cluster ids,
// addresses, timings, throttle, error message texts).
//
//	go run ./compat-tests/rawdiff --kafka 127.0.0.1:9092
//
// Gregor is started in-process (in memory, random port). Every entry prints
// one line: PASS, XDIFF (only differences listed in the expected-differences
// table) or DIFF (unexpected differences, listed). The last line is
// "rawdiff: N passed, M failed"; the exit status is 1 when M > 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/broker"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// entry is one catalogue item. setup (optional) runs on each broker before
// the request; req builds the request (or raw does the whole exchange and
// returns the decoded response); mask lists entry-specific masked paths.
type entry struct {
	name  string
	setup func(c *conn, topic string) error
	req   func(topic string) kmsg.Request
	raw   func(c *conn, topic string) (any, error)
	mask  []string
	// post (optional) edits the response tree before masking, on both sides.
	post func(tree any, topic string)
}

// expected is a known, documented difference: the entry, a path pattern as
// in masks, and why.
type expected struct {
	entry, path, reason string
}

func main() {
	kafkaAddr := flag.String("kafka", os.Getenv("GREGOR_KAFKA_BOOTSTRAP"), "reference Kafka bootstrap host:port")
	verbose := flag.Bool("v", false, "print the informational notes (configs only one side reports)")
	only := flag.String("run", "", "only the entries whose name contains this")
	flag.Parse()
	if *kafkaAddr == "" {
		fmt.Fprintln(os.Stderr, "rawdiff: no Kafka address: pass --kafka or set GREGOR_KAFKA_BOOTSTRAP")
		os.Exit(2)
	}
	os.Exit(run(*kafkaAddr, *only, *verbose))
}

func run(kafkaAddr, only string, verbose bool) int {
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Kafka 4.2.2, the reference, computes a KIP-848 target assignment on
	// the heartbeat that needs it: no assignment interval, no offloaded
	// assignor (Gregor's defaults are Kafka 4.4's).
	noInterval, noOffload := int64(0), false
	g, err := broker.Start(ctx, broker.Config{NumPartitions: 1, Logger: logger,
		GroupConsumerAssignmentIntervalMs: &noInterval, GroupConsumerAssignorOffloadEnable: &noOffload})
	if err != nil {
		fmt.Fprintln(os.Stderr, "rawdiff: starting gregor:", err)
		return 2
	}
	defer g.Close()

	sides := [2]*conn{{name: "kafka", addr: kafkaAddr}, {name: "gregor", addr: g.Addr()}}
	defer sides[0].close()
	defer sides[1].close()

	xdiffs := map[string][]expected{}
	for _, x := range expectedDiffs {
		xdiffs[x.entry] = append(xdiffs[x.entry], x)
	}
	prefix := fmt.Sprintf("rd%d-", time.Now().Unix()%100000)
	passed, failed := 0, 0
	for _, e := range append(append(append(append(append(append(catalogue, consumerGroupEntries...), adminEntries...), txnOffsetEntries...), txnEntries...), throttleEntries...), hostileEntries...) {
		if only != "" && !strings.Contains(e.name, only) {
			continue
		}
		topic := prefix + sanitize(e.name)
		var trees [2]any
		var errs []string
		for i, c := range sides {
			t, err := runEntry(c, e, topic)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			trees[i] = t
		}
		if len(errs) > 0 {
			failed++
			fmt.Printf("ERROR %s: %s\n", e.name, strings.Join(errs, "; "))
			continue
		}
		if e.post != nil {
			e.post(trees[0], topic)
			e.post(trees[1], topic)
		}
		diffs := messageDiffs(trees[0], trees[1])
		masks := splitPaths(e.mask)
		k := normalize(trees[0], nil, masks)
		gr := normalize(trees[1], nil, masks)
		var notes []string
		diff(k, gr, nil, &diffs, &notes)
		var unexpected, known []string
		for _, d := range diffs {
			reason := ""
			for _, x := range append(xdiffs[e.name], xdiffs["*"]...) {
				if matches(strings.Split(d.path, "."), strings.Split(x.path, ".")) {
					reason = x.reason
					break
				}
			}
			if reason == "" {
				unexpected = append(unexpected, d.String())
			} else {
				known = append(known, d.String()+" ("+reason+")")
			}
		}
		switch {
		case len(unexpected) > 0:
			failed++
			fmt.Printf("DIFF  %s\n", e.name)
			for _, u := range unexpected {
				fmt.Printf("        %s\n", u)
			}
			for _, u := range known {
				fmt.Printf("        expected: %s\n", u)
			}
		case len(known) > 0:
			passed++
			fmt.Printf("XDIFF %s\n", e.name)
			for _, u := range known {
				fmt.Printf("        %s\n", u)
			}
		default:
			passed++
			fmt.Printf("PASS  %s\n", e.name)
			if len(xdiffs[e.name]) > 0 {
				fmt.Printf("        note: the expected difference no longer occurs: %s\n", xdiffs[e.name][0].reason)
			}
		}
		if verbose {
			for _, n := range notes {
				fmt.Printf("        note: %s\n", n)
			}
		}
	}
	fmt.Printf("rawdiff: %d entries in %.1fs\n", passed+failed, time.Since(start).Seconds())
	fmt.Printf("rawdiff: %d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}

// runEntry runs e's setup and request on one broker and returns the decoded
// response as a generic tree; a closed connection is the tree
// {"Outcome": "connection closed"}.
func runEntry(c *conn, e entry, topic string) (any, error) {
	if e.setup != nil {
		if err := e.setup(c, topic); err != nil {
			return nil, fmt.Errorf("%s setup: %w", c.name, err)
		}
	}
	var resp any
	var err error
	if e.raw != nil {
		resp, err = e.raw(c, topic)
	} else {
		resp, err = c.roundTrip(e.req(topic))
	}
	if errors.Is(err, errClosed) {
		return map[string]any{"Outcome": "connection closed"}, nil
	}
	if err != nil {
		return nil, err
	}
	return toTree(resp)
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}
