package broker

// DescribeUserScramCredentials (key 50), v0.
//
// Behavior:
//   - from the node's credentials in force: a single node's stored ones,
//     or in cluster mode those of the metadata image it last applied
//     (cluster_scram.go), so a node that has not applied a change yet
//     answers without it, as a Kafka broker answers from its image;
//   - as Kafka's ScramImage.describe: no users (null or empty) lists
//     every user with a credential; a named user gets its mechanisms and
//     iterations (never a salt or key), RESOURCE_NOT_FOUND when it has
//     none, DUPLICATE_RESOURCE when named twice, with Kafka's messages;
//   - no authorizer: answered as Kafka without one.
//
// docs/apis.md#describeuserscramcredentials has the details.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/security/scram"
)

func init() { register(50, 0, 0, handleDescribeUserScramCredentials) }

func handleDescribeUserScramCredentials(b *Broker, _ *request, req *kmsg.DescribeUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DescribeUserSCRAMCredentialsResponse](req)
	resp.Results = describeScramUsers(b.scram.current(), req.Users)
	return resp, nil
}

// describeScramUsers is Kafka's ScramImage.describe over users.
func describeScramUsers(users scramUsers, named []kmsg.DescribeUserSCRAMCredentialsRequestUser) []kmsg.DescribeUserSCRAMCredentialsResponseResult {
	var order []string
	duplicate := map[string]bool{}
	if len(named) == 0 {
		for name := range users {
			order = append(order, name)
		}
		sort.Strings(order)
	} else {
		for _, u := range named {
			if _, seen := duplicate[u.Name]; seen {
				duplicate[u.Name] = true
				continue
			}
			duplicate[u.Name] = false
			order = append(order, u.Name)
		}
	}
	results := make([]kmsg.DescribeUserSCRAMCredentialsResponseResult, 0, len(order))
	for _, name := range order {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = name
		switch creds := users[name]; {
		case duplicate[name]:
			msg := "Cannot describe SCRAM credentials for the same user twice in a single request: " + name
			r.ErrorCode, r.ErrorMessage = kerr.DuplicateResource.Code, &msg
		case len(creds) == 0:
			msg := "Attempt to describe a user credential that does not exist: " + name
			r.ErrorCode, r.ErrorMessage = kerr.ResourceNotFound.Code, &msg
		default:
			for _, m := range scram.Mechanisms {
				c, ok := creds[m]
				if !ok {
					continue
				}
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism, info.Iterations = int8(m), c.Iterations
				r.CredentialInfos = append(r.CredentialInfos, info)
			}
		}
		results = append(results, r)
	}
	return results
}
