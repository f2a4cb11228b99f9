package kafka

// Fetch v0–v3 from clients older than 0.11, which read only the old message
// formats: magic 0 for v0–v1, magic 1 for v2–v3. The stored magic 2 batches
// are down-converted per partition after the fetch (records.AppendLegacy),
// uncompressed even when the batch was compressed (Kafka re-compresses into
// a wrapper message; uncompressed is valid for every old client), without
// headers, which the old formats cannot carry (Kafka drops them too), and
// from the fetch offset on. PartitionMaxBytes, and v3's response MaxBytes,
// bound the converted bytes: whole messages only, and the first partition
// with data always gets its first message, so an old consumer never stalls
// on a record larger than its limit. MinBytes is judged on the stored bytes.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
)

// firstBatchFetchVersion is the first Fetch version whose answer carries
// record batches (magic 2) rather than message sets.
const firstBatchFetchVersion = 4

// downConvertFetch rewrites resp's record batches as message sets when
// req's version predates record batches; it returns resp for chaining.
func (s *Server) downConvertFetch(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) *kmsg.FetchResponse {
	if req.Version >= firstBatchFetchVersion {
		return resp
	}
	magic := int8(1)
	if req.Version < 2 {
		magic = 0
	}
	budget := math.MaxInt
	if req.Version == 3 && req.MaxBytes > 0 {
		budget = int(req.MaxBytes)
	}
	maxDecompressed := s.broker.Config().MaxDecompressedBytes
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			rp := &resp.Topics[i].Partitions[j]
			if len(rp.RecordBatches) == 0 {
				continue
			}
			fp := requestedPartition(req, i, rp.Partition)
			limit := budget
			if fp.PartitionMaxBytes > 0 {
				limit = min(limit, int(fp.PartitionMaxBytes))
			}
			if budget <= 0 {
				rp.RecordBatches = []byte{} // the first partition took it all
				continue
			}
			set, err := records.AppendLegacy(nil, rp.RecordBatches, magic, fp.FetchOffset, limit, maxDecompressed)
			if err != nil {
				s.logger.Warn("fetch: cannot down-convert stored batches", "topic", req.Topics[i].Topic,
					"partition", rp.Partition, "err", err)
				rp.ErrorCode, rp.RecordBatches = kerr.CorruptMessage.Code, []byte{}
				continue
			}
			rp.RecordBatches = set
			budget -= len(set)
		}
	}
	return resp
}

// requestedPartition is the request's entry for partition of the answer's
// topic i (answers follow the request's order); a zero entry, which fetches
// from offset 0 without a limit, if the answer strays from it.
func requestedPartition(req *kmsg.FetchRequest, i int, partition int32) kmsg.FetchRequestTopicPartition {
	if i < len(req.Topics) {
		for _, fp := range req.Topics[i].Partitions {
			if fp.Partition == partition {
				return fp
			}
		}
	}
	return kmsg.FetchRequestTopicPartition{Partition: partition}
}
