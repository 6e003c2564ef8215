package broker

// CreateAcls (key 30), v1-v3, the range Kafka 4 serves.
//
// Behavior:
//   - no authorizer: every creation fails with SECURITY_DISABLED and
//     Kafka's message "No Authorizer is configured."
//     (AclApis.handleCreateAcls), one result per creation, in request order.
//
// Version notes:
//   - v2 is flexible; v3 adds the user resource type (no difference here).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(30, 1, 3, handleCreateAcls) }

// noAuthorizer is Kafka's message for ACL changes without an authorizer.
const noAuthorizer = "No Authorizer is configured."

func handleCreateAcls(b *Broker, r *request, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.CreateACLsResponse](req)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode = kerr.SecurityDisabled.Code
		msg := noAuthorizer
		res.ErrorMessage = &msg
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
