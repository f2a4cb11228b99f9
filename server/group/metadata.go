package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
)

// Group metadata records, in Kafka's formats: key version 2 (the group),
// value version 3 (protocol type, generation, protocol, leader, the time
// the group entered its state, and each member's id, group.instance.id,
// client id and host, rebalance and session timeouts, subscription and
// assignment); a null value (tombstone) deletes the group. They share the
// group's __consumer_offsets partition with its commits, so the
// coordinator that takes the partition over reads both in one pass; the
// last record of a group wins.
const (
	groupKeyVersion   int16 = 2
	groupValueVersion int16 = 3
)

// Bounds on a record read back: what the log holds is untrusted (a
// corrupt or hand-written record must not make the loader restore
// nonsense or allocate without limit). kmsg already refuses a length or
// count larger than the bytes that remain.
const (
	maxLoadedMembers     = 100_000
	maxLoadedTimeoutMs   = int32(24 * time.Hour / time.Millisecond)
	maxLoadedGroupIDSize = 1 << 15
)

func groupMetadataKey(name string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: name}
	return k.AppendTo(nil)
}

func groupMetadataValue(md *groupMetadata) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation, v.CurrentStateTimestamp = groupValueVersion, md.protocolType, md.generation, md.stateTime
	if md.protocol != "" {
		protocol := md.protocol
		v.Protocol = &protocol
	}
	if md.leader != "" {
		leader := md.leader
		v.Leader = &leader
	}
	for _, pm := range md.members {
		m := kmsg.GroupMetadataValueMember{MemberID: pm.id, ClientID: pm.clientID, ClientHost: pm.clientHost,
			RebalanceTimeoutMillis: int32(pm.rebalanceTimeout / time.Millisecond),
			SessionTimeoutMillis:   int32(pm.sessionTimeout / time.Millisecond),
			Subscription:           pm.subscription, Assignment: pm.assignment}
		if pm.instanceID != "" {
			id := pm.instanceID
			m.InstanceID = &id
		}
		v.Members = append(v.Members, m)
	}
	return v.AppendTo(nil)
}

// parseGroupMetadataKey reads a group metadata key; ok is false for any
// other record kind.
func parseGroupMetadataKey(key []byte) (name string, ok bool) {
	var k kmsg.GroupMetadataKey
	if len(key) < 2 || int16(key[0])<<8|int16(key[1]) != groupKeyVersion || k.ReadFrom(key) != nil {
		return "", false
	}
	if k.Group == "" || len(k.Group) > maxLoadedGroupIDSize {
		return "", false
	}
	return k.Group, true
}

// parseGroupMetadataValue decodes value versions 0–3 (v0 has no rebalance
// timeout: it is the session timeout, as Kafka reads it; v0–v1 no state
// time; v0–v2 no instance ids) and checks that it describes a group a
// coordinator can serve: members with distinct ids and positive timeouts,
// and when there are members, a protocol and a leader among them.
func parseGroupMetadataValue(value []byte) (*groupMetadata, bool) {
	var v kmsg.GroupMetadataValue
	if len(value) < 2 || value[0] != 0 || value[1] > byte(groupValueVersion) || v.ReadFrom(value) != nil {
		return nil, false
	}
	if v.Generation < 0 || len(v.Members) > maxLoadedMembers {
		return nil, false
	}
	md := &groupMetadata{protocolType: v.ProtocolType, generation: v.Generation, stateTime: v.CurrentStateTimestamp}
	if len(v.Members) == 0 {
		md.protocolType = ""
		return md, true
	}
	if v.Protocol == nil || *v.Protocol == "" || v.Leader == nil || v.ProtocolType == "" {
		return nil, false
	}
	md.protocol, md.leader = *v.Protocol, *v.Leader
	seen := make(map[string]struct{}, len(v.Members))
	leaderFound := false
	for _, m := range v.Members {
		rebalance := m.RebalanceTimeoutMillis
		if v.Version == 0 {
			rebalance = m.SessionTimeoutMillis
		}
		if _, dup := seen[m.MemberID]; dup || m.MemberID == "" ||
			m.SessionTimeoutMillis <= 0 || m.SessionTimeoutMillis > maxLoadedTimeoutMs ||
			rebalance <= 0 || rebalance > maxLoadedTimeoutMs {
			return nil, false
		}
		seen[m.MemberID] = struct{}{}
		leaderFound = leaderFound || m.MemberID == md.leader
		pm := persistedMember{id: m.MemberID, clientID: m.ClientID, clientHost: m.ClientHost,
			rebalanceTimeout: time.Duration(rebalance) * time.Millisecond,
			sessionTimeout:   time.Duration(m.SessionTimeoutMillis) * time.Millisecond,
			subscription:     m.Subscription, assignment: m.Assignment}
		if m.InstanceID != nil {
			pm.instanceID = *m.InstanceID
		}
		md.members = append(md.members, pm)
	}
	if !leaderFound {
		return nil, false
	}
	return md, true
}

