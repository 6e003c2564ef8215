package broker

// ApiVersions (key 18), v0-v4.
//
// Behavior:
//   - built from the handler registry alone, so the broker advertises
//     exactly what it serves;
//   - a version this broker does not know is answered in the v0 layout
//     with UNSUPPORTED_VERSION (KIP-511; see dispatch); the response header
//     is never flexible;
//   - features as a Kafka 4.2 broker lists them (metadata.Features):
//     metadata.version 12, group.version 1 and transaction.version 2
//     finalized; on a cluster at the applied image's levels and offset as
//     the epoch, on a single node as constants at epoch 0.
//
// Version notes:
//   - v3+ checks the client software name and version against Kafka's
//     pattern (INVALID_REQUEST) and lists the features.
//
// docs/apis.md#apiversions has the details.

import (
	"maps"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
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
		for _, f := range metadata.Features {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		}
		levels, epoch := b.finalizedFeatures()
		for _, name := range slices.Sorted(maps.Keys(levels)) {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, levels[name], levels[name]
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
		resp.FinalizedFeaturesEpoch = epoch
	}
	return resp, nil
}

// finalizedFeatures returns the finalized feature levels (none at level 0)
// and their epoch: in cluster mode the applied image's, at its offset; on
// a single node the bootstrap levels at epoch 0.
func (b *Broker) finalizedFeatures() (map[string]int16, int64) {
	if b.isCluster() {
		if im := b.cluster.currentImage(); im != nil {
			return im.Features, int64(im.Offset)
		}
		return nil, 0
	}
	return singleNodeFeatures, 0
}

// singleNodeFeatures are the levels a single node finalizes: those a new
// cluster's metadata log starts with.
var singleNodeFeatures = func() map[string]int16 {
	m := map[string]int16{}
	for _, f := range metadata.Features {
		if f.Bootstrap > 0 {
			m[f.Name] = f.Bootstrap
		}
	}
	return m
}()

// finalizedTransactionVersion is transaction.version's level: 2,
// transactions V2, on a single node and in cluster mode alike.
const finalizedTransactionVersion = 2

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
