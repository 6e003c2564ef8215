package group

// State is a classic group's state, as Kafka's ClassicGroupState.
type State int8

// The classic group states. Empty: no members (offsets may remain).
// PreparingRebalance: members are rejoining. CompletingRebalance: the join
// is done and the leader's assignment is awaited. Stable: every member has
// its assignment. Dead: the group is being deleted.
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

// String returns the state's name as DescribeGroups and ListGroups report
// it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	}
	return "Unknown"
}

// Protocol is one assignment protocol a member supports, with its metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

type member struct {
	id                               string
	instanceID                       *string
	clientID, clientHost             string
	protocols                        []Protocol
	sessionTimeout, rebalanceTimeout int32
	assignment                       []byte
	heartbeatDeadline                int64

	parkedJoin    bool
	joinReply     ReplyID
	joinSkipAllow bool // the parked JoinGroup is v9+ (KIP-814)
	parkedSync    bool
	syncReply     ReplyID
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// sameProtocols reports whether ps equals the member's protocols, in order
// (Kafka's ClassicGroupMember.matches).
func (m *member) sameProtocols(ps []Protocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].Name != m.protocols[i].Name || string(ps[i].Metadata) != string(m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

type topicPartition struct {
	topic     string
	partition int32
}

type committedOffset struct {
	offset          int64
	leaderEpoch     int32
	metadata        string
	commitTimestamp int64
	// seq is the record's place in log order (Coordinator.seq); a
	// transactional offset is committed only over an older record's.
	seq int64
}

// group is one group: its classic membership and its committed offsets.
type group struct {
	id             string
	state          State
	stateTimestamp int64
	protocolType   string // "" for a simple group that only commits offsets
	protocol       string
	generation     int32
	leader         string
	members        map[string]*member
	order          []string          // member ids in join order
	static         map[string]string // group.instance.id -> member id
	pendingMembers map[string]int64  // member ids handed out with MEMBER_ID_REQUIRED -> expiry

	// joinDeadline is when PreparingRebalance completes regardless of
	// stragglers (-1: not preparing).
	joinDeadline int64
	// The initial delayed join of an empty group (Kafka's InitialDelayedJoin).
	initialDelay struct {
		active         bool
		remaining      int64
		newMemberAdded bool
	}
	// syncDeadline is when members that have not sent SyncGroup since the
	// join completed are removed (Kafka's pending sync, -1: none).
	syncDeadline int64
	pendingSync  map[string]bool

	offsets map[topicPartition]committedOffset

	// subscribedTopics is what the members of a group of protocol type
	// "consumer" subscribe to, taken from their protocol metadata when a
	// generation starts and when the group is loaded (Kafka's
	// ClassicGroup.subscribedTopics); nil when unknown (another protocol
	// type, or metadata that does not parse).
	subscribedTopics map[string]bool

	// cg is set for a group of type "consumer" (KIP-848); the classic
	// fields above are then unused but for protocolType.
	cg *consumerGroup
	// sg is set for a group of type "share" (KIP-932, share.go); the
	// classic fields above are then unused but for protocolType.
	sg *shareGroup
}

func newGroup(id string, now int64) *group {
	return &group{
		id: id, state: Empty, stateTimestamp: now,
		members: map[string]*member{}, static: map[string]string{}, pendingMembers: map[string]int64{},
		joinDeadline: -1, syncDeadline: -1, pendingSync: map[string]bool{},
		offsets: map[topicPartition]committedOffset{},
	}
}

func (g *group) transition(s State, now int64) {
	g.state = s
	g.stateTimestamp = now
}

func (g *group) addMember(m *member) {
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	delete(g.pendingMembers, m.id)
}

// maxRebalanceTimeout is the rebalance timeout of the group: the largest of
// its members' (Kafka's ClassicGroup.rebalanceTimeoutMs).
func (g *group) maxRebalanceTimeout() int64 {
	var t int32
	for _, m := range g.members {
		t = max(t, m.rebalanceTimeout)
	}
	return int64(t)
}

// allJoined is Kafka's hasAllMembersJoined: every member awaits a join
// response and no member id handed out with MEMBER_ID_REQUIRED is pending.
func (g *group) allJoined() bool {
	for _, m := range g.members {
		if !m.parkedJoin {
			return false
		}
	}
	return len(g.pendingMembers) == 0
}

func (g *group) numAwaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.parkedJoin {
			n++
		}
	}
	return n
}

// supportsProtocols is Kafka's ClassicGroup.supportsClassicProtocols: an
// empty group takes any non-empty protocol type and list; otherwise the type
// must match and one of the protocols must be supported by every member.
func (g *group) supportsProtocols(protocolType string, ps []Protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.allSupport(p.Name) {
			return true
		}
	}
	return false
}

// allSupport reports whether every member lists the protocol name.
func (g *group) allSupport(name string) bool {
	for _, m := range g.members {
		if !hasProtocol(m.protocols, name) {
			return false
		}
	}
	return true
}

func hasProtocol(ps []Protocol, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

// selectProtocol is Kafka's ClassicGroup.selectProtocol: among the
// protocols every member supports, each member votes for the first of its
// own list, and the most votes win. Ties go to the candidate the earliest
// member lists first, so the choice is deterministic.
func (g *group) selectProtocol() string {
	var candidates []string
	first := g.members[g.order[0]]
	for _, p := range first.protocols {
		if g.allSupport(p.Name) {
			candidates = append(candidates, p.Name)
		}
	}
	votes := map[string]int{}
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
