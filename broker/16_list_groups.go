package broker

// ListGroups (key 16), v0-v5.
//
// Behavior:
//   - lists every group this broker coordinates; a consumer group
//     (KIP-848) reports protocol type "consumer" and its own states (Empty,
//     Assigning, Reconciling, Stable), a share group (KIP-932) protocol
//     type "share" and Empty or Stable.
//
// Version notes:
//   - v3 is flexible; v4+ filter by state (case-insensitive, as Kafka) and
//     report it;
//   - v5+ filter by type ("classic", "consumer" or "share",
//     case-insensitive; an unknown type matches nothing) and report it.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(16, 0, 5, handleListGroups) }

func handleListGroups(b *Broker, r *request, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ListGroupsResponse](req)
	resp.Groups = []kmsg.ListGroupsResponseGroup{}
	var states, types []string
	if req.Version >= 4 {
		states = trimAll(req.StatesFilter)
	}
	if req.Version >= 5 {
		types = trimAll(req.TypesFilter)
	}
	var listed []group.ListedGroup
	if err := b.groups.read(r, func(c *group.Coordinator, now int64) { listed = c.ListGroups(states, types) }); err != nil {
		return nil, err
	}
	for _, l := range listed {
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState, g.GroupType = l.GroupID, l.ProtocolType, l.State, l.Type
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// trimAll trims each filter, as Kafka does before comparing.
func trimAll(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, strings.TrimSpace(s))
	}
	return out
}
