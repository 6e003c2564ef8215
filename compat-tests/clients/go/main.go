// Command compat-go runs one compatibility scenario (compat-tests/scenarios.md)
// with one Go Kafka client:
//
//	compat-go CLIENT SCENARIO --bootstrap HOST:PORT --topic T --data-dir DIR
//
// It prints one JSON object {"ok", "observed", "error", "info"} as its last
// stdout line and exits 0 (pass), 1 (fail), 2 (usage) or 3 (not applicable,
// including a scenario it does not know).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// From run.py (README, "The adapter contract"): the topology and the replication factor every topic
// is created with.
var (
	topology          = os.Getenv("COMPAT_TOPOLOGY")
	replicationFactor = int16(envInt("COMPAT_REPLICATION_FACTOR", 1))
	// bootstrapAddrs is --bootstrap, for scenarios that make a second adapter.
	bootstrapAddrs string
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

type clientInfo struct {
	mk      func(bootstrap string) (Adapter, error)
	library string
}

var clients = map[string]clientInfo{
	"franz-go":           {newFranz, "github.com/twmb/franz-go v1.22.3 (kadm v1.20.0)"},
	"sarama":             {newSarama, "github.com/IBM/sarama v1.61.1"},
	"kafka-go":           {newKafkaGo, "github.com/segmentio/kafka-go v0.4.51"},
	"confluent-kafka-go": {newConfluent, "github.com/confluentinc/confluent-kafka-go/v2 v2.11.1 (bundled librdkafka)"},
}

type result struct {
	OK       bool           `json:"ok"`
	Observed Observed       `json:"observed"`
	Error    string         `json:"error"`
	Info     map[string]any `json:"info,omitempty"`
}

var info = map[string]any{}

func emit(r result, code int) {
	if r.Observed == nil {
		r.Observed = Observed{}
	}
	r.Info = info
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	os.Exit(code)
}

func usage() {
	var cs, ss []string
	for c := range clients {
		cs = append(cs, c)
	}
	for s := range scenarios() {
		ss = append(ss, s)
	}
	sort.Strings(cs)
	sort.Strings(ss)
	fmt.Fprintf(os.Stderr, "usage: compat-go CLIENT SCENARIO --bootstrap HOST:PORT --topic T [--data-dir DIR]\nclients: %s\nscenarios: %s\n",
		strings.Join(cs, " "), strings.Join(ss, " "))
}

func main() {
	if len(os.Args) < 3 {
		usage()
		emit(result{Error: "usage: compat-go CLIENT SCENARIO --bootstrap HOST:PORT --topic T --data-dir DIR"}, 2)
	}
	client, scenario := os.Args[1], os.Args[2]
	fs := flag.NewFlagSet("compat-go", flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "", "HOST:PORT")
	topic := fs.String("topic", "", "unique topic for this run")
	_ = fs.String("data-dir", "", "the broker's data directory (unused)")
	if err := fs.Parse(os.Args[3:]); err != nil || *bootstrap == "" || *topic == "" {
		usage()
		emit(result{Error: "missing or bad arguments"}, 2)
	}
	ci, ok := clients[client]
	if !ok {
		usage()
		emit(result{Error: "unknown client " + client}, 2)
	}
	info["client"] = client
	info["library"] = ci.library
	sc, ok := scenarios()[scenario]
	if !ok {
		emit(result{Error: (&NotApplicable{Reason: "scenario '" + scenario + "' is not implemented by the " + client + " adapter"}).Error()}, 3)
	}

	limit := 60 * time.Second
	if s, err := strconv.Atoi(os.Getenv("COMPAT_TIMEOUT")); err == nil && s > 10 {
		limit = time.Duration(s) * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit-5*time.Second)
	defer cancel()
	o := &Outcome{Observed: Observed{}}
	// Backstop: run.py kills an adapter after its time limit; report what was seen before that.
	go func() {
		time.Sleep(limit - 3*time.Second)
		emit(result{Observed: o.Snapshot(), Error: fmt.Sprintf("scenario timed out (%v)", limit-3*time.Second)}, 1)
	}()

	bootstrapAddrs = *bootstrap
	var err error
	if sec, err = loadSecurity(); err != nil {
		emit(result{Error: "security settings: " + err.Error()}, 1)
	}
	info["security_protocol"] = sec.Protocol
	a, err := ci.mk(*bootstrap)
	if err != nil {
		var nap *NotApplicable
		if errors.As(err, &nap) { // the client cannot connect the way COMPAT_SECURITY_PROTOCOL asks
			emit(result{Error: nap.Error()}, 3)
		}
		emit(result{Error: "client setup: " + err.Error()}, 1)
	}
	if n, ok := a.(interface{ NotApplicable(string) string }); ok {
		if reason := n.NotApplicable(scenario); reason != "" {
			a.Close()
			emit(result{Error: (&NotApplicable{Reason: reason}).Error()}, 3)
		}
	}
	start := time.Now()
	err = runProtected(func() error { return sc(ctx, a, *topic, o) })
	info["seconds"] = float64(time.Since(start).Milliseconds()) / 1000
	a.Close()
	var nap *NotApplicable
	switch {
	case errors.As(err, &nap):
		emit(result{Observed: o.Observed, Error: nap.Error()}, 3)
	case err != nil:
		msg := err.Error()
		if len(o.Failures) > 0 {
			msg += "; " + strings.Join(o.Failures, "; ")
		}
		emit(result{Observed: o.Observed, Error: msg}, 1)
	case len(o.Failures) > 0:
		emit(result{Observed: o.Observed, Error: strings.Join(o.Failures, "; ")}, 1)
	}
	emit(result{OK: true, Observed: o.Observed}, 0)
}

// runProtected turns a panic in the scenario goroutine into an error, so that
// the result line is still printed.
func runProtected(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}
