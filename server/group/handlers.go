package group

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/quota"
)

// Each Handle method serves every version of its request (req.Version) and
// returns the response of the same version. The listener sets the version
// and the header; the coordinator fills the body. JoinGroup and SyncGroup
// block until the join phase or the leader's assignment completes, ctx is
// done, or the coordinator closes.

// HandleFindCoordinator serves FindCoordinator v0–v4 (v4: batched keys).
// A group's coordinator is the leader of its __consumer_offsets partition
// (this node on a single node); on a cluster the first lookup creates the
// topic. Transaction coordinators do not exist yet, so key type 1 gets
// COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) HandleFindCoordinator(ctx context.Context, req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	answer := func(key string) (coordinator, int16, string) {
		switch {
		case req.CoordinatorType == 1:
			return coordinator{}, errCoordinatorNotAvailable, "transactions are not supported"
		case req.CoordinatorType != 0:
			return coordinator{}, errInvalidRequest, "unknown coordinator type " + strconv.Itoa(int(req.CoordinatorType))
		case c.closed():
			return coordinator{}, errCoordinatorNotAvailable, errClosed.Error()
		}
		co, err := c.coordinatorOf(key)
		if err != nil {
			return coordinator{}, errCoordinatorNotAvailable, err.Error()
		}
		return co, errNone, ""
	}
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			co, code, msg := answer(key)
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.ErrorCode = key, code
			if code == errNone {
				rc.NodeID, rc.Host, rc.Port = co.ID, co.Host, co.Port
			} else {
				rc.NodeID, rc.Port, rc.ErrorMessage = -1, -1, &msg
			}
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return resp
	}
	co, code, msg := answer(req.CoordinatorKey)
	resp.ErrorCode = code
	if code != errNone {
		resp.NodeID, resp.Port = -1, -1
		if req.Version >= 1 {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	resp.NodeID, resp.Host, resp.Port = co.ID, co.Host, co.Port
	return resp
}

func (c *Coordinator) advertised() (string, int32, error) {
	host, portStr, err := net.SplitHostPort(c.broker.Config().AdvertisedKafkaAddr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil {
		return "", 0, err
	}
	if host == "" {
		host = "localhost"
	}
	return host, int32(port), nil
}

// HandleJoinGroup serves JoinGroup v0–v9: v1+ rebalance timeout, v4+ the
// MEMBER_ID_REQUIRED first join (KIP-394), v5+ static membership
// (group.instance.id, KIP-345), v7+ protocol type in the answer, v9
// SkipAssignment for a static leader that rejoined a stable group.
func (c *Coordinator) HandleJoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	jr := joinRequest{
		version:        req.Version,
		memberID:       req.MemberID,
		protocolType:   req.ProtocolType,
		sessionTimeout: time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
	}
	jr.rebalanceTimeout = jr.sessionTimeout
	if req.Version >= 1 {
		jr.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.Version >= 5 && req.InstanceID != nil {
		jr.instanceID = *req.InstanceID
	}
	ci := clientFrom(ctx)
	jr.clientID, jr.clientHost = ci.ClientID, ci.Host
	for _, p := range req.Protocols {
		jr.protocols = append(jr.protocols, protocol{name: p.Name, metadata: p.Metadata})
	}
	res := c.join(ctx, req.Group, jr)
	fillJoin(resp, res)
	return resp
}

func (c *Coordinator) join(ctx context.Context, name string, jr joinRequest) joinResult {
	switch code := c.serves(name); {
	case code != errNone:
		return joinResult{err: code, memberID: jr.memberID}
	case name == "":
		return joinResult{err: errInvalidGroupID, memberID: jr.memberID}
	case jr.sessionTimeout < c.cfg.MinSessionTimeout || jr.sessionTimeout > c.cfg.MaxSessionTimeout:
		return joinResult{err: errInvalidSessionTimeout, memberID: jr.memberID}
	}
	g := c.lockGroup(name, true)
	res, wait := g.join(c.now(), jr)
	g.mu.Unlock()
	if wait == nil {
		return res
	}
	// Waiting for the rebalance holds no handler busy: a
	// request_percentage quota does not count it.
	defer quota.Park(ctx).End()
	select {
	case res = <-wait:
		return res
	case <-ctx.Done():
	case <-c.life.Closing():
	}
	return joinResult{err: errCoordinatorNotAvailable, memberID: jr.memberID}
}

func fillJoin(resp *kmsg.JoinGroupResponse, res joinResult) {
	resp.ErrorCode, resp.MemberID = res.err, res.memberID
	if res.err != errNone {
		resp.Generation = -1
		return
	}
	resp.Generation, resp.LeaderID, resp.SkipAssignment = res.generation, res.leader, res.skipAssignment
	protocolName, protocolType := res.protocol, res.protocolType
	resp.Protocol = &protocolName
	if resp.Version >= 7 {
		resp.ProtocolType = &protocolType
	}
	for _, m := range res.members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.ProtocolMetadata = m.id, m.metadata
		if m.instanceID != "" {
			id := m.instanceID
			rm.InstanceID = &id
		}
		resp.Members = append(resp.Members, rm)
	}
}

// HandleSyncGroup serves SyncGroup v0–v5 (v3+ instance id, v5 protocol
// type and name checked against the group's).
func (c *Coordinator) HandleSyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	sr := syncRequest{memberID: req.MemberID, generation: req.Generation, assignments: map[string][]byte{}}
	if req.Version >= 3 && req.InstanceID != nil {
		sr.instanceID = *req.InstanceID
	}
	if req.Version >= 5 {
		sr.protocolType, sr.protocol = req.ProtocolType, req.Protocol
	}
	for _, a := range req.GroupAssignment {
		sr.assignments[a.MemberID] = a.MemberAssignment
	}
	res := c.sync(ctx, req.Group, sr)
	resp.ErrorCode, resp.MemberAssignment = res.err, res.assignment
	if req.Version >= 5 && res.err == errNone {
		pt, p := res.protocolType, res.protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
	}
	return resp
}

