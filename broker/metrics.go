package broker

// The broker's Prometheus metrics. docs/operations.md lists every series.
//
// Each broker has its own registry, so several brokers in one process (as
// in tests) never share a series. Counters on the request path are resolved
// ahead of time: one set per API key when the broker starts, one per topic
// when the topic is created or loaded, so counting a produce or a fetch is
// an atomic add and never a label lookup. Partition offsets and sizes and
// the groups' lag are read at scrape time by collectors (metrics_collect.go)
// instead of being updated on every append.

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unknownAPI is the label of requests for an API key the broker does not
// serve (they close the connection).
const unknownAPI = "unknown"

// brokerMetrics holds the broker's registry and its pre-resolved series.
// It is safe for concurrent use.
type brokerMetrics struct {
	b        *Broker
	registry *prometheus.Registry

	apis    []*apiMetrics // by API key; nil for keys without a handler
	unknown *apiMetrics

	connectionsOpen     prometheus.Gauge
	connectionsAccepted prometheus.Counter
	// Connections closed by the limits of conn_limits.go: over
	// max.connections.per.ip, and idle past connections.max.idle.ms.
	connectionsRejectedPerIP, idleConnectionsClosed prometheus.Counter
	// acceptFailures counts failed accepts (out of descriptors, say).
	acceptFailures prometheus.Counter
	// SASL authentications, as Kafka's successful-authentication-total,
	// failed-authentication-total and expired-connections-killed-count.
	successfulAuthentications, failedAuthentications, expiredSessions prometheus.Counter
	// failedTLSHandshakes counts the TLS handshakes of an SSL or SASL_SSL
	// listener that failed or timed out (Kafka counts them in
	// failed-authentication-total).
	failedTLSHandshakes prometheus.Counter
	connectionsClosed   prometheus.Counter
	fsyncSeconds        prometheus.Histogram

	topicBytesIn   *prometheus.CounterVec
	topicBytesOut  *prometheus.CounterVec
	topicRecordsIn *prometheus.CounterVec

	requestErrors *prometheus.CounterVec

	fetchFromFollower fetchFromFollowerMetrics // fetch_follower.go
}

// apiMetrics are one API key's series.
type apiMetrics struct {
	name     string
	requests prometheus.Counter
	failed   prometheus.Counter // requests that closed the connection
	latency  prometheus.Observer

	errorsVec *prometheus.CounterVec
	mu        sync.RWMutex
	errors    map[int16]prometheus.Counter // by error code, filled on first use
}

// topicMetrics are one topic's counters, kept on the topic.
type topicMetrics struct {
	bytesIn, recordsIn, bytesOut prometheus.Counter
}

// requestLatencyBuckets run from 100µs to about 6.5 s, doubling, which covers
// a metadata request on an idle broker and a long-polling fetch.
var requestLatencyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 17)

// fsyncBuckets run from 10µs to about 5 s, doubling.
var fsyncBuckets = prometheus.ExponentialBuckets(0.00001, 2, 20)

