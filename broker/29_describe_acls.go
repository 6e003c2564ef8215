package broker

// DescribeAcls (key 29), v1-v3, the range Kafka 4 serves.
//
// Behavior:
//   - no authorizer: answered as Kafka without one
//     (AclApis.handleDescribeAcls), SECURITY_DISABLED with Kafka's message
//     and no resources; the Java admin client surfaces
//     SecurityDisabledException.
//
// Version notes:
//   - v2 is flexible; v3 adds the user resource type (no difference here).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(29, 1, 3, handleDescribeAcls) }

func handleDescribeAcls(b *Broker, r *request, req *kmsg.DescribeACLsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DescribeACLsResponse](req)
	resp.ErrorCode = kerr.SecurityDisabled.Code
	msg := "No Authorizer is configured on the broker"
	resp.ErrorMessage = &msg
	return resp, nil
}
