package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// JoinRequest is a JoinGroup request. RebalanceTimeoutMs of a v0 request is
// its session timeout, as Kafka sets it.
type JoinRequest struct {
	GroupID            string
	MemberID           string
	InstanceID         *string
	ProtocolType       string
	Protocols          []Protocol
	SessionTimeoutMs   int32
	RebalanceTimeoutMs int32
	ClientID           string
	ClientHost         string
	// RequireKnownMemberID is true for JoinGroup v4+ (KIP-394): a new
	// dynamic member first gets MEMBER_ID_REQUIRED and its member id.
	RequireKnownMemberID bool
	// SupportsSkipAssignment is true for JoinGroup v9+ (KIP-814).
	SupportsSkipAssignment bool
}

// JoinMember is one member in the leader's JoinGroup response.
type JoinMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinResult is the answer to a JoinGroup.
type JoinResult struct {
	ErrorCode      int16
	Generation     int32
	ProtocolType   *string
	Protocol       *string
	Leader         string
	MemberID       string
	SkipAssignment bool
	Members        []JoinMember
}

// SyncRequest is a SyncGroup request. ProtocolType and Protocol are nil
// below v5.
type SyncRequest struct {
	GroupID      string
	Generation   int32
	MemberID     string
	InstanceID   *string
	ProtocolType *string
	Protocol     *string
	Assignments  map[string][]byte // the leader's, by member id
}

// SyncResult is the answer to a SyncGroup.
type SyncResult struct {
	ErrorCode    int16
	ProtocolType *string
	Protocol     *string
	Assignment   []byte
}

// HeartbeatRequest is a Heartbeat request.
type HeartbeatRequest struct {
	GroupID    string
	Generation int32
	MemberID   string
	InstanceID *string
}

// HeartbeatResult is the answer to a Heartbeat.
type HeartbeatResult struct{ ErrorCode int16 }

// LeaveMember is one member leaving; a v0-v2 LeaveGroup has exactly one.
type LeaveMember struct {
	MemberID   string
	InstanceID *string
}

// LeaveRequest is a LeaveGroup request.
type LeaveRequest struct {
	GroupID string
	Members []LeaveMember
}

// LeaveMemberResult is one member's outcome.
type LeaveMemberResult struct {
	MemberID   string
	InstanceID *string
	ErrorCode  int16
}

// LeaveResult is the answer to a LeaveGroup.
type LeaveResult struct {
	ErrorCode int16
	Members   []LeaveMemberResult
}

func strp(s string) *string { return &s }

