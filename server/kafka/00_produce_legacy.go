package kafka

// Produce v0–v2 from clients older than 0.11, which send message sets of
// magic 0 or 1: each is converted up to one magic 2 batch (records.UpConvert)
// before the core validates and appends it, so the log holds only what a
// current client would have sent. Records keep their keys, values and order;
// magic 1 timestamps are kept, magic 0 messages (which have none) get the
// broker's clock, where Kafka would store -1 ("no timestamp"); a compressed
// wrapper's codec becomes the batch's. Kafka refuses magic 0/1 in v3+, and so
// does ferry (INVALID_RECORD).

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server/records"
)

// lastMessageSetProduceVersion is the last Produce version that may carry
// magic 0 and 1 message sets.
const lastMessageSetProduceVersion = 2

// upConvertProduced returns data as magic 2 batches: unchanged when it
// already is, converted when version allows message sets, else an error
// code for the partition.
func (s *Server) upConvertProduced(version int16, data []byte) ([]byte, int16, error) {
	magic, ok := records.LegacyMagic(data)
	if !ok || magic >= 2 {
		return data, 0, nil
	}
	if version > lastMessageSetProduceVersion {
		return nil, codeInvalidRecord, fmt.Errorf("produce v%d carries magic %d: v3 and later take record batches (magic 2) only", version, magic)
	}
	out, err := records.UpConvert(nil, data, time.Now().UnixMilli(), s.broker.Config().MaxDecompressedBytes)
	if err != nil {
		return nil, legacyErrorCode(err), err
	}
	return out, 0, nil
}

func legacyErrorCode(err error) int16 {
	switch {
	case errors.Is(err, records.ErrCorrupt):
		return kerr.CorruptMessage.Code
	case errors.Is(err, records.ErrTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, records.ErrUnsupportedCodec):
		return kerr.UnsupportedCompressionType.Code
	}
	return codeInvalidRecord
}
