package broker

// ApiVersions (key 18), v0-v4.
//
// The answer is built from the handler registry alone, so the broker
// advertises exactly what it serves. A version this broker does not know is
// answered in the v0 layout with UNSUPPORTED_VERSION (KIP-511; see dispatch).
// v3+: the client software name and version must match Kafka's pattern, else
// INVALID_REQUEST. The response header is never flexible, even at v3+.
//
// No supported or finalized features are advertised: Gregor does not yet
// serve transactions V2 (transaction.version), and a client must not believe
// it does. KIP-848 groups are served (keys 68 and 69) but group.version is
// not advertised either: clients decide by the API keys (franz-go, the
// Java client), and Kafka's feature gates the broker side only.

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(18, 0, 4, handleAPIVersions) }

// softwareNamePattern is Kafka's rule for ClientSoftwareName and
// ClientSoftwareVersion (ApiVersionsRequest.isValid).
var softwareNamePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleAPIVersions(b *Broker, r *request, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ApiVersionsResponse](req)
	if req.Version >= 3 && (!softwareNamePattern.MatchString(req.ClientSoftwareName) ||
		!softwareNamePattern.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ApiKeys = apiVersionKeys()
	if req.Version >= 3 {
		resp.FinalizedFeaturesEpoch = -1
	}
	return resp, nil
}

func apiVersionKeys() []kmsg.ApiVersionsResponseApiKey {
	apis := supportedAPIs()
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for _, h := range apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = h.key, h.min, h.max
		keys = append(keys, k)
	}
	return keys
}
