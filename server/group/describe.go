package group

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

// GroupSummary is one line of a group listing.
type GroupSummary struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Protocol     string `json:"protocol"`
	Members      int    `json:"members"`
}

// List summarises every group this node coordinates, sorted by name.
func (c *Coordinator) List() []GroupSummary {
	var out []GroupSummary
	for _, g := range c.groupList() {
		g.mu.Lock()
		if g.state != stateDead {
			out = append(out, GroupSummary{Group: g.name, State: g.state.String(),
				ProtocolType: g.protocolType, Protocol: g.protocol, Members: len(g.members)})
		}
		g.mu.Unlock()
	}
	return out
}

// TopicPartitions is a set of partitions of one topic.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// MemberDescription is one member of a group.
type MemberDescription struct {
	MemberID   string            `json:"member_id"`
	InstanceID string            `json:"instance_id,omitempty"`
	ClientID   string            `json:"client_id"`
	ClientHost string            `json:"client_host"`
	Assignment []TopicPartitions `json:"assignment"`
	// Consumer is the REST/SSE consumer instance id when the coordinator
	// drives this member itself.
	Consumer string `json:"consumer_instance,omitempty"`

	metadata, assignment []byte
}

// GroupDescription is a group's state and members.
type GroupDescription struct {
	Group        string              `json:"group"`
	State        string              `json:"state"`
	ProtocolType string              `json:"protocol_type"`
	Protocol     string              `json:"protocol"`
	Generation   int32               `json:"generation"`
	Leader       string              `json:"leader"`
	Members      []MemberDescription `json:"members"`
}

// Describe returns a group's members; false when the group is unknown.
func (c *Coordinator) Describe(name string) (GroupDescription, bool) {
	g := c.lockGroup(name, false)
	if g == nil {
		return GroupDescription{}, false
	}
	defer g.mu.Unlock()
	d := GroupDescription{Group: name, State: g.state.String(), ProtocolType: g.protocolType,
		Protocol: g.protocol, Generation: g.generation, Leader: g.leader, Members: []MemberDescription{}}
	for _, m := range g.sortedMembers() {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID,
			ClientHost: m.clientHost, metadata: m.metadataFor(g.protocol), assignment: m.assignment,
			Assignment: []TopicPartitions{}}
		if m.inst != nil {
			md.Consumer = m.inst.id
		}
		if g.protocolType == "consumer" && g.state == stateStable {
			md.Assignment = parseAssignment(m.assignment)
		}
		d.Members = append(d.Members, md)
	}
	return d, true
}

func parseAssignment(b []byte) []TopicPartitions {
	out := []TopicPartitions{}
	var a kmsg.ConsumerMemberAssignment
	if len(b) == 0 || a.ReadFrom(b) != nil {
		return out
	}
	for _, t := range a.Topics {
		ps := append([]int32(nil), t.Partitions...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		out = append(out, TopicPartitions{Topic: t.Topic, Partitions: ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// PartitionLag is one partition's committed offset and lag.
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is -1 when nothing is committed.
	Committed     int64  `json:"committed_offset"`
	Metadata      string `json:"metadata"`
	HighWatermark int64  `json:"high_watermark"`
	// LastStableOffset is where read_committed members stop (the first
	// offset of the oldest open transaction, else the high watermark);
	// -1 when unknown.
	LastStableOffset int64 `json:"last_stable_offset"`
	// Lag is HighWatermark - Committed; with nothing committed it is
	// HighWatermark - log start offset (what a consumer from the beginning has left).
	Lag int64 `json:"lag"`
	// Member is the member assigned the partition, if any.
	Member string `json:"member_id,omitempty"`
}

// Lag returns, per partition the group has committed or is assigned, the
// committed offset, the high watermark and the lag; false for an unknown group.
func (c *Coordinator) Lag(name string) ([]PartitionLag, bool) {
	d, ok := c.Describe(name)
	if !ok {
		return nil, false
	}
	committed := c.Committed(name)
	owner := map[topicPartition]string{}
	for _, m := range d.Members {
		for _, tps := range m.Assignment {
			for _, p := range tps.Partitions {
				owner[topicPartition{tps.Topic, p}] = m.MemberID
			}
		}
	}
	all := map[topicPartition]bool{}
	for tp := range committed {
		all[tp] = true
	}
	for tp := range owner {
		all[tp] = true
	}
	out := []PartitionLag{}
	for _, tp := range sortedTPs(all) {
		pl := PartitionLag{Topic: tp.topic, Partition: tp.partition, Committed: -1, HighWatermark: -1, LastStableOffset: -1, Lag: -1, Member: owner[tp]}
		e, hasCommit := committed[tp]
		if hasCommit {
			pl.Committed, pl.Metadata = e.offset, e.metadata
		}
		if lso, _, err := c.broker.ListOffsetIsolated(tp.topic, tp.partition, server.OffsetLatest, true); err == nil {
			pl.LastStableOffset = lso
		}
		if hw, _, err := c.broker.ListOffset(tp.topic, tp.partition, server.OffsetLatest); err == nil {
			pl.HighWatermark = hw
			if hasCommit {
				pl.Lag = max(hw-e.offset, 0)
			} else if start, _, err := c.broker.ListOffset(tp.topic, tp.partition, server.OffsetEarliest); err == nil {
				pl.Lag = hw - start
			}
		}
		out = append(out, pl)
	}
	return out, true
}
