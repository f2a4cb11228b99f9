package kafka

// Zero-copy Fetch: on plaintext TCP connections, v4+ Fetch responses send
// the record batches straight from the segment files with sendfile, after
// a header encoded here. The header is hand-framed because kmsg cannot
// encode "bytes that will follow"; it mirrors kmsg's FetchResponse
// encoding field by field for v4–v17, and a test checks it byte for byte
// against kmsg for every version. A response using a field this encoder
// does not write (tagged fields ferry never sets) is read into memory and
// encoded by kmsg instead.
//
// Storage finds the byte ranges (server.Chunk, storage's chunks) and sends
// them itself, through its filesystem interface: each is opened by the
// reader goroutine right after the fetch, so retention unlinking the
// segment later does not matter (the descriptor keeps the inode), written
// by the writer goroutine (sendfile on TCP, a pooled buffer through TLS),
// and closed once sent. A file truncated under the send (only a log
// truncation does that) fails the chunk's write and closes the
// connection: the client never gets a response whose framing is wrong.

import (
	"encoding/binary"
	"net"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

// outgoing is one encoded response: buf, with each file section sent
// after buf[:section.at].
type outgoing struct {
	buf   []byte
	files []fileSection
}

// fileSection is an opened chunk of a segment file.
type fileSection struct {
	at    int // position in outgoing.buf after which the chunk goes
	chunk server.Chunk
	held  *atomic.Int32 // the connection's count of open section files
}

func (s *fileSection) close() {
	s.chunk.Close()
	s.held.Add(-1)
}

// close closes the files of a response that will not be (or was) sent.
func (o *outgoing) close() {
	for i := range o.files {
		o.files[i].close()
	}
	o.files = nil
}

// sendfileFetch is a Fetch response whose partitions' batches are in open
// files: parts[k] are the sections of the k-th partition in response order.
type sendfileFetch struct {
	*kmsg.FetchResponse
	parts [][]fileSection
}

func (sf *sendfileFetch) close() {
	for _, secs := range sf.parts {
		for i := range secs {
			secs[i].close()
		}
	}
	sf.parts = nil
}

// maxConnSendfileFiles caps the segment files one connection holds open
// for responses being sent or queued, so a wide fetch (one file per
// partition with data) or a deep pipeline cannot spend the node's file
// descriptors: partitions past the cap are read into memory instead.
const maxConnSendfileFiles = 16

// openSections opens the chunks for sending, while held (the connection's
// open files) stays within maxConnSendfileFiles; the chunks of partitions
// past that are read into resp's RecordBatches. A chunk whose segment is
// gone or changed since the read fails it (the caller reads again,
// copying). On error nothing stays open.
func openSections(resp *kmsg.FetchResponse, chunks [][]server.Chunk, held *atomic.Int32) ([][]fileSection, error) {
	parts := make([][]fileSection, len(chunks))
	k := 0
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if k >= len(chunks) {
				return parts, nil
			}
			cs := chunks[k]
			var err error
			if int(held.Load())+len(cs) > maxConnSendfileFiles {
				err = copyChunks(&resp.Topics[i].Partitions[j], cs)
			} else if len(cs) > 0 {
				parts[k], err = openPartSections(cs, held)
			}
			if err != nil {
				(&sendfileFetch{parts: parts}).close()
				return nil, err
			}
			k++
		}
	}
	return parts, nil
}

func openPartSections(cs []server.Chunk, held *atomic.Int32) ([]fileSection, error) {
	secs := make([]fileSection, 0, len(cs))
	for _, c := range cs {
		if err := c.Open(); err != nil {
			for i := range secs {
				secs[i].close()
			}
			return nil, err
		}
		held.Add(1)
		secs = append(secs, fileSection{chunk: c, held: held})
	}
	return secs, nil
}

