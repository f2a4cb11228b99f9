package storage

import (
	"sort"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Transactions in a cleaning pass, by Kafka's LogCleaner rules:
//
//   - the batches of an aborted transaction are dropped whole, and never
//     mapped (their keys must not hide the committed values before them);
//     a producer's transactional batch is aborted when an entry of the
//     aborted-transaction index for that producer spans its offset (a
//     producer has one transaction open at a time);
//   - a marker stays while the pass met data of its transaction before it
//     (in the copy walk, which goes from the log start in order); once a
//     pass finds none, the marker gets a delete horizon (now +
//     delete.retention.ms, KIP-534, as tombstones do) and a pass after the
//     horizon drops it, so a consumer that read the transaction's data
//     still reads its marker for that long.
//
// The aborted index's entries stay after their data and markers go
// (Kafka drops them with the marker); a fetch lists them and the client
// finds no batch of theirs, which is harmless.

// dropMarkerAfterHorizon is a marker whose transaction has no data left:
// stamped with a delete horizon, then dropped once it passed.
const dropMarkerAfterHorizon BatchAction = 100

// txnClassifier is one pass's default Classify.
type txnClassifier struct {
	aborted map[int64][]AbortedTxn // by producer, ascending first offset
	// copying: the copy walk (cleanSegments) has begun; the map walk
	// starts at the first dirty offset and tracks no transaction.
	copying bool
	// seenData: producers with transactional data met since their last
	// marker in the copy walk.
	seenData map[int64]bool
}

func newTxnClassifier(entries []AbortedTxn) *txnClassifier {
	c := &txnClassifier{seenData: map[int64]bool{}}
	if len(entries) > 0 {
		c.aborted = make(map[int64][]AbortedTxn)
		for _, a := range entries {
			c.aborted[a.ProducerID] = append(c.aborted[a.ProducerID], a)
		}
		for _, list := range c.aborted {
			sort.Slice(list, func(i, j int) bool { return list[i].FirstOffset < list[j].FirstOffset })
		}
	}
	return c
}

func (c *txnClassifier) classify(h recordbatch.Header) BatchAction {
	switch {
	case h.IsTxnMarker():
		if !c.copying {
			return KeepBatch
		}
		hadData := c.seenData[h.ProducerID]
		delete(c.seenData, h.ProducerID)
		if hadData {
			return KeepBatch
		}
		return dropMarkerAfterHorizon
	case h.IsControl():
		return KeepBatch
	case h.IsTransactional() && h.ProducerID >= 0:
		if c.copying {
			c.seenData[h.ProducerID] = true
		}
		if c.isAborted(h.ProducerID, h.BaseOffset) {
			return DropBatch
		}
	}
	return CleanRecords
}

func (c *txnClassifier) isAborted(id, offset int64) bool {
	list := c.aborted[id]
	i := sort.Search(len(list), func(i int) bool { return list[i].FirstOffset > offset })
	return i > 0 && list[i-1].LastOffset >= offset
}

// cleanMarker keeps, stamps or drops a marker whose transaction has no
// data left.
func (p *cleanPass) cleanMarker(dst []byte, h recordbatch.Header, batch []byte, end int64) []byte {
	horizon, has := h.DeleteHorizon()
	switch {
	case has && p.now >= horizon:
		p.res.RecordsRemoved += int64(h.RecordCount)
		return dst
	case !has && h.LastOffset() < end:
		start := len(dst)
		dst = append(dst, batch...)
		recordbatch.SetDeleteHorizon(dst[start:], p.now+p.opts.DeleteRetention.Milliseconds())
		return dst
	}
	return append(dst, batch...)
}
