package broker

// ListGroups (key 16), v0-v5.
//
// Lists every group this broker coordinates. v3: flexible; v4+ filter by
// state (case-insensitive, as Kafka) and report it; v5+ filter by type and
// report it: every group here is "classic", so a type filter without
// "classic" (case-insensitive) lists nothing.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { register(16, 0, 5, handleListGroups) }

func handleListGroups(b *Broker, r *request, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ListGroupsResponse](req)
	resp.Groups = []kmsg.ListGroupsResponseGroup{}
	if req.Version >= 5 && len(req.TypesFilter) > 0 {
		classic := false
		for _, t := range req.TypesFilter {
			classic = classic || strings.EqualFold(t, "classic")
		}
		if !classic {
			return resp, nil
		}
	}
	var states []string
	if req.Version >= 4 {
		states = req.StatesFilter
	}
	var listed []group.ListedGroup
	if err := b.groups.read(r, func(c *group.Coordinator, now int64) { listed = c.ListGroups(states) }); err != nil {
		return nil, err
	}
	for _, l := range listed {
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState, g.GroupType = l.GroupID, l.ProtocolType, l.State, "classic"
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