func (c *Coordinator) sync(ctx context.Context, name string, sr syncRequest) syncResult {
	switch code := c.serves(name); {
	case code != errNone:
		return syncResult{err: code}
	case name == "":
		return syncResult{err: errInvalidGroupID}
	}
	g := c.lockGroup(name, false)
	if g == nil {
		return syncResult{err: errUnknownMemberID}
	}
	res, wait := g.sync(c.now(), sr)
	g.mu.Unlock()
	if wait == nil {
		return res
	}
	defer quota.Park(ctx).End()
	select {
	case res = <-wait:
		return res
	case <-ctx.Done():
	case <-c.life.Closing():
	}
	return syncResult{err: errCoordinatorNotAvailable}
}

// HandleHeartbeat serves Heartbeat v0–v4 (v3+ instance id).
func (c *Coordinator) HandleHeartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	var instanceID string
	if req.Version >= 3 && req.InstanceID != nil {
		instanceID = *req.InstanceID
	}
	switch code := c.serves(req.Group); {
	case code != errNone:
		resp.ErrorCode = code
	case req.Group == "":
		resp.ErrorCode = errInvalidGroupID
	default:
		g := c.lockGroup(req.Group, false)
		if g == nil {
			resp.ErrorCode = errUnknownMemberID
			break
		}
		resp.ErrorCode = g.heartbeat(c.now(), req.MemberID, instanceID, req.Generation)
		g.mu.Unlock()
	}
	return resp
}

// HandleLeaveGroup serves LeaveGroup v0–v5: v0–v2 one member id, v3+ a
// batch of members each answered on its own (by member id, or by
// group.instance.id for static members).
func (c *Coordinator) HandleLeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if code := c.serves(req.Group); code != errNone {
		resp.ErrorCode = code
		return resp
	}
	if req.Group == "" {
		resp.ErrorCode = errInvalidGroupID
		return resp
	}
	g := c.lockGroup(req.Group, false)
	if req.Version < 3 {
		resp.ErrorCode = errUnknownMemberID
		if g != nil {
			resp.ErrorCode = g.leave(c.now(), req.MemberID, "")
			g.mu.Unlock()
		}
		return resp
	}
	for _, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		rm.ErrorCode = errUnknownMemberID
		if g != nil {
			var instanceID string
			if m.InstanceID != nil {
				instanceID = *m.InstanceID
			}
			rm.ErrorCode = g.leave(c.now(), m.MemberID, instanceID)
		}
		resp.Members = append(resp.Members, rm)
	}
	if g != nil {
		g.mu.Unlock()
	}
	return resp
}

// HandleDescribeGroups serves DescribeGroups v0–v5. An unknown group is
// answered as Kafka does: no error, state Dead.
func (c *Coordinator) HandleDescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = name
		code := c.serves(name)
		d, ok := c.Describe(name)
		switch {
		case code != errNone:
			rg.ErrorCode = code
		case name == "":
			rg.ErrorCode = errInvalidGroupID
		case !ok:
			rg.State = stateDead.String()
		default:
			rg.State, rg.ProtocolType, rg.Protocol = d.State, d.ProtocolType, d.Protocol
			for _, m := range d.Members {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.ClientID, rm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
				rm.ProtocolMetadata, rm.MemberAssignment = m.metadata, m.assignment
				if m.InstanceID != "" {
					id := m.InstanceID
					rm.InstanceID = &id
				}
				rg.Members = append(rg.Members, rm)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// HandleListGroups serves ListGroups v0–v5 (v4 states filter, v5 types
// filter; every group here is "classic").
func (c *Coordinator) HandleListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if c.closed() {
		resp.ErrorCode = errCoordinatorNotAvailable
		return resp
	}
	for _, s := range c.List() {
		if req.Version >= 4 && len(req.StatesFilter) > 0 && !containsFold(req.StatesFilter, s.State) {
			continue
		}
		if req.Version >= 5 && len(req.TypesFilter) > 0 && !containsFold(req.TypesFilter, "classic") {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = s.Group, s.ProtocolType, s.State, "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if len(v) == len(s) && (v == s || equalFold(v, s)) {
			return true
		}
	}
	return false
}

func equalFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
