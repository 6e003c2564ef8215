package broker

// DescribeGroups (key 15), v0-v6.
//
// Behavior:
//   - describes classic groups (coordinator/group): state, protocol type
//     and members; the chosen protocol, member metadata and assignments
//     only for a Stable group, as in Kafka;
//   - a missing group is in state Dead without an error, as Kafka's
//     GroupMetadataManager.
//
// Version notes:
//   - v3+ may ask for authorized operations (all: no authorizer); v4+
//     report group.instance.id; v5 is flexible;
//   - v6 adds error messages and (KIP-1043) answers a missing group with
//     GROUP_ID_NOT_FOUND, as Kafka 4.2 (compat-tests/rawdiff).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(15, 0, 6, handleDescribeGroups) }

// allGroupOperations is every operation Kafka defines for a group: READ,
// DELETE and DESCRIBE.
const allGroupOperations = 1<<3 | 1<<6 | 1<<8

func handleDescribeGroups(b *Broker, r *request, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.DescribeGroupsResponse](req)
	var described []group.DescribedGroup
	if err := b.groups.read(r, func(c *group.Coordinator, now int64) { described = c.DescribeGroups(req.Groups) }); err != nil {
		return nil, err
	}
	for _, d := range described {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group, g.ErrorCode, g.State, g.ProtocolType, g.Protocol = d.GroupID, d.ErrorCode, d.State, d.ProtocolType, d.Protocol
		if b.isCluster() && !b.cluster.coordinates(d.GroupID) {
			// Another broker coordinates it (cluster mode).
			g = kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = d.GroupID, kerr.NotCoordinator.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if req.Version >= 6 && g.ErrorCode == 0 && g.State == "Dead" {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + d.GroupID + " not found."
			if d.NotClassic {
				msg = "Group " + d.GroupID + " is not a classic group."
			}
			g.ErrorMessage = &msg
		}
		if req.Version >= 3 && req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = allGroupOperations
		}
		for _, m := range d.Members {
			gm := kmsg.NewDescribeGroupsResponseGroupMember()
			gm.MemberID, gm.InstanceID, gm.ClientID, gm.ClientHost = m.MemberID, m.InstanceID, m.ClientID, m.ClientHost
			gm.ProtocolMetadata, gm.MemberAssignment = m.Metadata, m.Assignment
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
