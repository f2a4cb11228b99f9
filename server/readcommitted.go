package server

import (
	"sort"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Server-side read_committed for the readers that cannot filter aborted
// transactions themselves (the HTTP gateway): what a Kafka client does
// with a FetchResponse's AbortedTransactions, done on the batches.

// DropAborted removes from data, whole batches from a read_committed fetch,
// the transactional batches of the aborted transactions and every control
// batch, in place, as Kafka's consumer does: a producer's batches are
// skipped from its aborted transaction's first offset until its abort
// marker.
func DropAborted(data []byte, aborted []AbortedTxn) []byte {
	sorted := append([]AbortedTxn(nil), aborted...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].FirstOffset < sorted[j].FirstOffset })
	skipping := map[int64]bool{}
	out := data[:0]
	for rest := data; len(rest) >= recordbatch.HeaderSize; {
		h, err := recordbatch.ParseHeader(rest)
		if err != nil || h.Size() > int64(len(rest)) {
			break // storage checked the batches; a torn tail is not served
		}
		batch := rest[:h.Size()]
		rest = rest[h.Size():]
		for len(sorted) > 0 && sorted[0].FirstOffset <= h.LastOffset() {
			skipping[sorted[0].ProducerID] = true
			sorted = sorted[1:]
		}
		switch {
		case h.IsControl():
			if h.IsTxnMarker() {
				delete(skipping, h.ProducerID) // its transaction ends here
			}
		case h.IsTransactional() && skipping[h.ProducerID]:
		default:
			out = append(out, batch...) // never ahead of batch: copy forward is safe
		}
	}
	return out
}

// BatchesEnd is the offset after the last whole batch of data, or -1 when
// data holds none: where a reader continues once it has taken everything
// (control batches and dropped aborted ones included).
func BatchesEnd(data []byte) int64 {
	end := int64(-1)
	for len(data) >= recordbatch.HeaderSize {
		h, err := recordbatch.ParseHeader(data)
		if err != nil || h.Size() > int64(len(data)) {
			break
		}
		end = h.LastOffset() + 1
		data = data[h.Size():]
	}
	return end
}
