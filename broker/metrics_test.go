package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
)

// scrape is one parsed /metrics answer.
type scrape map[string]*dto.MetricFamily

// scrapeMetrics fetches and parses /metrics from addr.
func scrapeMetrics(t testing.TB, addr string) scrape {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("/metrics: %s: %s", resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// value returns the value of the series of family name whose labels include
// labels ("k", "v", ...), and whether there is one. Histograms give their
// sample count.
func (s scrape) value(name string, labels ...string) (float64, bool) {
	f := s[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// must returns the series' value or fails the test.
func (s scrape) must(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.value(name, labels...)
	if !ok {
		t.Fatalf("no series %s%v in /metrics", name, labels)
	}
	return v
}

func httpStatus(t testing.TB, url string) int {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsAfterProduceFetchAndCommit drives a broker with franz-go and
// checks the scraped series against what was done: requests by API, bytes
// and records in and out per topic, partition offsets, group lag.
func TestMetricsAfterProduceFetchAndCommit(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{HTTPListen: "127.0.0.1:0", DataDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "metered"
	// segment.bytes at its minimum, 1 MiB, so that partition 0 rolls and
	// its first segment is fsynced while the broker runs.
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"segment.bytes": kadm.StringPtr("1048576")}, topic); err != nil {
		t.Fatal(err)
	}

	perPartition := [2]int{1500, 40}
	var recs []*kgo.Record
	for p, n := range perPartition {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: fmt.Appendf(nil, "k%d", i), Value: make([]byte, 1000)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for got := 0; got < len(recs); {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	const group = "lagging"
	committed := int64(600)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: committed, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: topic, Partition: 1, At: int64(perPartition[1]), LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, group, offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}

	// A fetch of a topic that does not exist answers
	// UNKNOWN_TOPIC_OR_PARTITION inside the response.
	raw := dialRaw(t, b.Addr())
	if resp := raw.do(fetchRequest(12, "no-such-topic", 0, 0, 0)).(*kmsg.FetchResponse); resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("fetch of a missing topic: error %d", resp.Topics[0].Partitions[0].ErrorCode)
	}
	// An API key the broker does not serve closes the connection.
	bad := dialRaw(t, b.Addr())
	frame := binary.BigEndian.AppendUint32(nil, 10)
	frame = binary.BigEndian.AppendUint16(frame, 999) // api key
	frame = binary.BigEndian.AppendUint16(frame, 0)   // version
	frame = binary.BigEndian.AppendUint32(frame, 1)   // correlation id
	frame = binary.BigEndian.AppendUint16(frame, 0xffff)
	if _, err := bad.nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	bad.expectClosed()

	// A closed connection is counted once its goroutine has finished.
	var s scrape
	waitFor(t, "the closed connection to be counted", func() bool {
		s = scrapeMetrics(t, b.HTTPAddr())
		v, _ := s.value("gregor_connections_closed_total")
		return v >= 1
	})
	if n := s.must(t, "gregor_requests_failed_total", "api", "unknown"); n != 1 {
		t.Errorf("failed requests of an unknown API = %v, want 1", n)
	}

	for _, api := range []string{"ApiVersions", "Metadata", "CreateTopics", "Produce", "Fetch", "OffsetCommit"} {
		n := s.must(t, "gregor_requests_total", "api", api)
		if n < 1 {
			t.Errorf("gregor_requests_total{api=%q} = %v", api, n)
		}
		if h := s.must(t, "gregor_request_duration_seconds", "api", api); h != n {
			t.Errorf("%s: %v latency samples for %v requests", api, h, n)
		}
	}
	if n := s.must(t, "gregor_requests_total", "api", "OffsetCommit"); n != 1 {
		t.Errorf("OffsetCommit requests = %v, want 1", n)
	}
	if n := s.must(t, "gregor_requests_total", "api", "unknown"); n != 1 {
		t.Errorf("requests of an unknown API = %v, want 1", n)
	}
	if n := s.must(t, "gregor_request_errors_total", "api", "Fetch", "error", "UNKNOWN_TOPIC_OR_PARTITION"); n != 1 {
		t.Errorf("Fetch UNKNOWN_TOPIC_OR_PARTITION = %v, want 1", n)
	}

	bytesIn := s.must(t, "gregor_topic_bytes_in_total", "topic", topic)
	if bytesIn < float64(len(recs)*1000) {
		t.Errorf("bytes in %v for %d records of 1000 bytes", bytesIn, len(recs))
	}
	if n := s.must(t, "gregor_topic_records_in_total", "topic", topic); n != float64(len(recs)) {
		t.Errorf("records in %v, want %d", n, len(recs))
	}
	// Every batch was fetched at least once.
	if out := s.must(t, "gregor_topic_bytes_out_total", "topic", topic); out < bytesIn {
		t.Errorf("bytes out %v < bytes in %v after consuming everything", out, bytesIn)
	}

	var totalSize float64
	for p, n := range perPartition {
		idx := fmt.Sprint(p)
		if v := s.must(t, "gregor_partition_log_end_offset", "topic", topic, "partition", idx); v != float64(n) {
			t.Errorf("partition %d end offset %v, want %d", p, v, n)
		}
		if v := s.must(t, "gregor_partition_high_watermark", "topic", topic, "partition", idx); v != float64(n) {
			t.Errorf("partition %d high watermark %v, want %d", p, v, n)
		}
		if v := s.must(t, "gregor_partition_log_start_offset", "topic", topic, "partition", idx); v != 0 {
			t.Errorf("partition %d log start %v, want 0", p, v)
		}
		totalSize += s.must(t, "gregor_partition_size_bytes", "topic", topic, "partition", idx)
	}
	if totalSize != bytesIn {
		t.Errorf("partition sizes add up to %v, bytes in %v", totalSize, bytesIn)
	}
	if v := s.must(t, "gregor_partition_segments", "topic", topic, "partition", "0"); v < 2 {
		t.Errorf("partition 0 has %v segments after 1.5 MB at segment.bytes=1 MiB", v)
	}
	if v := s.must(t, "gregor_partition_segments", "topic", topic, "partition", "1"); v != 1 {
		t.Errorf("partition 1 has %v segments, want 1", v)
	}
	if v := s.must(t, "gregor_log_fsync_duration_seconds"); v < 1 {
		t.Errorf("%v fsyncs observed after a segment roll", v)
	}

	if v := s.must(t, "gregor_group_lag", "group", group, "topic", topic, "partition", "0"); v != float64(int64(perPartition[0])-committed) {
		t.Errorf("lag on partition 0 = %v, want %d", v, int64(perPartition[0])-committed)
	}
	if v := s.must(t, "gregor_group_lag", "group", group, "topic", topic, "partition", "1"); v != 0 {
		t.Errorf("lag on partition 1 = %v, want 0", v)
	}
	if v := s.must(t, "gregor_group_committed_offset", "group", group, "topic", topic, "partition", "0"); v != float64(committed) {
		t.Errorf("committed offset %v, want %d", v, committed)
	}
	if v := s.must(t, "gregor_group_members", "group", group); v != 0 {
		t.Errorf("a group that only commits has %v members", v)
	}
	if v := s.must(t, "gregor_group_state", "group", group, "state", "Empty"); v != 1 {
		t.Errorf("group state Empty = %v", v)
	}

	if v := s.must(t, "gregor_connections_accepted_total"); v < 4 {
		t.Errorf("%v connections accepted; two clients and two raw connections connected", v)
	}
	if open := s.must(t, "gregor_connections"); open < 3 {
		t.Errorf("%v connections open; two clients and a raw connection are", open)
	}
	// The Go and process collectors are registered.
	for _, name := range []string{"go_goroutines", "process_start_time_seconds"} {
		if s[name] == nil {
			t.Errorf("%s missing", name)
		}
	}
}

// TestMetricsOfDeletedTopicsAreDropped checks that per-topic series do not
// outlive their topic.
func TestMetricsOfDeletedTopicsAreDropped(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{HTTPListen: "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("doomed"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "doomed"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, ok := scrapeMetrics(t, b.HTTPAddr()).value("gregor_topic_records_in_total", "topic", "doomed"); !ok {
		t.Fatal("no series for the topic")
	}
	if _, err := adm.DeleteTopic(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	s := scrapeMetrics(t, b.HTTPAddr())
	for _, name := range []string{"gregor_topic_records_in_total", "gregor_topic_bytes_in_total", "gregor_partition_log_end_offset"} {
		if _, ok := s.value(name, "topic", "doomed"); ok {
			t.Errorf("%s still reports the deleted topic", name)
		}
	}
}

// TestEachBrokerHasItsOwnRegistry checks that two brokers in one process
// count separately.
func TestEachBrokerHasItsOwnRegistry(t *testing.T) {
	t.Parallel()
	a := startBroker(t, Config{HTTPListen: "127.0.0.1:0"})
	b := startBroker(t, Config{HTTPListen: "127.0.0.1:0"})
	raw := dialRaw(t, a.Addr())
	raw.do(fetchRequest(12, "missing", 0, 0, 0))
	raw.do(fetchRequest(12, "missing", 0, 0, 0))
	if v := scrapeMetrics(t, a.HTTPAddr()).must(t, "gregor_requests_total", "api", "Fetch"); v != 2 {
		t.Errorf("broker a counted %v fetches, want 2", v)
	}
	if v, _ := scrapeMetrics(t, b.HTTPAddr()).value("gregor_requests_total", "api", "Fetch"); v != 0 {
		t.Errorf("broker b counted %v fetches, want 0", v)
	}
}

// TestHealthAndReadinessThroughTheBrokersLife: /healthz answers 200 while
// the process serves; /readyz 503 while the logs load, 200 once the broker
// accepts connections, 503 again as soon as Close begins. /metrics answers
// throughout.
func TestHealthAndReadinessThroughTheBrokersLife(t *testing.T) {
	t.Parallel()
	var loading, closing [3]int
	probe := func(b *Broker) [3]int {
		base := "http://" + b.HTTPAddr()
		return [3]int{httpStatus(t, base+"/healthz"), httpStatus(t, base+"/readyz"), httpStatus(t, base+"/metrics")}
	}
	cfg := Config{HTTPListen: "127.0.0.1:0"}
	cfg.testHooks.beforeLoad = func(b *Broker) { loading = probe(b) }
	cfg.testHooks.closing = func(b *Broker) { closing = probe(b) }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := b.HTTPAddr()
	if loading != [3]int{200, 503, 200} {
		t.Errorf("while loading: healthz, readyz, metrics = %v, want [200 503 200]", loading)
	}
	if got := probe(b); got != [3]int{200, 200, 200} {
		t.Errorf("running: healthz, readyz, metrics = %v, want [200 200 200]", got)
	}
	if got := httpStatus(t, "http://"+addr+"/nothing-here"); got != http.StatusNotFound {
		t.Errorf("unknown path: %d", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if closing != [3]int{200, 503, 200} {
		t.Errorf("while closing: healthz, readyz, metrics = %v, want [200 503 200]", closing)
	}
	if _, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/healthz"); err == nil {
		t.Error("the HTTP listener still answers after Close")
	}
}

func TestHTTPListenerIsOffByDefault(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	if addr := b.HTTPAddr(); addr != "" {
		t.Fatalf("HTTPAddr() = %q without HTTPListen", addr)
	}
}

func TestHTTPListenFailureFailsStart(t *testing.T) {
	t.Parallel()
	a := startBroker(t, Config{HTTPListen: "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := Start(ctx, Config{HTTPListen: a.HTTPAddr()})
	if err == nil {
		b.Close()
		t.Fatal("Start succeeded on a busy HTTP address")
	}
	if !strings.Contains(err.Error(), "http listen") {
		t.Fatalf("error %q does not name the HTTP listener", err)
	}
}

// A second broker whose default HTTP address is taken by the first starts
// on a free port instead (issue #24 item 7); an address asked for does not
// (TestHTTPListenFailureFailsStart).
func TestHTTPListenDefaultTakenUsesAFreePort(t *testing.T) {
	t.Parallel()
	a := startBroker(t, Config{HTTPListen: "127.0.0.1:0"})
	b := startBroker(t, Config{HTTPListen: a.HTTPAddr(), HTTPListenIsDefault: true})
	if b.HTTPAddr() == "" || b.HTTPAddr() == a.HTTPAddr() {
		t.Fatalf("second broker's HTTP address %q (first %q)", b.HTTPAddr(), a.HTTPAddr())
	}
	if !strings.HasPrefix(b.HTTPAddr(), "127.0.0.1:") {
		t.Fatalf("the free port is not on the default's host: %s", b.HTTPAddr())
	}
	resp, err := http.Get("http://" + b.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
}

// TestResponseErrorCodesAreCounted checks which codes of a response count,
// and under which labels.
func TestResponseErrorCodesAreCounted(t *testing.T) {
	t.Parallel()
	produce := kmsg.NewPtrProduceResponse()
	pt := kmsg.NewProduceResponseTopic()
	for _, code := range []int16{0, kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code, kerr.MessageTooLarge.Code} {
		p := kmsg.NewProduceResponseTopicPartition()
		p.ErrorCode = code
		pt.Partitions = append(pt.Partitions, p)
	}
	produce.Topics = append(produce.Topics, pt)

	fetch := kmsg.NewPtrFetchResponse()
	fetch.ErrorCode = kerr.FetchSessionIDNotFound.Code

	join := kmsg.NewPtrJoinGroupResponse()
	join.ErrorCode = kerr.MemberIDRequired.Code

	leave := kmsg.NewPtrLeaveGroupResponse()
	lm := kmsg.NewLeaveGroupResponseMember()
	lm.ErrorCode = kerr.UnknownMemberID.Code
	leave.Members = append(leave.Members, lm)

	offsetFetch := kmsg.NewPtrOffsetFetchResponse()
	g := kmsg.NewOffsetFetchResponseGroup()
	g.ErrorCode = kerr.GroupAuthorizationFailed.Code
	offsetFetch.Groups = append(offsetFetch.Groups, g)

	odd := kmsg.NewPtrHeartbeatResponse()
	odd.ErrorCode = 32000 // a code kerr does not know

	describe := kmsg.NewPtrDescribeGroupsResponse() // not inspected
	dg := kmsg.NewDescribeGroupsResponseGroup()
	dg.ErrorCode = kerr.GroupIDNotFound.Code
	describe.Groups = append(describe.Groups, dg)

	tests := []struct {
		name string
		key  int16
		resp kmsg.Response
		want map[string]float64 // error name -> count
	}{
		{"produce partitions", 0, produce, map[string]float64{"NOT_LEADER_OR_FOLLOWER": 2, "MESSAGE_TOO_LARGE": 1}},
		{"fetch top level", 1, fetch, map[string]float64{"FETCH_SESSION_ID_NOT_FOUND": 1}},
		{"join group", 11, join, map[string]float64{"MEMBER_ID_REQUIRED": 1}},
		{"leave group members", 13, leave, map[string]float64{"UNKNOWN_MEMBER_ID": 1}},
		{"offset fetch groups", 9, offsetFetch, map[string]float64{"GROUP_AUTHORIZATION_FAILED": 1}},
		{"unknown code by number", 12, odd, map[string]float64{"32000": 1}},
		{"uninspected api", 15, describe, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newBrokerMetrics(&Broker{})
			m.observe(&request{hdr: protocolHeader(tt.key), received: time.Now()}, tt.resp, false)
			families, err := m.registry.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, f := range families {
				if f.GetName() != "gregor_request_errors_total" {
					continue
				}
				for _, s := range f.Metric {
					labels := map[string]string{}
					for _, lp := range s.Label {
						labels[lp.GetName()] = lp.GetValue()
					}
					if labels["api"] != kmsg.NameForKey(tt.key) {
						t.Errorf("api label %q, want %q", labels["api"], kmsg.NameForKey(tt.key))
					}
					got[labels["error"]] = s.Counter.GetValue()
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("counted %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRequestMetricsDoNotAllocate: counting a produce or fetch request,
// its latency, its error codes and its fetched bytes allocates nothing once
// the series exist.
func TestRequestMetricsDoNotAllocate(t *testing.T) {
	// Not parallel: testing.AllocsPerRun counts every goroutine's allocations.
	b := startBroker(t, Config{})
	createTopic(t, dialRaw(t, b.Addr()), "counted", 1, nil)
	produce := kmsg.NewPtrProduceResponse()
	pt := kmsg.NewProduceResponseTopic()
	pt.Topic = "counted"
	pp := kmsg.NewProduceResponseTopicPartition()
	pp.ErrorCode = kerr.NotLeaderForPartition.Code
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	fetch := kmsg.NewPtrFetchResponse()
	fetch.SetVersion(12)
	ft := kmsg.NewFetchResponseTopic()
	ft.Topic = "counted"
	fp := kmsg.NewFetchResponseTopicPartition()
	fp.RecordBatches = make([]byte, 100)
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	pr := &request{hdr: protocolHeader(0), received: time.Now()}
	fr := &request{hdr: protocolHeader(1), received: time.Now()}
	tm := b.lookupTopic("counted").metrics
	b.metrics.observe(pr, produce, false) // creates the error's series
	allocs := testing.AllocsPerRun(1000, func() {
		b.metrics.observe(pr, produce, false)
		b.metrics.observe(fr, fetch, false)
		tm.produced(100, 3)
	})
	if allocs != 0 {
		t.Fatalf("counting a request allocates %.1f times", allocs)
	}
}

func protocolHeader(key int16) protocol.RequestHeader {
	return protocol.RequestHeader{APIKey: key}
}

// TestGroupMetricsFollowAMember: a franz-go member joins, consumes and
// commits: the group is Stable with one member and its lag drops to zero;
// once it leaves, the group is Empty with no members.
func TestGroupMetricsFollowAMember(t *testing.T) {
	t.Parallel()
	cfg := groupTestConfig("")
	cfg.HTTPListen = "127.0.0.1:0"
	b := startBroker(t, cfg)
	producer := roundRobinProducer(t, b.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(producer).CreateTopic(ctx, 3, 1, nil, "watched"); err != nil {
		t.Fatal(err)
	}
	produceN(t, producer, "watched", 90, "r")

	seen := newSeenSet()
	m := startFranzMember(t, b.Addr(), "watchers", "watched", kgo.RangeBalancer(), seen)
	lagZero := func(s scrape) bool {
		for p := range 3 {
			if v, ok := s.value("gregor_group_lag", "group", "watchers", "topic", "watched", "partition", fmt.Sprint(p)); !ok || v != 0 {
				return false
			}
		}
		return true
	}
	waitForGroup(t, "a Stable group with one member and no lag", func() bool {
		s := scrapeMetrics(t, b.HTTPAddr())
		members, _ := s.value("gregor_group_members", "group", "watchers")
		stable, _ := s.value("gregor_group_state", "group", "watchers", "state", "Stable")
		return members == 1 && stable == 1 && lagZero(s)
	})
	m.stop(t)
	waitForGroup(t, "an Empty group without members", func() bool {
		s := scrapeMetrics(t, b.HTTPAddr())
		members, _ := s.value("gregor_group_members", "group", "watchers")
		empty, _ := s.value("gregor_group_state", "group", "watchers", "state", "Empty")
		return members == 0 && empty == 1 && lagZero(s)
	})
	if seen.len() != 90 {
		t.Fatalf("the member processed %d records, want 90", seen.len())
	}
}

// TestScrapesDuringClose: scrapes running while the broker closes its logs
// and stops its coordinator neither race with it (under -race) nor keep it
// from finishing.
func TestScrapesDuringClose(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := Start(ctx, Config{HTTPListen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("busy"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "busy"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "busy", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, "g", offsets); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	url := "http://" + b.HTTPAddr() + "/metrics"
	stop := make(chan struct{})
	done := make(chan int)
	for range 2 {
		go func() {
			scrapes := 0
			hc := &http.Client{Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					done <- scrapes
					return
				default:
				}
				if resp, err := hc.Get(url); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					scrapes++
				}
			}
		}()
	}
	// Let the scrapers get going before closing.
	waitFor(t, "a scrape", func() bool { return httpStatus(t, url) == http.StatusOK })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-done
	<-done
}
