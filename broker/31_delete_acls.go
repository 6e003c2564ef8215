package broker

// DeleteAcls (key 31), v1-v3, the range Kafka 4 serves.
//
// Behavior:
//   - no authorizer: every filter fails with SECURITY_DISABLED and Kafka's
//     message "No Authorizer is configured." (AclApis.handleDeleteAcls), one
//     result per filter, in request order, with no matching ACLs.
//
// Version notes:
//   - v2 is flexible; v3 adds the user resource type (no difference here).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(31, 1, 3, handleDeleteAcls) }

func handleDeleteAcls(b *Broker, r *request, req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DeleteACLsResponse](req)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode = kerr.SecurityDisabled.Code
		msg := noAuthorizer
		res.ErrorMessage = &msg
		res.MatchingACLs = []kmsg.DeleteACLsResponseResultMatchingACL{}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
