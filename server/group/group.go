package group

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server"
)

// Kafka error codes the coordinator answers with, from Kafka's table
// (kerr); never typed as numbers (server/errors_test.go checks).
var (
	errNone                      = server.KafkaNone
	errUnknownServer             = kerr.UnknownServerError.Code
	errUnknownTopicOrPartition   = kerr.UnknownTopicOrPartition.Code
	errOffsetMetadataTooLarge    = kerr.OffsetMetadataTooLarge.Code
	errCoordinatorNotAvailable   = kerr.CoordinatorNotAvailable.Code
	errIllegalGeneration         = kerr.IllegalGeneration.Code
	errInconsistentGroupProtocol = kerr.InconsistentGroupProtocol.Code
	errInvalidGroupID            = kerr.InvalidGroupID.Code
	errUnknownMemberID           = kerr.UnknownMemberID.Code
	errInvalidSessionTimeout     = kerr.InvalidSessionTimeout.Code
	errRebalanceInProgress       = kerr.RebalanceInProgress.Code
	errInvalidCommitOffsetSize   = kerr.InvalidCommitOffsetSize.Code
	errInvalidRequest            = kerr.InvalidRequest.Code
	errNonEmptyGroup             = kerr.NonEmptyGroup.Code
	errGroupIDNotFound           = kerr.GroupIDNotFound.Code
	errMemberIDRequired          = kerr.MemberIDRequired.Code
	errFencedInstanceID          = kerr.FencedInstanceID.Code
	errGroupSubscribedToTopic    = kerr.GroupSubscribedToTopic.Code
)

// state is a classic group's state, as Kafka names them.
type state int8

const (
	stateEmpty state = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s state) String() string { return stateNames[s] }

// protocol is one assignment protocol a member supports, in its order of preference.
type protocol struct {
	name     string
	metadata []byte
}

// joinResult is what a JoinGroup answer holds, before it is shaped to the
// request's version.
type joinResult struct {
	err            int16
	generation     int32
	protocolType   string
	protocol       string
	leader         string
	memberID       string
	members        []joinedMember // only for the leader
	skipAssignment bool
}

type joinedMember struct {
	id, instanceID string
	metadata       []byte
}

// syncResult is what a SyncGroup answer holds.
type syncResult struct {
	err          int16
	protocolType string
	protocol     string
	assignment   []byte
}

// member is one group member. Every field is guarded by the group's mu.
type member struct {
	id, instanceID       string
	clientID, clientHost string
	sessionTimeout       time.Duration
	rebalanceTimeout     time.Duration
	protocols            []protocol
	assignment           []byte
	lastSeen             time.Time // last join, sync or heartbeat: the session timer
	joinSeq              uint64    // order of first join, for a stable leader choice

	// joinWait is non-nil while the member waits for the join phase to end;
	// syncWait while it waits for the leader's assignment. Buffered (1).
	joinWait chan joinResult
	syncWait chan syncResult
	// joined says the member has (re)joined in the current join phase.
	joined bool
	// synced says the member asked for its assignment in this generation.
	synced bool

	// inst is set for a consumer the coordinator drives itself (REST and
	// SSE consumers): it joins and syncs without network round trips.
	inst *instance
	// ptype is the protocol type the member joined with ("consumer" for clients).
	ptype string
}

// env is what a group needs from outside: the time and partition counts
// (for assignments the coordinator computes for its own consumers).
type env struct {
	logger         *slog.Logger
	initialDelay   time.Duration
	partitionCount func(topic string) int32
}

// group is one consumer group. It is owned by its mutex: every handler
// locks mu, applies a decision and unlocks; nothing in it does I/O or
// starts goroutines, and every time-dependent decision takes now, so tests
// drive it with a fake clock. Waiting (a JoinGroup until the join phase
// ends, a SyncGroup until the leader assigns) is a buffered channel the
// handler blocks on after unlocking.
type group struct {
	name string
	env  *env

	// commitMu serialises this group's offset writes to __consumer_offsets,
	// so the log and the in-memory table apply commits in the same order.
	// It is taken before mu, never while holding it.
	commitMu sync.Mutex

	mu           sync.Mutex
	state        state
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	pending      map[string]time.Time // ids handed out with MEMBER_ID_REQUIRED, until expiry
	statics      map[string]string    // group.instance.id -> member id
	joinSeq      uint64

	// lastSize is how many members the last generation with members had;
	// emptySince is when the group last became Empty.
	lastSize   int
	emptySince time.Time

	rebalanceDeadline time.Time // PreparingRebalance: when stragglers are dropped
	delayUntil        time.Time // initial rebalance delay in effect until then
	delayMax          time.Time // the delay never extends past this
	syncDeadline      time.Time // CompletingRebalance: when the leader is given up on

	offsets map[topicPartition]offsetEntry
	// committing counts offset writes under way: a group created by a
	// commit has no offsets until its write lands, and Tick must not
	// forget it meanwhile (the commit would land in a detached group).
	committing int
	// txnOffsets are the transactional offset commits (TxnOffsetCommit)
	// written but not yet decided, per producer id and epoch (one
	// transaction each at transaction.version 2, whose next transaction
	// may commit before the previous one's marker is told): a commit
	// marker on the group's __consumer_offsets partition makes them
	// committed, an abort drops them (txnoffsets.go).
	txnOffsets map[txnKey]map[topicPartition]offsetEntry
	// changed is closed on every state or assignment change (for pollers).
	changed chan struct{}
}

