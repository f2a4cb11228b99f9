package kafka

// ListOffsets v0, which Burrow, sarama's GetOffset and other pre-0.10.1
// tools still send: each partition asks for up to MaxNumOffsets offsets
// "before" Timestamp and gets them in OldStyleOffsets. -1 answers the high
// watermark (what Kafka gives a consumer for "latest"), -2 the log start
// offset. Kafka answers any other timestamp from segment modification times
// and may add segment base offsets when MaxNumOffsets > 1; ferry answers
// at most one offset: the first record whose timestamp is at least
// Timestamp (the end of the records before it), or the high watermark when
// every record is older. MaxNumOffsets <= 0 gets an empty list, as in Kafka.

import "github.com/twmb/franz-go/pkg/kmsg"

func (s *Server) listOldStyleOffsets(topic string, p *kmsg.ListOffsetsRequestTopicPartition, rp *kmsg.ListOffsetsResponseTopicPartition) {
	rp.OldStyleOffsets = []int64{}
	offset, _, err := s.broker.ListOffset(topic, p.Partition, p.Timestamp)
	if err != nil {
		rp.ErrorCode = errorCode(err)
		return
	}
	if offset < 0 { // every record is older than the timestamp
		if part, err := s.broker.Partition(topic, p.Partition); err == nil {
			offset = part.HighWatermark()
		}
	}
	if p.MaxNumOffsets > 0 {
		rp.OldStyleOffsets = append(rp.OldStyleOffsets, offset)
	}
}