func newBrokerMetrics(b *Broker) *brokerMetrics {
	reg := prometheus.NewRegistry()
	m := &brokerMetrics{b: b, registry: reg}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_requests_total",
		Help: "Requests received, by API (the Kafka API key's name).",
	}, []string{"api"})
	failed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_requests_failed_total",
		Help: "Requests the broker answered by closing the connection (unknown API or version, undecodable body, handler failure, client gone), by API.",
	}, []string{"api"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gregor_request_duration_seconds",
		Help:    "Time from a request's frame being read to its response being encoded for the connection, by API.",
		Buckets: requestLatencyBuckets,
	}, []string{"api"})
	m.requestErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_request_errors_total",
		Help: "Error codes in responses, by API and Kafka error name; a per-partition error counts once per partition.",
	}, []string{"api", "error"})
	newAPI := func(name string) *apiMetrics {
		return &apiMetrics{
			name:      name,
			requests:  requests.WithLabelValues(name),
			failed:    failed.WithLabelValues(name),
			latency:   latency.WithLabelValues(name),
			errorsVec: m.requestErrors,
			errors:    map[int16]prometheus.Counter{},
		}
	}
	for _, h := range supportedAPIs() {
		if int(h.key) >= len(m.apis) {
			m.apis = append(m.apis, make([]*apiMetrics, int(h.key)+1-len(m.apis))...)
		}
		m.apis[h.key] = newAPI(kmsg.NameForKey(h.key))
	}
	m.unknown = newAPI(unknownAPI)

	m.connectionsOpen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gregor_connections",
		Help: "Client connections open.",
	})
	m.connectionsAccepted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gregor_connections_accepted_total",
		Help: "Client connections accepted.",
	})
	m.connectionsRejectedPerIP = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gregor_connections_rejected_per_ip_total",
		Help: "Client connections closed on accept because their address had max.connections.per.ip (or its override) open.",
	})
	m.idleConnectionsClosed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gregor_connections_idle_closed_total",
		Help: "Client connections closed after connections.max.idle.ms without traffic or a request in flight.",
	})
	m.acceptFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gregor_accept_failures_total",
		Help: "Failed accepts of client connections (out of file descriptors, say), each followed by a backoff.",
	})
	m.connectionsClosed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gregor_connections_closed_total",
		Help: "Client connections closed, by either side.",
	})
	m.successfulAuthentications = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gregor_sasl_authentications_total",
		Help: "SASL authentications and re-authentications that succeeded.",
	})
	m.failedAuthentications = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gregor_sasl_failed_authentications_total",
		Help: "SASL authentications and re-authentications that failed (the connection was closed after the failed authentication delay).",
	})
	m.failedTLSHandshakes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gregor_tls_failed_handshakes_total",
		Help: "TLS handshakes of an SSL or SASL_SSL listener that failed or did not finish within 10 s (the connection was closed).",
	})
	m.expiredSessions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gregor_sasl_expired_sessions_closed_total",
		Help: "Connections closed because their SASL session expired without re-authentication.",
	})
	m.fsyncSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gregor_log_fsync_duration_seconds",
		Help:    "Duration of each fsync of a partition segment's data file.",
		Buckets: fsyncBuckets,
	})
	m.topicBytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_topic_bytes_in_total",
		Help: "Record batch bytes appended by producers, by topic.",
	}, []string{"topic"})
	m.topicRecordsIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_topic_records_in_total",
		Help: "Records appended by producers, by topic.",
	}, []string{"topic"})
	m.topicBytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gregor_topic_bytes_out_total",
		Help: "Record batch bytes returned to fetches, by topic.",
	}, []string{"topic"})

	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		requests, failed, latency, m.requestErrors,
		m.connectionsOpen, m.connectionsAccepted, m.connectionsClosed, m.fsyncSeconds,
		m.connectionsRejectedPerIP, m.idleConnectionsClosed, m.acceptFailures,
		m.successfulAuthentications, m.failedAuthentications, m.expiredSessions, m.failedTLSHandshakes,
		m.topicBytesIn, m.topicRecordsIn, m.topicBytesOut,
		partitionCollector{b}, groupCollector{b},
	)
	m.fetchFromFollower = newFetchFromFollowerMetrics(reg)
	return m
}

// api returns the series of an API key.
func (m *brokerMetrics) api(key int16) *apiMetrics {
	if key >= 0 && int(key) < len(m.apis) && m.apis[key] != nil {
		return m.apis[key]
	}
	return m.unknown
}

// topic returns the counters of a topic, creating its series; nil without
// metrics (a catalogue used alone, as in tests).
func (m *brokerMetrics) topic(name string) *topicMetrics {
	if m == nil {
		return nil
	}
	return &topicMetrics{
		bytesIn:   m.topicBytesIn.WithLabelValues(name),
		recordsIn: m.topicRecordsIn.WithLabelValues(name),
		bytesOut:  m.topicBytesOut.WithLabelValues(name),
	}
}

// forgetTopic drops a deleted topic's series, so that deleted topics do not
// accumulate. A topic created again under the name starts from zero.
func (m *brokerMetrics) forgetTopic(name string) {
	if m == nil {
		return
	}
	m.topicBytesIn.DeleteLabelValues(name)
	m.topicRecordsIn.DeleteLabelValues(name)
	m.topicBytesOut.DeleteLabelValues(name)
}

// observeFsync is storage.Config.SyncObserver.
func (m *brokerMetrics) observeFsync(d time.Duration) { m.fsyncSeconds.Observe(d.Seconds()) }

// produced counts one appended batch.
func (tm *topicMetrics) produced(bytes, records int) {
	if tm == nil {
		return
	}
	tm.bytesIn.Add(float64(bytes))
	tm.recordsIn.Add(float64(records))
}

// fetched counts bytes returned to a fetch.
func (tm *topicMetrics) fetched(bytes int) {
	if tm == nil {
		return
	}
	tm.bytesOut.Add(float64(bytes))
}

// observe counts one handled request: its latency, whether it closed the
// connection, and the error codes its response carries.
func (m *brokerMetrics) observe(r *request, resp kmsg.Response, failed bool) {
	a := m.api(r.hdr.APIKey)
	a.requests.Inc()
	a.latency.Observe(time.Since(r.received).Seconds())
	if failed {
		a.failed.Inc()
		return
	}
	if resp == nil {
		return
	}
	if f, ok := resp.(*fetchReply); ok {
		m.fetched(f)
		resp = f.FetchResponse
	}
	a.countErrors(resp)
}