func newGroup(name string, e *env) *group {
	return &group{
		name:    name,
		env:     e,
		members: map[string]*member{},
		pending: map[string]time.Time{},
		statics: map[string]string{},
		offsets: map[topicPartition]offsetEntry{},
		changed: make(chan struct{}),
	}
}

// notify wakes everyone waiting on changed. Callers hold mu.
func (g *group) notify() {
	close(g.changed)
	g.changed = make(chan struct{})
}

func newMemberID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	if prefix == "" {
		prefix = "member"
	}
	return prefix + "-" + hex.EncodeToString(b[:4]) + "-" + hex.EncodeToString(b[4:6]) + "-" +
		hex.EncodeToString(b[6:8]) + "-" + hex.EncodeToString(b[8:10]) + "-" + hex.EncodeToString(b[10:])
}

// joinRequest is a JoinGroup request after version-specific defaults.
type joinRequest struct {
	version          int16
	memberID         string
	instanceID       string
	clientID         string
	clientHost       string
	protocolType     string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocols        []protocol
}

// join applies a JoinGroup. It returns either an immediate answer or a
// channel that receives the answer when the join phase completes. Callers
// hold mu.
func (g *group) join(now time.Time, req joinRequest) (joinResult, chan joinResult) {
	if g.state == stateDead {
		return joinResult{err: errCoordinatorNotAvailable}, nil
	}
	if !g.supportsProtocols(req.protocolType, req.protocols, req.memberID) {
		return joinResult{err: errInconsistentGroupProtocol, memberID: req.memberID}, nil
	}
	if req.memberID == "" {
		return g.joinNew(now, req)
	}
	if _, ok := g.pending[req.memberID]; ok {
		delete(g.pending, req.memberID)
		return g.addAndWait(now, req, req.memberID)
	}
	if req.instanceID != "" {
		// Kafka's validateMember: an instance id names the member, so an
		// old member id of a replaced instance is fenced, not unknown.
		switch id, ok := g.statics[req.instanceID]; {
		case !ok:
			return joinResult{err: errUnknownMemberID, memberID: req.memberID}, nil
		case id != req.memberID:
			return joinResult{err: errFencedInstanceID, memberID: req.memberID}, nil
		}
	}
	m, ok := g.members[req.memberID]
	if !ok {
		return joinResult{err: errUnknownMemberID, memberID: req.memberID}, nil
	}
	if req.instanceID != m.instanceID {
		return joinResult{err: errFencedInstanceID, memberID: req.memberID}, nil
	}
	return g.rejoin(now, m, req)
}

// joinNew handles a join without a member id.
func (g *group) joinNew(now time.Time, req joinRequest) (joinResult, chan joinResult) {
	if req.instanceID != "" {
		if oldID, ok := g.statics[req.instanceID]; ok {
			return g.replaceStatic(now, g.members[oldID], req)
		}
		return g.addAndWait(now, req, newMemberID(req.instanceID))
	}
	id := newMemberID(req.clientID)
	if req.version >= 4 {
		// KIP-394: hand out the id first, so a client that times out and
		// retries does not leave a ghost member behind.
		g.pending[id] = now.Add(req.sessionTimeout)
		return joinResult{err: errMemberIDRequired, memberID: id, generation: -1}, nil
	}
	return g.addAndWait(now, req, id)
}

