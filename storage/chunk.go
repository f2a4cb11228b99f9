package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// ErrChunkChanged: a chunk's segment file no longer holds what the read
// found there (a truncation cut it, or another batch starts there, as
// after the cleaner replaced the segment).
var ErrChunkChanged = errors.New("segment file changed since the read")

// Chunk is a byte range of one segment file holding whole batches, found by
// a read (ReadResult.Chunks), for a caller that sends the bytes from the
// file rather than from memory: the Kafka listener's zero-copy fetch.
//
// The file is reached through the log's FS, like every other file access,
// so fault-injecting and in-memory filesystems reach this path too. Open
// pins the bytes: it opens the file on a descriptor of its own, so
// retention unlinking the segment afterwards does not matter, and checks
// that a batch still starts there. WriteTo sends the bytes (sendfile when
// the FS is the real disk and the writer takes bytes from a file itself, as
// a TCP connection does), AppendTo copies them, Close gives the descriptor
// back. An opened Chunk belongs to one goroutine at a time.
type Chunk struct {
	fs   FS
	path string
	pos  int64
	size int
	// base is the base offset of the batch the read found at pos: the
	// cleaner may have swapped a new file in under the same name, where
	// pos holds another batch, or the same batch with records removed
	// (then what follows is the new file's next batches, equally valid).
	base int64

	f   File                         // while open
	hdr [recordbatch.HeaderSize]byte // Open's check, without an allocation
	lr  io.LimitedReader             // hands the range to sendfile without an allocation
}

// Size is the number of bytes in the chunk.
func (c *Chunk) Size() int { return c.size }

// Open opens the chunk's file and checks that a batch of at most Size bytes
// starts at the chunk. A segment deleted since the read gives an error
// satisfying errors.Is(err, fs.ErrNotExist); one that changed gives
// ErrChunkChanged. Either way nothing stays open.
func (c *Chunk) Open() error {
	f, err := c.fs.OpenFile(c.path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.ReadAt(c.hdr[:], c.pos); err != nil {
		f.Close()
		return fmt.Errorf("%w: %s at %d: %v", ErrChunkChanged, c.path, c.pos, err)
	}
	if h, err := recordbatch.ParseHeader(c.hdr[:]); err != nil || h.Size() > int64(c.size) || h.BaseOffset != c.base {
		f.Close()
		return fmt.Errorf("%w: %s at %d", ErrChunkChanged, c.path, c.pos)
	}
	c.f = f
	return nil
}

// Close closes the file Open opened.
func (c *Chunk) Close() error {
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	return err
}

// chunkBuffers are the buffers chunks are copied through where the writer
// cannot take them from the file itself (TLS, an FS other than the disk).
var chunkBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// WriteTo writes the opened chunk's bytes to w. On the real disk, to a
// writer with ReadFrom (a *net.TCPConn), the bytes go with sendfile (the
// connection's ReadFrom finds the *os.File behind an io.LimitedReader);
// otherwise through a pooled buffer. A file cut short under the send is
// ErrChunkChanged, after n bytes went out.
func (c *Chunk) WriteTo(w io.Writer) (n int64, err error) {
	if c.f == nil {
		return 0, fmt.Errorf("write chunk of %s at %d: not open", c.path, c.pos)
	}
	if of, ok := c.f.(osFile); ok {
		// sendfile sends from the descriptor's offset: this one is ours.
		if _, err := of.Seek(c.pos, io.SeekStart); err != nil {
			return 0, err
		}
		c.lr = io.LimitedReader{R: of.File, N: int64(c.size)}
		n, err = copyChunk(w, &c.lr)
	} else {
		n, err = copyChunk(w, io.NewSectionReader(c.f, c.pos, int64(c.size)))
	}
	if err == nil && n != int64(c.size) {
		err = fmt.Errorf("%w: sent %d of %d bytes of %s at %d", ErrChunkChanged, n, c.size, c.path, c.pos)
	}
	return n, err
}

func copyChunk(w io.Writer, r io.Reader) (int64, error) {
	if _, ok := w.(io.ReaderFrom); ok {
		return io.Copy(w, r)
	}
	buf := chunkBuffers.Get().(*[]byte)
	defer chunkBuffers.Put(buf)
	return io.CopyBuffer(w, r, *buf)
}

// AppendTo appends the opened chunk's bytes to dst. A file cut short since
// Open is ErrChunkChanged, with dst returned as it was.
func (c *Chunk) AppendTo(dst []byte) ([]byte, error) {
	if c.f == nil {
		return dst, fmt.Errorf("read chunk of %s at %d: not open", c.path, c.pos)
	}
	start := len(dst)
	dst = append(dst, make([]byte, c.size)...)
	if _, err := c.f.ReadAt(dst[start:], c.pos); err != nil {
		return dst[:start], fmt.Errorf("%w: %s at %d: %v", ErrChunkChanged, c.path, c.pos, err)
	}
	return dst, nil
}