// fetched counts the record bytes of a fetch response by topic: the file
// slices it will send (fetch_send.go), one per partition in order. The
// topic is looked up only when the response carries records for it.
func (m *brokerMetrics) fetched(reply *fetchReply) {
	resp, k := reply.FetchResponse, 0
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		var n int64
		for range rt.Partitions {
			if k < len(reply.records) {
				n += reply.records[k].Len()
			}
			k++
		}
		if n == 0 {
			continue
		}
		if t := m.b.lookupTopicRef(resp.Version >= 13, rt.Topic, rt.TopicID); t != nil {
			t.metrics.fetched(int(n))
		}
	}
}

// countError counts one occurrence of a non-zero error code.
func (a *apiMetrics) countError(code int16) {
	if code == 0 {
		return
	}
	a.mu.RLock()
	c := a.errors[code]
	a.mu.RUnlock()
	if c == nil {
		name := errorName(code)
		a.mu.Lock()
		if c = a.errors[code]; c == nil {
			c = a.errorsVec.WithLabelValues(a.name, name)
			a.errors[code] = c
		}
		a.mu.Unlock()
	}
	c.Inc()
}

// errorName is the name of an error code in Kafka's Errors enum, which
// Kafka's own ErrorsPerSec metric uses; a code unknown to kerr is given by
// number. kerr names code 6 by its pre-KIP-392 name.
func errorName(code int16) string {
	if code == kerr.NotLeaderForPartition.Code {
		return "NOT_LEADER_OR_FOLLOWER"
	}
	if e := kerr.TypedErrorForCode(code); e.Code == code {
		return e.Message
	}
	return strconv.Itoa(int(code))
}

// countErrors counts the error codes of the responses of the data-path,
// group and topic APIs, where operators look for failures: the top-level
// code and each topic's, partition's or member's. Other APIs' error codes
// are not counted.
func (a *apiMetrics) countErrors(resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for _, p := range r.Topics[i].Partitions {
				a.countError(p.ErrorCode)
			}
		}
	case *kmsg.FetchResponse:
		a.countError(r.ErrorCode)
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				a.countError(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.ListOffsetsResponse:
		for i := range r.Topics {
			for _, p := range r.Topics[i].Partitions {
				a.countError(p.ErrorCode)
			}
		}
	case *kmsg.MetadataResponse:
		for i := range r.Topics {
			a.countError(r.Topics[i].ErrorCode)
			for _, p := range r.Topics[i].Partitions {
				a.countError(p.ErrorCode)
			}
		}
	case *kmsg.OffsetCommitResponse:
		for i := range r.Topics {
			for _, p := range r.Topics[i].Partitions {
				a.countError(p.ErrorCode)
			}
		}
	case *kmsg.TxnOffsetCommitResponse:
		for i := range r.Topics {
			for _, p := range r.Topics[i].Partitions {
				a.countError(p.ErrorCode)
			}
		}
	case *kmsg.OffsetFetchResponse:
		a.countError(r.ErrorCode)
		for i := range r.Topics {
			for _, p := range r.Topics[i].Partitions {
				a.countError(p.ErrorCode)
			}
		}
		for _, g := range r.Groups {
			a.countError(g.ErrorCode)
			for i := range g.Topics {
				for _, p := range g.Topics[i].Partitions {
					a.countError(p.ErrorCode)
				}
			}
		}
	case *kmsg.FindCoordinatorResponse:
		a.countError(r.ErrorCode)
		for _, c := range r.Coordinators {
			a.countError(c.ErrorCode)
		}
	case *kmsg.JoinGroupResponse:
		a.countError(r.ErrorCode)
	case *kmsg.HeartbeatResponse:
		a.countError(r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		a.countError(r.ErrorCode)
		for _, mb := range r.Members {
			a.countError(mb.ErrorCode)
		}
	case *kmsg.SyncGroupResponse:
		a.countError(r.ErrorCode)
	case *kmsg.InitProducerIDResponse:
		a.countError(r.ErrorCode)
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			a.countError(t.ErrorCode)
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			a.countError(t.ErrorCode)
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			a.countError(t.ErrorCode)
		}
	case *kmsg.DeleteRecordsResponse:
		for i := range r.Topics {
			for _, p := range r.Topics[i].Partitions {
				a.countError(p.ErrorCode)
			}
		}
	case *kmsg.DeleteGroupsResponse:
		for _, g := range r.Groups {
			a.countError(g.ErrorCode)
		}
	case *kmsg.OffsetDeleteResponse:
		a.countError(r.ErrorCode)
		for i := range r.Topics {
			for _, p := range r.Topics[i].Partitions {
				a.countError(p.ErrorCode)
			}
		}
	}
}