func (g *group) addAndWait(now time.Time, req joinRequest, id string) (joinResult, chan joinResult) {
	g.joinSeq++
	m := &member{id: id, instanceID: req.instanceID, joinSeq: g.joinSeq}
	m.update(now, req)
	g.members[id] = m
	if req.instanceID != "" {
		g.statics[req.instanceID] = id
	}
	if g.state == statePreparingRebalance && !g.delayUntil.IsZero() {
		// A member joining during the initial delay extends it, up to the
		// rebalance timeout (Kafka's InitialDelayedJoin).
		if until := now.Add(g.env.initialDelay); until.Before(g.delayMax) {
			g.delayUntil = until
		} else {
			g.delayUntil = g.delayMax
		}
	}
	return g.waitJoin(now, m)
}

func (m *member) update(now time.Time, req joinRequest) {
	m.clientID, m.clientHost = req.clientID, req.clientHost
	m.sessionTimeout, m.rebalanceTimeout = req.sessionTimeout, req.rebalanceTimeout
	m.protocols = req.protocols
	m.ptype = req.protocolType
	m.lastSeen = now
}

// waitJoin marks m joined in the (possibly new) join phase and returns its wait channel.
func (g *group) waitJoin(now time.Time, m *member) (joinResult, chan joinResult) {
	if m.joinWait != nil {
		// A retried join replaces the earlier one; answer the old wait so its
		// handler does not hang.
		m.joinWait <- joinResult{err: errUnknownMemberID, memberID: m.id}
	}
	ch := make(chan joinResult, 1)
	m.joinWait = ch
	m.joined = true
	if g.state != statePreparingRebalance {
		g.prepareRebalance(now)
	} else {
		g.tryCompleteJoin(now)
	}
	return joinResult{}, ch
}

// rejoin handles a join from a known member.
func (g *group) rejoin(now time.Time, m *member, req joinRequest) (joinResult, chan joinResult) {
	same := sameProtocols(m.protocols, req.protocols)
	switch g.state {
	case stateCompletingRebalance, stateStable:
		if same && (g.state == stateCompletingRebalance || m.id != g.leader) {
			// A member that missed its join answer, or rejoins with nothing
			// new: give it the current generation without a rebalance.
			m.lastSeen = now
			return g.resultFor(m), nil
		}
	}
	m.update(now, req)
	return g.waitJoin(now, m)
}

// replaceStatic gives a known group.instance.id a new member id: the old id
// is fenced (KIP-345, Kafka's updateStaticMemberThenRebalanceOrCompleteJoin).
// In a Stable group the member takes over its assignment without a
// rebalance unless its new protocols change the protocol the group would
// select; its new metadata (a restarted client owns nothing yet) is kept
// for the next rebalance. In CompletingRebalance the leader may already
// be assigning to the old id, so the group rebalances.
func (g *group) replaceStatic(now time.Time, old *member, req joinRequest) (joinResult, chan joinResult) {
	fenced := joinResult{err: errFencedInstanceID, memberID: old.id}
	if old.joinWait != nil {
		old.joinWait <- fenced
		old.joinWait = nil
	}
	if old.syncWait != nil {
		old.syncWait <- syncResult{err: errFencedInstanceID}
		old.syncWait = nil
	}
	delete(g.members, old.id)
	m := *old
	m.id = newMemberID(req.instanceID)
	g.members[m.id] = &m
	g.statics[req.instanceID] = m.id
	oldLeader := g.leader
	if oldLeader == old.id {
		g.leader = m.id
	}
	m.update(now, req)
	if g.state == stateStable && g.selectProtocol(g.sortedMembers()) == g.protocol {
		g.env.logger.Info("static member rejoined without a rebalance", "group", g.name,
			"instance", req.instanceID, "member", m.id, "replaces", old.id, "generation", g.generation)
		return g.staticRejoinResult(&m, oldLeader, req.version), nil
	}
	m.joined = false
	return g.waitJoin(now, &m)
}

// staticRejoinResult answers a static member that took over its old
// assignment in a Stable group. From JoinGroup v9 (KIP-814) a leader is
// told it leads, with the members, and to skip the assignment; before v9
// it is given the old leader id, so it syncs as a follower and does not
// reassign.
func (g *group) staticRejoinResult(m *member, oldLeader string, version int16) joinResult {
	res := joinResult{
		generation: g.generation, protocolType: g.protocolType, protocol: g.protocol,
		leader: oldLeader, memberID: m.id,
	}
	if version >= 9 {
		res.leader = g.leader
		if m.id == g.leader {
			res.members, res.skipAssignment = g.memberList(), true
		}
	}
	return res
}

