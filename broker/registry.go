package broker

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
)

// apiHandler is one API key's handler and the versions it serves.
type apiHandler struct {
	key      int16
	min, max int16
	serve    func(b *Broker, r *request, req kmsg.Request) (kmsg.Response, error)
	// scope says where the key is served and advertised.
	scope apiScope
}

// apiScope says on which brokers a key is served, and whether ApiVersions
// advertises it.
type apiScope int8

const (
	everywhere  apiScope = iota // served and advertised by every broker
	clusterOnly                 // served and advertised in cluster mode only
	// brokerToController keys (BrokerRegistration, BrokerHeartbeat) are
	// served in cluster mode to other brokers and never advertised to
	// clients, as Kafka keeps them off its broker listeners.
	brokerToController
	// singleNodeOnly keys are served and advertised by a single node
	// only: DescribeUserScramCredentials and AlterUserScramCredentials,
	// whose credentials a cluster would keep as metadata records.
	singleNodeOnly
	// shareGroupKeys are the keys of share groups (KIP-932), served and
	// advertised only while share groups are switched on
	// (Broker.shareGroupsServed): until every key a share consumer needs
	// works, a client must see them as unsupported.
	shareGroupKeys
)

// served reports whether b serves h's key.
func (h *apiHandler) served(b *Broker) bool {
	switch h.scope {
	case everywhere:
		return true
	case singleNodeOnly:
		return !b.isCluster()
	case shareGroupKeys:
		return b.shareGroupsServed()
	}
	return b.isCluster()
}

// advertised reports whether b lists h's key in ApiVersions.
func (h *apiHandler) advertised(b *Broker) bool { return h.served(b) && h.scope != brokerToController }

// registerScoped is register for a key served in one mode only (scope).
func registerScoped[Req kmsg.Request](scope apiScope, key, min, max int16, fn func(*Broker, *request, Req) (kmsg.Response, error)) {
	register(key, min, max, fn)
	handlers[key].scope = scope
}

// handlers is the registry ApiVersions is built from. Handler files fill it
// from their init functions; it is read-only afterwards.
var handlers = map[int16]*apiHandler{}

// register adds the handler for an API key. fn receives the decoded request
// with its version set and returns the response (nil for none, as for
// Produce with acks=0), or an error to close the connection.
func register[Req kmsg.Request](key, min, max int16, fn func(*Broker, *request, Req) (kmsg.Response, error)) {
	if _, dup := handlers[key]; dup {
		panic(fmt.Sprintf("broker: api key %d registered twice", key))
	}
	if probe := kmsg.RequestForKey(key); probe == nil || probe.MaxVersion() < max {
		panic(fmt.Sprintf("broker: kmsg cannot encode api key %d up to v%d", key, max))
	}
	handlers[key] = &apiHandler{key: key, min: min, max: max, serve: func(b *Broker, r *request, req kmsg.Request) (kmsg.Response, error) {
		return fn(b, r, req.(Req))
	}}
}

// supportedAPIs lists the registry in key order.
func supportedAPIs() []*apiHandler {
	out := make([]*apiHandler, 0, len(handlers))
	for _, h := range handlers {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// dispatch decodes a request and runs its handler. Like Kafka, it closes the
// connection (returns an error) for an unknown key, an unsupported version of
// any API but ApiVersions, and a body that does not decode.
func dispatch(b *Broker, r *request) (kmsg.Response, error) {
	key, version := r.hdr.APIKey, r.hdr.APIVersion
	h := handlers[key]
	if key == protocol.APIVersionsKey && (version < h.min || version > h.max) {
		return unsupportedAPIVersions(), nil
	}
	if h == nil || !h.served(b) {
		return nil, fmt.Errorf("unsupported api key %d", key)
	}
	if version < h.min || version > h.max {
		return nil, fmt.Errorf("unsupported version %d of api key %d (serving v%d-v%d)", version, key, h.min, h.max)
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if err := req.ReadFrom(r.body); err != nil {
		return nil, fmt.Errorf("malformed request body: %w", err)
	}
	if nullInNonNullable(req, r.body) {
		return nil, fmt.Errorf("malformed request body: a non-nullable array of %s v%d was serialized with a negative count", kmsg.NameForKey(key), version)
	}
	return h.serve(b, r, req)
}

// unsupportedAPIVersions is the KIP-511 answer to an ApiVersions request of a
// version this broker does not know: a v0 response, which every client can
// read, carrying UNSUPPORTED_VERSION and, as Kafka does, the supported range
// of ApiVersions alone, so the client retries at a version both know.
func unsupportedAPIVersions() kmsg.Response {
	h := handlers[protocol.APIVersionsKey]
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = h.key, h.min, h.max
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{k}
	return resp
}

// newResponse returns the empty response for req at req's version.
func newResponse[Resp kmsg.Response](req kmsg.Request) Resp {
	resp := req.ResponseKind().(Resp)
	resp.SetVersion(req.GetVersion())
	return resp
}
