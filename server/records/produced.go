package records

import (
	"fmt"
	"sync"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Produced is one partition's batches from a producer, checked once by
// CheckProduced and kept parsed, and decompressed, for whatever else looks
// at them before the append: record checks and schema validation
// (Records) and recompression (Recompress). So a produced batch is parsed
// once and decompressed at most once, however many checks a topic's
// configuration asks for. Release gives its buffers back; a Produced is
// not safe for concurrent use.
type Produced struct {
	batches []producedBatch
	bufs    [][]byte // decompressed records, one buffer per compressed batch
	headers []Header // the current record's headers, for Records
}

type producedBatch struct {
	h    recordbatch.Header
	raw  []byte // the batch as the producer sent it
	recs []byte // its records: raw's, or decompressed into a buffer
}

var producedPool = sync.Pool{New: func() any { return new(Produced) }}

// CheckProduced checks a producer's concatenated batches as Validate
// checks one, batch by batch, and returns them parsed. Errors wrap
// ErrCorrupt, ErrInvalid, ErrTooLarge or ErrUnsupportedCodec, as
// Validate's do; nothing is kept on error.
func CheckProduced(data []byte, maxDecompressed int) (*Produced, error) {
	p := producedPool.Get().(*Produced)
	for len(data) > 0 {
		h, err := recordbatch.ParseHeader(data)
		if err != nil {
			p.Release()
			return nil, err
		}
		if h.Size() > int64(len(data)) {
			p.Release()
			return nil, fmt.Errorf("batch of %d bytes, %d present: %w", h.Size(), len(data), ErrCorrupt)
		}
		batch := data[:h.Size()]
		recs, err := p.check(&h, batch, maxDecompressed)
		if err != nil {
			p.Release()
			return nil, fmt.Errorf("validate batch: %w", err)
		}
		p.batches = append(p.batches, producedBatch{h: h, raw: batch, recs: recs})
		data = data[len(batch):]
	}
	return p, nil
}

// check applies Validate's rules to one batch and returns its records,
// decompressed into the next buffer when compressed.
func (p *Produced) check(h *recordbatch.Header, batch []byte, maxDecompressed int) ([]byte, error) {
	if err := check(h, batch); err != nil {
		return nil, err
	}
	if err := checkProduced(h); err != nil {
		return nil, err
	}
	recs := batch[recordbatch.HeaderSize:]
	if codecOf(h) != None {
		i := len(p.batches)
		if i == len(p.bufs) {
			p.bufs = append(p.bufs, nil)
		}
		out, err := Decompress(codecOf(h), p.bufs[i][:0], recs, maxDecompressed)
		if err != nil {
			return nil, err
		}
		p.bufs[i], recs = out, out
	}
	return recs, validateRecords(recs, h.RecordCount)
}

// Batches is the number of batches.
func (p *Produced) Batches() int { return len(p.batches) }

// Header is the header of batch i.
func (p *Produced) Header(i int) recordbatch.Header { return p.batches[i].h }

// Records calls fn for every record, in order, as Decode would (offsets
// count from 0, as producers send them); fn returning false ends the walk.
// The Record aliases the batches or a buffer of p: valid until fn returns.
func (p *Produced) Records(fn func(Record) bool) error {
	for i := range p.batches {
		pb := &p.batches[i]
		recs := pb.recs
		for n := int32(0); n < pb.h.RecordCount; n++ {
			v, rest, err := readRecord(recs) // framing checked by CheckProduced
			if err != nil {
				return fmt.Errorf("record %d of %d: %w", n, pb.h.RecordCount, err)
			}
			recs = rest
			if !fn(makeRecord(&pb.h, &v, &p.headers)) {
				return nil
			}
		}
	}
	return nil
}

// Recompress appends the batches to dst as Recompress would, each stored
// with codec at level, from the records CheckProduced already
// decompressed.
func (p *Produced) Recompress(dst []byte, codec Codec, level int) ([]byte, error) {
	for i := range p.batches {
		pb := &p.batches[i]
		if codecOf(&pb.h) == codec {
			dst = append(dst, pb.raw...)
			continue
		}
		var err error
		if dst, err = appendRecompressed(dst, pb.raw, pb.h, pb.recs, codec, level); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// Release gives p's buffers back for the next produce; p must not be used
// after it.
func (p *Produced) Release() {
	clear(p.batches) // drop references into the request
	p.batches = p.batches[:0]
	for i := range p.bufs {
		if cap(p.bufs[i]) > maxPooledBuf {
			p.bufs[i] = nil
		}
	}
	clear(p.headers[:cap(p.headers)])
	p.headers = p.headers[:0]
	producedPool.Put(p)
}