// applyGroupRecord applies one __consumer_offsets record to the group
// metadata being loaded: the last record of a group wins, a tombstone
// leaves a nil entry (the group is forgotten, its offsets are not), and a
// record that does not parse is skipped. Other records are not group
// metadata and are skipped too.
func applyGroupRecord(table map[string]*groupMetadata, r records.Record) {
	name, ok := parseGroupMetadataKey(r.Key)
	if !ok {
		return
	}
	if r.Value == nil {
		table[name] = nil
		return
	}
	if md, ok := parseGroupMetadataValue(r.Value); ok {
		table[name] = md
	}
}

// flushMetadata writes the group's due metadata record, acknowledged
// after fsync (and, on a cluster, by every in-sync replica). A failed
// write stays due; the tick loop tries again. A write superseded while it
// was under way leaves the newer record due. Callers hold nothing.
func (c *Coordinator) flushMetadata(ctx context.Context, g *group) error {
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	md, seq, dead := g.metaDue, g.metaSeq, g.state == stateDead
	g.mu.Unlock()
	if md == nil || dead {
		return nil
	}
	err := c.writeRecords(ctx, g, []records.Record{{Key: groupMetadataKey(g.name), Value: groupMetadataValue(md)}})
	g.mu.Lock()
	switch {
	case err != nil:
		g.metaRetryAt = c.now().Add(metadataRetryBackoff)
	case g.metaSeq == seq:
		g.metaDue = nil
	}
	g.mu.Unlock()
	if err != nil {
		c.logger.Warn("writing group metadata failed", "group", g.name, "generation", md.generation, "err", err)
	}
	return err
}

// metaChangedSince says whether the state machine decided a metadata
// record since seq (a handler reads metaSeq before applying a request).
// Callers hold g.mu.
func (g *group) metaChangedSince(seq uint64) bool { return g.metaSeq != seq }

// metadataRetryBackoff spaces the tick loop's attempts at a record whose
// write failed (a partition without enough in-sync replicas fails every
// write until it has them).
const metadataRetryBackoff = time.Second

// flushDueMetadata starts a write for every group whose metadata is due
// and not already being written by the tick loop: transitions made by
// timeouts (expired sessions, deadlines) and by the coordinator's own
// consumers have no Kafka request handler to write them. The writes run
// on their own goroutines so a slow one (a follower of
// __consumer_offsets that does not answer) holds up no timeouts.
func (c *Coordinator) flushDueMetadata(gs []*group) {
	if c.closed() {
		return
	}
	for _, g := range gs {
		g.mu.Lock()
		start := g.metaDue != nil && !g.metaFlushing && g.state != stateDead && !c.now().Before(g.metaRetryAt)
		g.metaFlushing = g.metaFlushing || start
		g.mu.Unlock()
		if !start {
			continue
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ctx, cancel := c.closingContext()
			defer cancel()
			c.flushMetadata(ctx, g)
			g.mu.Lock()
			g.metaFlushing = false
			g.mu.Unlock()
		}()
	}
}

// closingContext is a context that ends when the coordinator closes.
func (c *Coordinator) closingContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-c.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
