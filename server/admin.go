package server

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// This file holds core methods the Kafka listener needs beyond what the
// HTTP gateway uses: validate-only admin requests, topic ids, DeleteRecords
// and waiting on several partitions at once.

// ValidateTopicSpec reports whether CreateTopic(spec) would succeed, without
// creating anything (CreateTopics with validateOnly).
func (b *Broker) ValidateTopicSpec(spec TopicSpec) error {
	if err := b.validateSpec(&spec); err != nil {
		return err
	}
	if _, err := b.lookup(spec.Name); err == nil {
		return fmt.Errorf("%w: %q", ErrTopicExists, spec.Name)
	}
	if spec.Assignment != nil {
		if _, err := b.checkAssignment(spec.Assignment, 0, len(spec.Assignment[0])); err != nil {
			return err
		}
	}
	return b.checkPartitionBudget(spec.Partitions)
}

// ValidateCreatePartitions reports whether
// CreatePartitionsAssigned(name, total, assignment) would succeed, without
// creating anything. Like it, it counts the partitions the cluster
// metadata records.
func (b *Broker) ValidateCreatePartitions(name string, total int32, assignment [][]int32) error {
	if err := RefuseInternalTopic(name, "add partitions to"); err != nil {
		return err
	}
	tm, ok, err := b.metadata.Topic(name)
	switch {
	case err != nil:
		return fmt.Errorf("%w: read topic %s: %v", ErrStorage, name, err)
	case !ok:
		return fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	if err := checkPartitionCount(name, tm.Partitions(), total); err != nil {
		return err
	}
	if err := b.checkPartitionBudget(total - tm.Partitions()); err != nil {
		return err
	}
	_, err = b.newReplicas(topicMetaOf(tm), total, assignment)
	return err
}

func checkPartitionCount(name string, have, total int32) error {
	if total <= have {
		return fmt.Errorf("%w: %s has %d partitions; the new count %d must be larger",
			ErrInvalidPartitions, name, have, total)
	}
	if total > MaxPartitionsPerTopic {
		return fmt.Errorf("%w: %d is above the limit %d", ErrInvalidPartitions, total, MaxPartitionsPerTopic)
	}
	return nil
}

// ValidateTopicConfigs rejects unknown topic config keys and bad values.
func ValidateTopicConfigs(cfgs map[string]string) error { return validateTopicConfigs(cfgs) }

// DownConversionEnabled reports the topic's message.downconversion.enable:
// whether a Fetch at a version older than the stored format may be served
// converted (Kafka answers UNSUPPORTED_VERSION when it is false).
func (b *Broker) DownConversionEnabled(topicName string) (bool, error) {
	t, err := b.lookup(topicName)
	if err != nil {
		return false, err
	}
	return !t.settings.noDownConversion, nil
}

// TopicID returns a topic's 16-byte id; on a cluster also of a topic this
// broker holds no replica of (the cluster metadata's, as cached for
// remote topics), so that every broker describes a topic with its id:
// clients that produce and fetch by id (Produce v13, Fetch v13) refuse a
// topic whose brokers disagree.
func (b *Broker) TopicID(name string) ([16]byte, error) {
	t, err := b.lookup(name)
	if errors.Is(err, ErrUnknownTopic) {
		if remote, ok, rerr := b.topicHeldElsewhere(name); rerr == nil && ok {
			t, err = remote, nil
		}
	}
	if err != nil {
		return [16]byte{}, err
	}
	return decodeTopicID(t.meta.ID), nil
}

// TopicByID returns the name of the topic with id.
func (b *Broker) TopicByID(id [16]byte) (string, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for name, t := range b.mu.topics {
		if decodeTopicID(t.meta.ID) == id {
			return name, true
		}
	}
	return "", false
}

// decodeTopicID turns the stored base64url id into Kafka's 16 bytes; an
// unreadable id reads as all zeroes (Kafka's "no id").
func decodeTopicID(s string) [16]byte {
	var id [16]byte
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil && len(raw) == 16 {
		copy(id[:], raw)
	}
	return id
}

// DeleteRecords moves a partition's log start offset up to offset
// (OffsetLatest means the high watermark) and returns the new log start.
// Offsets above the high watermark are ErrOffsetOutOfRange.
func (b *Broker) DeleteRecords(topicName string, partition int32, offset int64) (int64, error) {
	if err := RefuseInternalTopic(topicName, "delete records of"); err != nil {
		return 0, err
	}
	p, err := b.partition(topicName, partition)
	if err != nil {
		return 0, err
	}
	hw := p.HighWatermark()
	if offset == OffsetLatest {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, fmt.Errorf("%w: %s-%d: offset %d is outside [0, %d]", ErrOffsetOutOfRange, topicName, partition, offset, hw)
	}
	if err := p.AdvanceStartOffset(offset); err != nil {
		return 0, appendError(topicName, partition, err)
	}
	return p.LogStartOffset(), nil
}

// MaxTimestampOffset returns the offset and timestamp of the first visible
// record with the largest timestamp (ListOffsets -3, KIP-734), or -1, -1
// for an empty partition. It scans every batch header below the high
// watermark, then decodes the one batch that holds the record: its cost
// grows with the log, which is acceptable for an admin query.
func (b *Broker) MaxTimestampOffset(topicName string, partition int32) (int64, int64, error) {
	p, err := b.partition(topicName, partition)
	if err != nil {
		return 0, 0, err
	}
	hw := p.HighWatermark()
	bestBase, bestTs := int64(-1), int64(-1)
	var buf []byte
	for offset := p.LogStartOffset(); offset < hw; {
		data, err := readBatches(p, offset, hw, 1<<20, buf[:0])
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		buf = data
		next := offset
		for len(data) >= recordbatch.HeaderSize {
			h, err := recordbatch.ParseHeader(data)
			if err != nil || h.Size() > int64(len(data)) {
				break
			}
			data = data[h.Size():]
			if h.LastOffset() >= offset && h.MaxTimestamp > bestTs {
				bestBase, bestTs = h.BaseOffset, h.MaxTimestamp
			}
			next = max(next, h.LastOffset()+1)
		}
		if next <= offset {
			break
		}
		offset = next
	}
	if bestBase < 0 {
		return -1, -1, nil
	}
	return b.firstRecordAtOrAfter(p, bestBase, bestTs, p.HighWatermark())
}