// JoinGroup handles a JoinGroup; its answer may come with a later event
// (Kafka's GroupMetadataManager.classicGroupJoin).
func (c *Coordinator) JoinGroup(now int64, id ReplyID, req JoinRequest) {
	c.fireDueTimers(req.GroupID, now, nil)
	fail := func(e *kerr.Error) {
		c.reply(id, &JoinResult{ErrorCode: e.Code, Generation: -1, MemberID: req.MemberID})
	}
	if req.GroupID == "" {
		fail(kerr.InvalidGroupID)
		return
	}
	if req.SessionTimeoutMs < c.cfg.MinSessionTimeoutMs || req.SessionTimeoutMs > c.cfg.MaxSessionTimeoutMs {
		fail(kerr.InvalidSessionTimeout)
		return
	}
	g := c.groups[req.GroupID]
	if g == nil {
		// Kafka creates the group only for a member without an id; a known
		// member id in an unknown group is UNKNOWN_MEMBER_ID.
		if req.MemberID != "" {
			fail(kerr.UnknownMemberID)
			return
		}
		g = newGroup(req.GroupID, now)
		c.groups[req.GroupID] = g
	}
	if g.state == Dead {
		fail(kerr.CoordinatorNotAvailable)
		return
	}
	if g.sg != nil {
		// Kafka's classicGroupJoin refuses a share group, empty or not.
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	if g.cg != nil {
		// Kafka turns an empty consumer group into a classic one (online
		// downgrade); a classic member joining a consumer group with
		// members is Kafka's classicGroupJoinToConsumerGroup, which Gregor
		// does not implement: refused as a protocol mismatch.
		if len(g.cg.members) > 0 {
			fail(kerr.InconsistentGroupProtocol)
			return
		}
		c.consumerGroupTombstones(g)
		g.cg, g.protocolType = nil, ""
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	// Kafka's acceptJoiningMember (group.max.size).
	accept := true
	switch g.state {
	case PreparingRebalance:
		m := g.members[req.MemberID]
		accept = (m != nil && m.parkedJoin) || g.numAwaitingJoin() < c.cfg.MaxSize
	case CompletingRebalance, Stable:
		accept = g.members[req.MemberID] != nil || len(g.members) < c.cfg.MaxSize
	}
	if !accept {
		if m := g.members[req.MemberID]; m != nil {
			c.removeMember(g, m, now)
			c.afterRemoval(g, now)
		}
		fail(kerr.GroupMaxSizeReached)
		return
	}
	if req.MemberID == "" {
		c.joinNewMember(g, now, id, req)
	} else {
		c.joinExistingMember(g, now, id, req)
	}
}

func (c *Coordinator) joinNewMember(g *group, now int64, id ReplyID, req JoinRequest) {
	if req.InstanceID != nil {
		if old, ok := g.static[*req.InstanceID]; ok {
			c.replaceStaticMember(g, now, id, req, g.members[old])
			return
		}
		c.addMemberAndRebalance(g, now, id, req, c.cfg.NewMemberID(req.ClientID))
		return
	}
	newID := c.cfg.NewMemberID(req.ClientID)
	if req.RequireKnownMemberID {
		// KIP-394: the member must come back with this id; until it does
		// (or its session timeout passes) the join cannot complete.
		g.pendingMembers[newID] = now + int64(req.SessionTimeoutMs)
		c.reply(id, &JoinResult{ErrorCode: kerr.MemberIDRequired.Code, Generation: -1, MemberID: newID})
		return
	}
	c.addMemberAndRebalance(g, now, id, req, newID)
}

func (c *Coordinator) addMemberAndRebalance(g *group, now int64, id ReplyID, req JoinRequest, memberID string) {
	m := &member{
		id: memberID, instanceID: req.InstanceID, clientID: req.ClientID, clientHost: req.ClientHost,
		protocols: req.Protocols, sessionTimeout: req.SessionTimeoutMs, rebalanceTimeout: req.RebalanceTimeoutMs,
		heartbeatDeadline: now + int64(req.SessionTimeoutMs),
		parkedJoin:        true, joinReply: id, joinSkipAllow: req.SupportsSkipAssignment,
	}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.addMember(m)
	if g.initialDelay.active {
		g.initialDelay.newMemberAdded = true
	}
	c.maybePrepareRebalanceOrCompleteJoin(g, now)
}

func (c *Coordinator) maybePrepareRebalanceOrCompleteJoin(g *group, now int64) {
	switch g.state {
	case Empty, Stable, CompletingRebalance:
		c.prepareRebalance(g, now)
	case PreparingRebalance:
		c.maybeCompleteJoin(g, now)
	}
}

// parkJoin updates an existing member from its JoinGroup and parks the
// request. A join already parked for the member is answered
// REBALANCE_IN_PROGRESS so that its connection is not held forever (Kafka
// drops the older future, and its client times out).
func (c *Coordinator) parkJoin(m *member, id ReplyID, req JoinRequest) {
	if m.parkedJoin && m.joinReply != id {
		c.reply(m.joinReply, &JoinResult{ErrorCode: kerr.RebalanceInProgress.Code, Generation: -1, MemberID: m.id})
	}
	m.protocols = req.Protocols
	m.sessionTimeout, m.rebalanceTimeout = req.SessionTimeoutMs, req.RebalanceTimeoutMs
	m.parkedJoin, m.joinReply, m.joinSkipAllow = true, id, req.SupportsSkipAssignment
}

func (c *Coordinator) joinExistingMember(g *group, now int64, id ReplyID, req JoinRequest) {
	if _, pending := g.pendingMembers[req.MemberID]; pending {
		c.addMemberAndRebalance(g, now, id, req, req.MemberID)
		return
	}
	if e := g.validateMember(req.MemberID, req.InstanceID); e != nil {
		c.reply(id, &JoinResult{ErrorCode: e.Code, Generation: -1, MemberID: req.MemberID})
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		c.parkJoin(m, id, req)
		c.maybeCompleteJoin(g, now)
	case CompletingRebalance:
		if m.sameProtocols(req.Protocols) {
			// The member missed its join response: send it again.
			m.heartbeatDeadline = now + int64(m.sessionTimeout)
			c.reply(id, g.joinResult(m, m.id == g.leader, false))
			return
		}
		c.parkJoin(m, id, req)
		c.prepareRebalance(g, now)
	case Stable:
		if m.id == g.leader || !m.sameProtocols(req.Protocols) {
			// Kafka rebalances when the leader rejoins (it may have new
			// metadata to assign from) or a member's protocols changed.
			c.parkJoin(m, id, req)
			c.prepareRebalance(g, now)
			return
		}
		m.heartbeatDeadline = now + int64(m.sessionTimeout)
		c.reply(id, g.joinResult(m, false, false))
	default:
		c.reply(id, &JoinResult{ErrorCode: kerr.UnknownMemberID.Code, Generation: -1, MemberID: req.MemberID})
	}
}

// replaceStaticMember is Kafka's updateStaticMemberThenRebalanceOrCompleteJoin
// (KIP-345): a known group.instance.id joining without a member id gets a new
// member id, and the old id is fenced.
func (c *Coordinator) replaceStaticMember(g *group, now int64, id ReplyID, req JoinRequest, old *member) {
	newID := c.cfg.NewMemberID(req.ClientID)
	if old.parkedJoin {
		c.reply(old.joinReply, &JoinResult{ErrorCode: kerr.FencedInstanceID.Code, Generation: -1, MemberID: old.id})
		old.parkedJoin = false
	}
	if old.parkedSync {
		c.reply(old.syncReply, &SyncResult{ErrorCode: kerr.FencedInstanceID.Code})
		old.parkedSync = false
	}
	oldID := old.id
	delete(g.members, oldID)
	old.id = newID
	g.members[newID] = old
	for i, o := range g.order {
		if o == oldID {
			g.order[i] = newID
		}
	}
	g.static[*req.InstanceID] = newID
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	wasLeader := g.leader == oldID
	if wasLeader {
		g.leader = newID
	}
	old.clientID, old.clientHost = req.ClientID, req.ClientHost
	old.heartbeatDeadline = now + int64(req.SessionTimeoutMs)
	switch g.state {
	case Stable:
		old.protocols = req.Protocols
		old.sessionTimeout, old.rebalanceTimeout = req.SessionTimeoutMs, req.RebalanceTimeoutMs
		if g.selectProtocol() != g.protocol {
			// The selected protocol would change: rebalance.
			c.parkJoin(old, id, req)
			c.prepareRebalance(g, now)
			return
		}
		// Kafka does not rebalance when only the member's metadata changed
		// (a restarted consumer no longer owns partitions).
		c.storeGroup(g)
		if req.SupportsSkipAssignment {
			// KIP-814: a static leader that comes back gets the members
			// but must not assign again (SkipAssignment).
			c.reply(id, g.joinResult(old, wasLeader, wasLeader))
			return
		}
		// Below v9 Kafka names the leader as it was before the
		// replacement, so a restarted leader does not assign.
		r := g.joinResult(old, false, false)
		if wasLeader {
			r.Leader = oldID
		}
		c.reply(id, r)
	case CompletingRebalance:
		c.parkJoin(old, id, req)
		c.prepareRebalance(g, now)
	default: // PreparingRebalance
		c.parkJoin(old, id, req)
		c.maybeCompleteJoin(g, now)
	}
}

// validateMember is Kafka's validateExistingMember: a group.instance.id
// bound to another member id is FENCED_INSTANCE_ID, an unknown member id
// UNKNOWN_MEMBER_ID.
func (g *group) validateMember(memberID string, instanceID *string) *kerr.Error {
	if instanceID != nil {
		if known, ok := g.static[*instanceID]; ok && known != memberID {
			return kerr.FencedInstanceID
		}
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID
	}
	return nil
}

func (g *group) joinResult(m *member, withMembers, skip bool) *JoinResult {
	r := &JoinResult{
		Generation: g.generation, ProtocolType: strp(g.protocolType), Protocol: strp(g.protocol),
		Leader: g.leader, MemberID: m.id, SkipAssignment: skip,
	}
	if withMembers {
		r.Members = make([]JoinMember, 0, len(g.order))
		for _, id := range g.order {
			o := g.members[id]
			r.Members = append(r.Members, JoinMember{MemberID: o.id, InstanceID: o.instanceID, Metadata: o.metadata(g.protocol)})
		}
	}
	return r
}

// prepareRebalance moves the group to PreparingRebalance (Kafka's
// prepareRebalance). Parked SyncGroups of the old generation are answered
// REBALANCE_IN_PROGRESS.
func (c *Coordinator) prepareRebalance(g *group, now int64) {
	if g.state == CompletingRebalance {
		for _, id := range g.order {
			m := g.members[id]
			m.assignment = nil
			if m.parkedSync {
				m.parkedSync = false
				c.reply(m.syncReply, &SyncResult{ErrorCode: kerr.RebalanceInProgress.Code})
			}
		}
	}
	g.syncDeadline = -1
	clear(g.pendingSync)
	initial := g.state == Empty
	g.transition(PreparingRebalance, now)
	timeout := g.maxRebalanceTimeout()
	if initial && c.cfg.InitialRebalanceDelayMs > 0 {
		delay := min(c.cfg.InitialRebalanceDelayMs, timeout)
		g.initialDelay.active = true
		g.initialDelay.remaining = max(timeout-c.cfg.InitialRebalanceDelayMs, 0)
		g.initialDelay.newMemberAdded = false
		g.joinDeadline = now + delay
		return
	}
	g.joinDeadline = now + timeout
	c.maybeCompleteJoin(g, now)
}

func (c *Coordinator) maybeCompleteJoin(g *group, now int64) {
	if g.state == PreparingRebalance && !g.initialDelay.active && g.allJoined() {
		c.completeJoin(g, now)
	}
}

// completeJoin ends PreparingRebalance (Kafka's completeClassicGroupJoin):
// members that did not rejoin are removed, the generation advances, the
// protocol is chosen, and every parked JoinGroup is answered, the leader's
// with the members.
func (c *Coordinator) completeJoin(g *group, now int64) {
	for _, id := range append([]string(nil), g.order...) {
		if m := g.members[id]; !m.parkedJoin {
			c.removeMember(g, m, now)
		}
	}
	clear(g.pendingMembers)
	g.initialDelay.active = false
	g.joinDeadline = -1
	g.generation++
	if len(g.members) == 0 {
		g.protocol = ""
		g.leader = ""
		g.subscribedTopics = g.computeSubscribedTopics()
		g.transition(Empty, now)
		c.storeGroup(g)
		return
	}
	g.protocol = g.selectProtocol()
	g.subscribedTopics = g.computeSubscribedTopics()
	g.transition(CompletingRebalance, now)
	if g.members[g.leader] == nil {
		g.leader = g.order[0]
	}
	for _, id := range g.order {
		m := g.members[id]
		m.parkedJoin = false
		m.heartbeatDeadline = now + int64(m.sessionTimeout)
		g.pendingSync[id] = true
		c.reply(m.joinReply, g.joinResult(m, id == g.leader, false))
	}
	g.syncDeadline = now + g.maxRebalanceTimeout()
}

// removeMember drops m from the group, answering its parked requests
// UNKNOWN_MEMBER_ID; afterRemoval then moves the group on.
func (c *Coordinator) removeMember(g *group, m *member, now int64) {
	if m.parkedJoin {
		c.reply(m.joinReply, &JoinResult{ErrorCode: kerr.UnknownMemberID.Code, Generation: -1, MemberID: m.id})
	}
	if m.parkedSync {
		c.reply(m.syncReply, &SyncResult{ErrorCode: kerr.UnknownMemberID.Code})
	}
	delete(g.members, m.id)
	for i, id := range g.order {
		if id == m.id {
			g.order = append(g.order[:i], g.order[i+1:]...)
			break
		}
	}
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// afterRemoval is the rest of Kafka's removeMemberAndUpdateGroup.
func (c *Coordinator) afterRemoval(g *group, now int64) {
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalance(g, now)
	case PreparingRebalance:
		c.maybeCompleteJoin(g, now)
	}
}

// SyncGroup handles a SyncGroup (Kafka's classicGroupSync). A follower's
// request waits for the leader's in CompletingRebalance.
func (c *Coordinator) SyncGroup(now int64, id ReplyID, req SyncRequest) {
	c.fireDueTimers(req.GroupID, now, nil)
	fail := func(e *kerr.Error) { c.reply(id, &SyncResult{ErrorCode: e.Code}) }
	g := c.groups[req.GroupID]
	if g == nil {
		fail(kerr.UnknownMemberID)
		return
	}
	if g.state == Dead {
		fail(kerr.CoordinatorNotAvailable)
		return
	}
	if e := g.validateMember(req.MemberID, req.InstanceID); e != nil {
		fail(e)
		return
	}
	if req.Generation != g.generation {
		fail(kerr.IllegalGeneration)
		return
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		fail(kerr.UnknownMemberID)
	case PreparingRebalance:
		fail(kerr.RebalanceInProgress)
	case CompletingRebalance:
		delete(g.pendingSync, m.id)
		if m.parkedSync && m.syncReply != id {
			c.reply(m.syncReply, &SyncResult{ErrorCode: kerr.RebalanceInProgress.Code})
		}
		m.parkedSync, m.syncReply = true, id
		m.heartbeatDeadline = now + int64(m.sessionTimeout)
		if m.id != g.leader {
			return
		}
		for _, mid := range g.order {
			g.members[mid].assignment = req.Assignments[mid]
		}
		c.storeGroup(g)
		g.transition(Stable, now)
		for _, mid := range g.order {
			o := g.members[mid]
			if o.parkedSync {
				o.parkedSync = false
				c.reply(o.syncReply, g.syncResult(o))
			}
		}
	case Stable:
		delete(g.pendingSync, m.id)
		m.heartbeatDeadline = now + int64(m.sessionTimeout)
		c.reply(id, g.syncResult(m))
	}
}

func (g *group) syncResult(m *member) *SyncResult {
	a := m.assignment
	if a == nil {
		a = []byte{}
	}
	return &SyncResult{ProtocolType: strp(g.protocolType), Protocol: strp(g.protocol), Assignment: a}
}

// Heartbeat handles a Heartbeat (Kafka's classicGroupHeartbeat).
func (c *Coordinator) Heartbeat(now int64, id ReplyID, req HeartbeatRequest) {
	c.fireDueTimers(req.GroupID, now, nil)
	code := c.heartbeat(now, req)
	c.reply(id, &HeartbeatResult{ErrorCode: errCode(code)})
}

func (c *Coordinator) heartbeat(now int64, req HeartbeatRequest) *kerr.Error {
	g := c.groups[req.GroupID]
	if g == nil {
		return kerr.UnknownMemberID
	}
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable
	}
	if e := g.validateMember(req.MemberID, req.InstanceID); e != nil {
		return e
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		return kerr.UnknownMemberID
	case PreparingRebalance:
		m.heartbeatDeadline = now + int64(m.sessionTimeout)
		return kerr.RebalanceInProgress
	default:
		m.heartbeatDeadline = now + int64(m.sessionTimeout)
		return nil
	}
}

func errCode(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

// LeaveGroup handles a LeaveGroup (Kafka's classicGroupLeave). A v0-v2
// request carries one member and its error is the top-level error.
func (c *Coordinator) LeaveGroup(now int64, id ReplyID, req LeaveRequest) {
	c.fireDueTimers(req.GroupID, now, nil)
	res := &LeaveResult{}
	g := c.groups[req.GroupID]
	switch {
	case g == nil:
		res.ErrorCode = kerr.UnknownMemberID.Code
	case g.state == Dead:
		res.ErrorCode = kerr.CoordinatorNotAvailable.Code
	}
	if res.ErrorCode != 0 {
		c.reply(id, res)
		return
	}
	removed := false
	for _, lm := range req.Members {
		r := LeaveMemberResult{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		switch {
		case lm.InstanceID != nil:
			known, ok := g.static[*lm.InstanceID]
			switch {
			case !ok:
				r.ErrorCode = kerr.UnknownMemberID.Code
			case lm.MemberID != "" && lm.MemberID != known:
				r.ErrorCode = kerr.FencedInstanceID.Code
			default:
				c.removeMember(g, g.members[known], now)
				removed = true
			}
		default:
			if _, pending := g.pendingMembers[lm.MemberID]; pending {
				delete(g.pendingMembers, lm.MemberID)
				removed = true
			} else if m := g.members[lm.MemberID]; m != nil {
				c.removeMember(g, m, now)
				removed = true
			} else {
				r.ErrorCode = kerr.UnknownMemberID.Code
			}
		}
		res.Members = append(res.Members, r)
	}
	if removed {
		c.afterRemoval(g, now)
	}
	c.reply(id, res)
}

// tickGroup fires the group's timers that are due.
func (c *Coordinator) tickGroup(g *group, now int64) {
	for id, deadline := range g.pendingMembers {
		if now >= deadline {
			delete(g.pendingMembers, id)
			c.maybeCompleteJoin(g, now)
		}
	}
	var expired []*member
	for _, id := range g.order {
		m := g.members[id]
		if !m.parkedJoin && !m.parkedSync && now >= m.heartbeatDeadline {
			expired = append(expired, m)
		}
	}
	for _, m := range expired {
		c.removeMember(g, m, now)
	}
	if len(expired) > 0 {
		c.afterRemoval(g, now)
	}
	if g.state == PreparingRebalance && g.joinDeadline >= 0 && now >= g.joinDeadline {
		if g.initialDelay.active && g.initialDelay.newMemberAdded && g.initialDelay.remaining > 0 {
			// Kafka's InitialDelayedJoin: members are still arriving, wait
			// another delay, up to the rebalance timeout.
			delay := min(c.cfg.InitialRebalanceDelayMs, g.initialDelay.remaining)
			g.initialDelay.remaining = max(g.initialDelay.remaining-c.cfg.InitialRebalanceDelayMs, 0)
			g.initialDelay.newMemberAdded = false
			g.joinDeadline = now + delay
		} else {
			g.initialDelay.active = false
			c.completeJoin(g, now)
		}
	}
	if (g.state == CompletingRebalance || g.state == Stable) && g.syncDeadline >= 0 && now >= g.syncDeadline {
		g.syncDeadline = -1
		if len(g.pendingSync) > 0 {
			// Kafka's pending-sync expiry: members that never sent
			// SyncGroup after the join are removed.
			for _, id := range append([]string(nil), g.order...) {
				if g.pendingSync[id] {
					c.removeMember(g, g.members[id], now)
				}
			}
			c.afterRemoval(g, now)
		}
	}
}
