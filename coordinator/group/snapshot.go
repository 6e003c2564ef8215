package group

// GroupSnapshot is one group as metrics see it: its state (Kafka's state
// name for its type: classic, consumer or share), its member count and its
// committed offsets.
type GroupSnapshot struct {
	GroupID string
	State   string
	Members int
	Offsets []OffsetSnapshot // sorted by topic, then partition
}

// OffsetSnapshot is one committed offset of a group.
type OffsetSnapshot struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Snapshot returns every group, sorted by id. It changes nothing and
// produces no effects, so it may run between any two events; the result
// shares no memory with the coordinator.
func (c *Coordinator) Snapshot() []GroupSnapshot {
	ids := c.sortedGroupIDs()
	out := make([]GroupSnapshot, 0, len(ids))
	for _, id := range ids {
		g := c.groups[id]
		s := GroupSnapshot{GroupID: id, State: g.state.String(), Members: len(g.members)}
		switch { // consumer (KIP-848) and share (KIP-932) groups keep their members apart
		case g.cg != nil:
			s.State, s.Members = g.cg.state(), len(g.cg.members)
		case g.sg != nil:
			s.State, s.Members = g.sg.state(), len(g.sg.members)
		}
		if len(g.offsets) > 0 {
			s.Offsets = make([]OffsetSnapshot, 0, len(g.offsets))
			for _, tp := range g.sortedOffsets() {
				s.Offsets = append(s.Offsets, OffsetSnapshot{Topic: tp.topic, Partition: tp.partition, Offset: g.offsets[tp].offset})
			}
		}
		out = append(out, s)
	}
	return out
}