// resultFor is a join answer for the current generation.
func (g *group) resultFor(m *member) joinResult {
	res := joinResult{
		generation: g.generation, protocolType: g.protocolType, protocol: g.protocol,
		leader: g.leader, memberID: m.id,
	}
	if m.id == g.leader {
		res.members = g.memberList()
	}
	return res
}

func (g *group) memberList() []joinedMember {
	ms := g.sortedMembers()
	out := make([]joinedMember, 0, len(ms))
	for _, m := range ms {
		out = append(out, joinedMember{id: m.id, instanceID: m.instanceID, metadata: m.metadataFor(g.protocol)})
	}
	return out
}

func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].joinSeq < ms[j].joinSeq })
	return ms
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

func sameProtocols(a, b []protocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || !bytes.Equal(a[i].metadata, b[i].metadata) {
			return false
		}
	}
	return true
}

// supportsProtocols: the type matches the group's, and every other member
// supports at least one of the protocols offered.
func (g *group) supportsProtocols(protocolType string, ps []protocol, self string) bool {
	if protocolType == "" || len(ps) == 0 {
		return false
	}
	others := 0
	for id, m := range g.members {
		if id == self {
			continue
		}
		if m.ptype != protocolType {
			return false
		}
		others++
	}
	if others == 0 {
		return true
	}
	for _, p := range ps {
		if g.supportedByAll(p.name, self) {
			return true
		}
	}
	return false
}

func (g *group) supportedByAll(name, except string) bool {
	for id, m := range g.members {
		if id != except && !hasProtocol(m.protocols, name) {
			return false
		}
	}
	return true
}

func hasProtocol(ps []protocol, name string) bool {
	for _, p := range ps {
		if p.name == name {
			return true
		}
	}
	return false
}

// prepareRebalance starts a join phase. Callers hold mu.
func (g *group) prepareRebalance(now time.Time) {
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			if m.syncWait != nil {
				m.syncWait <- syncResult{err: errRebalanceInProgress}
				m.syncWait = nil
			}
		}
	}
	for _, m := range g.members {
		m.synced = false
	}
	maxRebalance := g.maxRebalanceTimeout()
	if g.state == stateEmpty && g.env.initialDelay > 0 {
		g.delayMax = now.Add(maxRebalance)
		g.delayUntil = now.Add(min(g.env.initialDelay, maxRebalance))
	}
	g.env.logger.Info("group rebalancing", "group", g.name, "from", g.state.String(), "generation", g.generation, "members", len(g.members))
	g.state = statePreparingRebalance
	g.rebalanceDeadline = now.Add(maxRebalance)
	for _, m := range g.members {
		if m.inst != nil {
			g.rejoinInstance(m)
		}
	}
	g.notify()
	g.tryCompleteJoin(now)
}

// tryCompleteJoin ends the join phase when every known member has rejoined
// (and no MEMBER_ID_REQUIRED id is outstanding), or at the rebalance
// deadline, dropping the members that did not rejoin.
func (g *group) tryCompleteJoin(now time.Time) {
	if g.state != statePreparingRebalance {
		return
	}
	if !g.delayUntil.IsZero() {
		if now.Before(g.delayUntil) && !g.lastGenerationBack() {
			return
		}
		g.delayUntil, g.delayMax = time.Time{}, time.Time{}
	}
	all := len(g.pending) == 0
	for _, m := range g.members {
		all = all && m.joined
	}
	if !all && now.Before(g.rebalanceDeadline) {
		return
	}
	g.completeJoin(now)
}

// lastGenerationBack reports whether, during the initial rebalance delay,
// as many members have joined as the group's last generation had (and no
// MEMBER_ID_REQUIRED id is outstanding). The delay exists to gather
// members that start together; once everyone the group last knew is back
// (a consumer that closed and reopened with a new subscription, a whole
// group restarted), waiting out the rest of it only delays the
// assignment. Kafka always waits; a group it has never seen, or forgot,
// still waits the full delay here. Callers hold mu.
func (g *group) lastGenerationBack() bool {
	if g.lastSize == 0 || len(g.pending) > 0 {
		return false
	}
	joined := 0
	for _, m := range g.members {
		if m.joined {
			joined++
		}
	}
	return joined >= g.lastSize
}

