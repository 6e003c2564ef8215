package broker

// ApiVersions (key 18), v0-v4.
//
// The answer is built from the handler registry alone, so the broker
// advertises exactly what it serves. A version this broker does not know is
// answered in the v0 layout with UNSUPPORTED_VERSION (KIP-511; see dispatch).
// v3+: the client software name and version must match Kafka's pattern, else
// INVALID_REQUEST. The response header is never flexible, even at v3+.
//
// v3+ advertises one feature, transaction.version: supported 0-2 and
// finalized at 2, as a Kafka 4.2 cluster does by default, since Gregor
// serves transactions V2 (KIP-890 part 2: produce v12+ adds its partition to
// the transaction, EndTxn v5 bumps the epoch), on a single node and in
// cluster mode alike. Clients that see it finalized
// at 2 use V2 (the Java client, franz-go); others use V1, also served. The
// finalized features epoch is 0: Gregor has no metadata log whose offset
// Kafka uses there, and the features never change. KIP-848 groups are served
// (keys 68 and 69) but group.version is not advertised: clients decide by
// the API keys (franz-go, the Java client), and Kafka's feature gates the
// broker side only. Other Kafka features (metadata.version, kraft.version)
// say nothing a client acts on and are not advertised.

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
	resp.ApiKeys = apiVersionKeys(b)
	if req.Version >= 3 {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = transactionVersionFeature, 0, finalizedTransactionVersion
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = transactionVersionFeature, finalizedTransactionVersion, finalizedTransactionVersion
		resp.SupportedFeatures = []kmsg.ApiVersionsResponseSupportedFeature{sf}
		resp.FinalizedFeatures = []kmsg.ApiVersionsResponseFinalizedFeature{ff}
		resp.FinalizedFeaturesEpoch = 0
	}
	return resp, nil
}

// transactionVersionFeature is Kafka's transaction.version feature, and
// finalizedTransactionVersion its level here: 2, transactions V2.
const (
	transactionVersionFeature   = "transaction.version"
	finalizedTransactionVersion = 2
)

func apiVersionKeys(b *Broker) []kmsg.ApiVersionsResponseApiKey {
	apis := supportedAPIs()
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for _, h := range apis {
		if !h.advertised(b) {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = h.key, h.min, h.max
		keys = append(keys, k)
	}
	return keys
}
