package group

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// On a cluster a REST consumer instance outlives its coordinator: its
// descriptor (format, offset reset, auto commit, subscription) is written
// to the group's __consumer_offsets partition, acks=all, when it is
// created, subscribes or unsubscribes, and a tombstone when it is deleted
// or expires. A broker that takes the partition over (on failover) reads
// the descriptors with the offsets and recreates the instances, which
// rejoin the group and read on from the committed offsets: positions not
// committed are not kept, as with a Kafka consumer that restarts. A single
// node keeps instances in memory only, as REST Proxy does.
//
// The record key is ferry's own version, instanceKeyVersion, so Kafka's
// readers of the topic (and ferry's offset loader) skip it: int16 version,
// then the group and the instance id as int16-length strings. The value
// is the descriptor in JSON.

const instanceKeyVersion int16 = 0x7e01

type instanceDescriptor struct {
	Format          string   `json:"format"`
	AutoOffsetReset string   `json:"auto_offset_reset"`
	AutoCommit      bool     `json:"auto_commit"`
	Topics          []string `json:"topics,omitempty"`
	// ReadCommitted: the instance reads at isolation read_committed.
	ReadCommitted bool `json:"read_committed,omitempty"`
}

func instanceRecordKey(groupName, id string) []byte {
	key := binary.BigEndian.AppendUint16(nil, uint16(instanceKeyVersion))
	for _, s := range []string{groupName, id} {
		key = binary.BigEndian.AppendUint16(key, uint16(len(s)))
		key = append(key, s...)
	}
	return key
}

// parseInstanceKey reads an instance record's key; ok is false for any
// other record (or a malformed key: bounded by what is there).
func parseInstanceKey(key []byte) (k instanceKey, ok bool) {
	if len(key) < 2 || int16(binary.BigEndian.Uint16(key)) != instanceKeyVersion {
		return k, false
	}
	rest := key[2:]
	var parts [2]string
	for i := range parts {
		if len(rest) < 2 {
			return k, false
		}
		n := int(binary.BigEndian.Uint16(rest))
		if len(rest) < 2+n {
			return k, false
		}
		parts[i], rest = string(rest[2:2+n]), rest[2+n:]
	}
	if len(rest) != 0 || parts[0] == "" || parts[1] == "" {
		return k, false
	}
	return instanceKey{group: parts[0], id: parts[1]}, true
}

// applyInstanceRecord applies one __consumer_offsets record to the
// descriptors being loaded; other records are skipped.
func applyInstanceRecord(table map[instanceKey]instanceDescriptor, r records.Record) {
	k, ok := parseInstanceKey(r.Key)
	if !ok {
		return
	}
	if r.Value == nil {
		delete(table, k)
		return
	}
	var d instanceDescriptor
	if json.Unmarshal(r.Value, &d) != nil {
		return
	}
	table[k] = d
}

// persistInstance writes inst's descriptor (gone: a tombstone) on a
// cluster; a single node keeps none.
func (c *Coordinator) persistInstance(ctx context.Context, inst *instance, topics []string, gone bool) error {
	if !c.offsets.Clustered() {
		return nil
	}
	var value []byte
	if !gone {
		var err error
		value, err = json.Marshal(instanceDescriptor{Format: inst.format, AutoOffsetReset: inst.reset,
			AutoCommit: inst.autoCommit, Topics: topics, ReadCommitted: inst.readCommitted})
		if err != nil {
			return err
		}
	}
	req := &server.ProduceRequest{Topic: OffsetsTopic, Sync: true, Internal: true, Records: []server.ProduceRecord{{
		Partition: c.offsetsPartition(inst.group),
		Record:    records.Record{Key: instanceRecordKey(inst.group, inst.id), Value: value, Timestamp: c.now().UnixMilli()}}}}
	if _, err := c.broker.Produce(ctx, req); err != nil {
		return fmt.Errorf("%w: keeping consumer instance %q of group %q: %v", ErrCommitRejected, inst.id, inst.group, err)
	}
	return nil
}

// restoreInstances recreates the instances of a partition just loaded,
// subscribed again to their topics. Callers hold nothing.
func (c *Coordinator) restoreInstances(table map[instanceKey]instanceDescriptor) int {
	n := 0
	for k, d := range table {
		inst := &instance{group: k.group, id: k.id, format: d.Format, reset: d.AutoOffsetReset,
			autoCommit: d.AutoCommit, readCommitted: d.ReadCommitted, positions: map[topicPartition]int64{}}
		inst.lastUsed.Store(c.now().UnixNano())
		c.mu.Lock()
		if _, ok := c.mu.instances[k]; ok {
			c.mu.Unlock()
			continue
		}
		c.mu.instances[k] = inst
		c.mu.Unlock()
		n++
		if len(d.Topics) > 0 {
			if err := c.joinInstance(inst, d.Topics); err != nil {
				c.logger.Warn("consumer instance not resubscribed after a coordinator change", "group", k.group, "instance", k.id, "err", err)
			}
		}
	}
	return n
}

// dropInstances forgets the instances of groups whose partition p this
// broker no longer leads: the next coordinator recreates them.
func (c *Coordinator) dropInstances(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, inst := range c.mu.instances {
		if c.offsetsPartition(k.group) == p {
			inst.gone.Store(true)
			delete(c.mu.instances, k)
		}
	}
}