// completeJoin starts the next generation. Dynamic members that did not
// rejoin are dropped; static ones stay (with their last protocols) until
// their session expires, as in Kafka, so a static member that is
// restarting keeps its place. Callers hold mu.
func (g *group) completeJoin(now time.Time) {
	for _, m := range g.members {
		if !m.joined && m.instanceID == "" {
			g.env.logger.Info("group member did not rejoin in time", "group", g.name, "member", m.id)
			g.dropMember(m, errUnknownMemberID)
		}
	}
	clear(g.pending)
	if len(g.members) > 0 && !g.electJoinedLeader() {
		// Only static members that have not rejoined are left: nobody could
		// assign, so wait another rebalance timeout for them (or for their
		// sessions to expire).
		g.env.logger.Info("group could not complete the join phase: no member rejoined", "group", g.name)
		g.rebalanceDeadline = now.Add(g.maxRebalanceTimeout())
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.protocolType, g.leader = stateEmpty, "", "", ""
		g.emptySince = now
		g.notify()
		return
	}
	ms := g.sortedMembers()
	g.lastSize = len(ms)
	g.protocolType = ms[0].ptype
	g.protocol = g.selectProtocol(ms)
	g.state = stateCompletingRebalance
	g.env.logger.Info("group join phase complete", "group", g.name, "generation", g.generation,
		"members", len(ms), "leader", g.leader, "protocol", g.protocol)
	g.syncDeadline = now.Add(g.maxRebalanceTimeout())
	g.notify()
	var internalLeader *member
	for _, m := range ms {
		m.joined, m.lastSeen = false, now
		if m.inst != nil {
			if m.id == g.leader {
				internalLeader = m
			}
			continue
		}
		if m.joinWait != nil {
			m.joinWait <- g.resultFor(m)
			m.joinWait = nil
		}
	}
	for _, m := range ms {
		if m.inst != nil {
			m.synced = true // the coordinator's own consumers wait for the leader in place
		}
	}
	if internalLeader != nil {
		g.assignForInstance(now, internalLeader)
	}
}

// electJoinedLeader keeps the leader if it rejoined, else makes the first
// member (in join order) that rejoined the leader; false when none did.
func (g *group) electJoinedLeader() bool {
	if l, ok := g.members[g.leader]; ok && l.joined {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.joined {
			g.leader = m.id
			return true
		}
	}
	return false
}

