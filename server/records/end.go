package records

import "github.com/ferry-mq/ferry/storage/recordbatch"

// NextOffset is the offset after the last whole batch of batches (control
// batches included), or -1 when it holds none: a reader walking a log by
// offset moves past batches Decode yields nothing from (transaction
// markers, records compacted away) without knowing their format.
func NextOffset(batches []byte) int64 {
	next := int64(-1)
	for len(batches) > 0 {
		batch, rest, err := recordbatch.Next(batches)
		if err != nil || batch == nil {
			break
		}
		next = recordbatch.ReadHeader(batch).LastOffset() + 1
		batches = rest
	}
	return next
}