// copyChunks reads cs into rp's RecordBatches, one file open at a time.
func copyChunks(rp *kmsg.FetchResponseTopicPartition, cs []server.Chunk) error {
	for _, c := range cs {
		if err := c.Open(); err != nil {
			return err
		}
		var err error
		rp.RecordBatches, err = c.AppendTo(rp.RecordBatches)
		c.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// sendfileEncodable reports whether encodeSendfileFetch writes every field
// of r that kmsg would: ferry sets no tagged field of a Fetch response.
func sendfileEncodable(r *kmsg.FetchResponse) bool {
	if r.Version < firstBatchFetchVersion || r.UnknownTags.Len() > 0 || len(r.Brokers) > 0 {
		return false
	}
	for i := range r.Topics {
		t := &r.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			d, l, sn := &p.DivergingEpoch, &p.CurrentLeader, &p.SnapshotID
			if p.UnknownTags.Len() > 0 || d.Epoch != -1 || d.EndOffset != -1 || d.UnknownTags.Len() > 0 ||
				l.LeaderID != -1 || l.LeaderEpoch != -1 || l.UnknownTags.Len() > 0 ||
				sn.EndOffset != -1 || sn.Epoch != -1 || sn.UnknownTags.Len() > 0 {
				return false
			}
			for _, a := range p.AbortedTransactions {
				if a.UnknownTags.Len() > 0 {
					return false
				}
			}
		}
	}
	return true
}

// encodeSendfileFetch frames sf as encodeResponse would frame it with the
// sections' bytes in RecordBatches; the files move to the result.
func encodeSendfileFetch(correlation int32, sf *sendfileFetch) outgoing {
	r := sf.FetchResponse
	if !sendfileEncodable(r) {
		return outgoing{buf: encodeResponse(correlation, materialize(sf))}
	}
	v, flex := r.Version, r.IsFlexible()
	be := binary.BigEndian
	out := outgoing{buf: make([]byte, 8, encodedSizeHint(r))}
	be.PutUint32(out.buf[4:], uint32(correlation))
	b := out.buf
	if flex {
		b = append(b, 0) // response header tags
	}
	b = be.AppendUint32(b, uint32(r.ThrottleMillis))
	if v >= 7 {
		b = be.AppendUint16(b, uint16(r.ErrorCode))
		b = be.AppendUint32(b, uint32(r.SessionID))
	}
	b = appendLen(b, len(r.Topics), flex)
	k, sent := 0, 0
	for i := range r.Topics {
		t := &r.Topics[i]
		if v >= firstTopicIDFetchVersion {
			b = append(b, t.TopicID[:]...)
		} else {
			b = appendString(b, t.Topic, flex)
		}
		b = appendLen(b, len(t.Partitions), flex)
		for j := range t.Partitions {
			var secs []fileSection
			if k < len(sf.parts) {
				secs = sf.parts[k]
			}
			k++
			b = appendPartitionHead(b, v, &t.Partitions[j])
			b, sent = appendRecordBatches(b, &out, t.Partitions[j].RecordBatches, secs, flex, sent)
			if flex {
				b = append(b, 0) // partition tags
			}
		}
		if flex {
			b = append(b, 0) // topic tags
		}
	}
	if flex {
		b = append(b, 0) // response tags
	}
	be.PutUint32(b, uint32(len(b)-4+sent))
	out.buf = b
	sf.parts = nil // the files are out's now
	return out
}

// encodedSizeHint is about what encodeSendfileFetch writes of r: the
// batches held in memory (small reads at a log's tail, copied) and the
// fixed fields, so the buffer is allocated once rather than grown.
func encodedSizeHint(r *kmsg.FetchResponse) int {
	n := 64
	for i := range r.Topics {
		t := &r.Topics[i]
		n += 32 + len(t.Topic)
		for j := range t.Partitions {
			n += 64 + len(t.Partitions[j].RecordBatches)
		}
	}
	return n
}

// appendPartitionHead appends a partition's fields before its record batches.
func appendPartitionHead(b []byte, v int16, p *kmsg.FetchResponseTopicPartition) []byte {
	be := binary.BigEndian
	flex := v >= 12
	b = be.AppendUint32(b, uint32(p.Partition))
	b = be.AppendUint16(b, uint16(p.ErrorCode))
	b = be.AppendUint64(b, uint64(p.HighWatermark))
	b = be.AppendUint64(b, uint64(p.LastStableOffset))
	if v >= 5 {
		b = be.AppendUint64(b, uint64(p.LogStartOffset))
	}
	if p.AbortedTransactions == nil {
		b = appendNullLen(b, flex)
	} else {
		b = appendLen(b, len(p.AbortedTransactions), flex)
		for _, a := range p.AbortedTransactions {
			b = be.AppendUint64(b, uint64(a.ProducerID))
			b = be.AppendUint64(b, uint64(a.FirstOffset))
			if flex {
				b = append(b, 0)
			}
		}
	}
	if v >= 11 {
		b = be.AppendUint32(b, uint32(p.PreferredReadReplica))
	}
	return b
}

// appendRecordBatches appends the RecordBatches length and its in-memory
// part, and registers secs to follow it; sent counts the section bytes.
func appendRecordBatches(b []byte, out *outgoing, data []byte, secs []fileSection, flex bool, sent int) ([]byte, int) {
	size := len(data)
	for _, s := range secs {
		size += s.chunk.Size()
	}
	if data == nil && len(secs) == 0 {
		return appendNullLen(b, flex), sent
	}
	b = appendLen(b, size, flex)
	b = append(b, data...)
	for _, s := range secs {
		s.at = len(b)
		out.files = append(out.files, s)
		sent += s.chunk.Size()
	}
	return b, sent
}

// appendLen appends an array or bytes length: INT32, or for flexible
// versions UNSIGNED_VARINT of length+1 (KIP-482).
func appendLen(b []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(b, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// appendNullLen appends the length of a null array or bytes.
func appendNullLen(b []byte, flex bool) []byte {
	if flex {
		return append(b, 0)
	}
	return binary.BigEndian.AppendUint32(b, 0xffffffff)
}

func appendString(b []byte, s string, flex bool) []byte {
	if flex {
		b = binary.AppendUvarint(b, uint64(len(s))+1)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	}
	return append(b, s...)
}

// materialize reads sf's sections into its RecordBatches (closing the
// files), for the copying encoder.
func materialize(sf *sendfileFetch) *kmsg.FetchResponse {
	defer sf.close()
	k := 0
	for i := range sf.Topics {
		for j := range sf.Topics[i].Partitions {
			if k < len(sf.parts) && len(sf.parts[k]) > 0 {
				p := &sf.Topics[i].Partitions[j]
				for _, s := range sf.parts[k] {
					var err error
					// On error, a shorter, whole-batch answer.
					if p.RecordBatches, err = s.chunk.AppendTo(p.RecordBatches); err != nil {
						break
					}
				}
			}
			k++
		}
	}
	return sf.FetchResponse
}

// send writes o to nc: the bytes before each section, the section
// (server.Chunk.WriteTo: sendfile on TCP), then the rest.
func (o *outgoing) send(nc net.Conn) error {
	prev := 0
	for i := range o.files {
		s := &o.files[i]
		if s.at > prev {
			if _, err := nc.Write(o.buf[prev:s.at]); err != nil {
				return err
			}
			prev = s.at
		}
		if hook := testHookBeforeSection.Load(); hook != nil {
			(*hook)()
		}
		if _, err := s.chunk.WriteTo(nc); err != nil {
			return err
		}
	}
	_, err := nc.Write(o.buf[prev:])
	return err
}

// Test hooks, run when set: before each section is sent, and before a
// fetch opens its sections.
var testHookBeforeSection, testHookBeforeOpenSections atomic.Pointer[func()]