func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// selectProtocol is Kafka's vote: each member votes for its most preferred
// protocol among those every member supports; the most votes wins, ties
// broken by the leader's preference order.
func (g *group) selectProtocol(ms []*member) string {
	votes := map[string]int{}
	for _, m := range ms {
		for _, p := range m.protocols {
			if g.supportedByAll(p.name, "") {
				votes[p.name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, p := range g.members[g.leader].protocols {
		if n, ok := votes[p.name]; ok && n > bestVotes {
			best, bestVotes = p.name, n
		}
	}
	return best
}

// syncRequest is a SyncGroup request.
type syncRequest struct {
	memberID, instanceID string
	generation           int32
	protocolType         *string
	protocol             *string
	assignments          map[string][]byte
}

// sync applies a SyncGroup: immediate answer or a channel. Callers hold mu.
func (g *group) sync(now time.Time, req syncRequest) (syncResult, chan syncResult) {
	if g.state == stateDead {
		return syncResult{err: errCoordinatorNotAvailable}, nil
	}
	m, code := g.checkMember(req.memberID, req.instanceID, req.generation)
	if code != errNone {
		return syncResult{err: code}, nil
	}
	if (req.protocolType != nil && *req.protocolType != g.protocolType) || (req.protocol != nil && *req.protocol != g.protocol) {
		return syncResult{err: errInconsistentGroupProtocol}, nil
	}
	m.lastSeen = now
	switch g.state {
	case statePreparingRebalance:
		return syncResult{err: errRebalanceInProgress}, nil
	case stateStable:
		return g.syncAnswer(m), nil
	}
	// CompletingRebalance
	if m.syncWait != nil {
		m.syncWait <- syncResult{err: errRebalanceInProgress}
	}
	ch := make(chan syncResult, 1)
	m.syncWait, m.synced = ch, true
	if m.id == g.leader {
		g.applyAssignment(now, req.assignments)
	}
	return syncResult{}, ch
}

func (g *group) syncAnswer(m *member) syncResult {
	return syncResult{protocolType: g.protocolType, protocol: g.protocol, assignment: m.assignment}
}

// applyAssignment stores the leader's assignment, makes the group Stable and
// answers every waiting SyncGroup.
func (g *group) applyAssignment(now time.Time, assignments map[string][]byte) {
	for id, m := range g.members {
		m.assignment = assignments[id]
	}
	g.state = stateStable
	g.notify()
	var revoked bool
	for _, m := range g.members {
		if m.syncWait != nil {
			m.syncWait <- g.syncAnswer(m)
			m.syncWait = nil
		}
		if m.inst != nil {
			revoked = g.instanceAssigned(m) || revoked
		}
	}
	if revoked {
		// A cooperative protocol took partitions from one of our consumers;
		// like a Kafka client, it gives them up and rejoins so the next
		// round can hand them on.
		g.prepareRebalance(now)
	}
}

// checkMember validates member id, instance id and generation.
func (g *group) checkMember(memberID, instanceID string, generation int32) (*member, int16) {
	if instanceID != "" {
		if id, ok := g.statics[instanceID]; ok && id != memberID {
			return nil, errFencedInstanceID
		}
	}
	m, ok := g.members[memberID]
	if !ok {
		return nil, errUnknownMemberID
	}
	if generation != g.generation {
		return nil, errIllegalGeneration
	}
	return m, errNone
}

// heartbeat applies a Heartbeat. Callers hold mu.
func (g *group) heartbeat(now time.Time, memberID, instanceID string, generation int32) int16 {
	switch g.state {
	case stateDead:
		return errCoordinatorNotAvailable
	case stateEmpty:
		return errUnknownMemberID
	}
	m, code := g.checkMember(memberID, instanceID, generation)
	if code != errNone {
		return code
	}
	m.lastSeen = now
	if g.state == statePreparingRebalance {
		return errRebalanceInProgress
	}
	return errNone
}

// leave removes one member (by member id, or by instance id for static
// members). Callers hold mu.
func (g *group) leave(now time.Time, memberID, instanceID string) int16 {
	if g.state == stateDead {
		return errCoordinatorNotAvailable
	}
	if instanceID != "" {
		id, ok := g.statics[instanceID]
		if !ok {
			return errUnknownMemberID
		}
		if memberID != "" && memberID != id {
			return errFencedInstanceID
		}
		memberID = id
	}
	if _, ok := g.pending[memberID]; ok {
		delete(g.pending, memberID)
		g.tryCompleteJoin(now)
		return errNone
	}
	m, ok := g.members[memberID]
	if !ok {
		return errUnknownMemberID
	}
	g.removeMember(now, m)
	return errNone
}

// removeMember drops m and rebalances the rest.
func (g *group) removeMember(now time.Time, m *member) {
	g.dropMember(m, errUnknownMemberID)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.prepareRebalance(now)
	case statePreparingRebalance:
		g.tryCompleteJoin(now)
	}
}

// dropMember deletes m, answering its waits with code.
func (g *group) dropMember(m *member, code int16) {
	if m.joinWait != nil {
		m.joinWait <- joinResult{err: code, memberID: m.id}
		m.joinWait = nil
	}
	if m.syncWait != nil {
		m.syncWait <- syncResult{err: code}
		m.syncWait = nil
	}
	delete(g.members, m.id)
	if m.instanceID != "" && g.statics[m.instanceID] == m.id {
		delete(g.statics, m.instanceID)
	}
	if m.inst != nil {
		m.inst.member = nil
	}
	g.notify()
}

// tick applies timeouts: expired MEMBER_ID_REQUIRED ids, members whose
// session expired, the initial delay and the rebalance deadline, and a
// leader that never sent its assignment. Callers hold mu.
func (g *group) tick(now time.Time) {
	for id, until := range g.pending {
		if !now.Before(until) {
			delete(g.pending, id)
		}
	}
	for _, m := range g.sortedMembers() {
		if m.inst != nil || m.joinWait != nil || m.syncWait != nil {
			continue // waiting in the coordinator counts as alive
		}
		if now.Sub(m.lastSeen) > m.sessionTimeout {
			if _, still := g.members[m.id]; still {
				g.env.logger.Info("group member session expired", "group", g.name, "member", m.id,
					"silent_for", now.Sub(m.lastSeen), "session_timeout", m.sessionTimeout)
				g.removeMember(now, m)
			}
		}
	}
	if g.state == stateCompletingRebalance && !now.Before(g.syncDeadline) {
		// The leader never sent the assignment: members that did not sync
		// are dropped (Kafka's pending-sync timeout) and the rest rebalance.
		for _, m := range g.sortedMembers() {
			if !m.synced {
				g.dropMember(m, errUnknownMemberID)
			}
		}
		if len(g.members) > 0 {
			g.prepareRebalance(now)
		} else {
			g.state, g.emptySince = stateEmpty, now
			g.notify()
		}
	}
	g.tryCompleteJoin(now)
}
