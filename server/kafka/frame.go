package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"sync"
)

// Reading a request frame costs memory in proportion to the bytes that
// have arrived, never to the size the client declares:
//
//   - the buffer starts at firstChunkBytes (or what bufio already holds)
//     and doubles as it fills, so a peer that declares 100 MiB and sends
//     ten bytes holds a few KiB;
//   - frames larger than unbudgetedFrameBytes also reserve their declared
//     size from the node-wide memoryBudget (queued.max.request.bytes) once
//     their first unbudgetedFrameBytes have arrived, and hold it until the
//     request has been served; a reserved frame is allocated whole, as
//     Kafka's MemoryPool does. A connection whose frame does not fit stops
//     reading until others release theirs. Small requests (metadata,
//     heartbeats, most fetches and produces) never wait behind large ones.
//
// So frame memory is at most max.connections × 2 × unbudgetedFrameBytes
// plus queued.max.request.bytes (without a budget: twice what arrived).
const (
	firstChunkBytes      = 4 << 10
	unbudgetedFrameBytes = 64 << 10
)

// frameLimits are the caps one frame is checked against.
type frameLimits struct {
	maxBytes int32         // socket.request.max.bytes
	budget   *memoryBudget // nil: no node-wide budget
}

// readFrameBody reads a frame of n bytes (size prefix already read and
// checked) from br. reserved is called once the frame's reservation is
// taken, so the caller can re-arm its read deadline after a wait; its
// error ends the read. release gives the reservation back; it is never
// nil and is safe to call once when err is nil.
func readFrameBody(ctx context.Context, br *bufio.Reader, n int, budget *memoryBudget, reserved func() error) (frame []byte, release func(), err error) {
	release = func() {}
	pooled := n > unbudgetedFrameBytes && budget != nil && peekProduce(br)
	var buf []byte
	if pooled {
		staging := stagingPool.Get().(*[]byte)
		defer stagingPool.Put(staging)
		buf = (*staging)[:0]
	} else {
		buf = make([]byte, 0, min(n, max(firstChunkBytes, br.Buffered())))
	}
	if buf, err = readGrowing(br, buf, min(n, unbudgetedFrameBytes)); err != nil {
		return nil, release, err
	}
	if n > unbudgetedFrameBytes && budget != nil {
		if release, err = budget.acquire(ctx, int64(n)); err != nil {
			return nil, func() {}, err
		}
		if err := reserved(); err != nil {
			release()
			return nil, func() {}, err
		}
		// Paid for: allocate once rather than copy while doubling.
		whole, put := frameBuffer(pooled, n)
		buf = append(whole, buf...)
		if put != nil {
			budgetRelease := release
			release = func() { put(); budgetRelease() }
		}
	}
	if buf, err = readGrowing(br, buf, n); err != nil {
		release()
		return nil, func() {}, err
	}
	return buf, release, nil
}

// readGrowing reads until buf holds want bytes, doubling its capacity
// only when it is full: what it allocates is at most twice what arrived.
func readGrowing(r io.Reader, buf []byte, want int) ([]byte, error) {
	for len(buf) < want {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(want, max(2*cap(buf), firstChunkBytes)))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):min(cap(buf), want)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

// frameSize reads and checks a frame's size prefix, and for frames above
// maxNonProduceBytes that the frame is a Produce (peeking at its key).
func frameSize(br *bufio.Reader, maxBytes int32) (int, error) {
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	switch {
	case n < minFrameBytes:
		return 0, errFrame{"request frame of " + strconv.Itoa(int(n)) + " bytes is too short"}
	case n > maxBytes:
		return 0, errFrame{"request frame of " + strconv.Itoa(int(n)) +
			" bytes exceeds socket.request.max.bytes " + strconv.Itoa(int(maxBytes))}
	}
	if n > maxNonProduceBytes {
		key, err := br.Peek(2)
		if err != nil {
			return 0, err
		}
		if k := int16(binary.BigEndian.Uint16(key)); k != produceKey {
			return 0, errFrame{"request frame of " + strconv.Itoa(int(n)) + " bytes for api key " +
				strconv.Itoa(int(k)) + " exceeds " + strconv.Itoa(maxNonProduceBytes) + ", the cap for requests other than Produce"}
		}
	}
	return int(n), nil
}

// memoryBudget is the node-wide allowance for request frames being read
// or served (Kafka's queued.max.request.bytes, its MemoryPool). Waiters
// are served first come, first served, so a large frame is not starved by
// a stream of smaller ones. A request larger than the whole budget is
// admitted alone, once everything else has been released.
type memoryBudget struct {
	size int64
	// observe is told the reserved bytes and waiters after each change,
	// under mu (so in order); it must not block.
	observe func(reserved int64, waiting int)
	mu      struct {
		sync.Mutex
		free    int64
		waiters []*budgetWaiter // FIFO
	}
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when n has been taken for this waiter
}

func newMemoryBudget(size int64, observe func(reserved int64, waiting int)) *memoryBudget {
	if observe == nil {
		observe = func(int64, int) {}
	}
	b := &memoryBudget{size: size, observe: observe}
	b.mu.free = size
	return b
}

// acquire takes n bytes (at most the whole budget), waiting until they
// are free or ctx ends. The returned func gives them back.
func (b *memoryBudget) acquire(ctx context.Context, n int64) (func(), error) {
	n = min(n, b.size)
	b.mu.Lock()
	if len(b.mu.waiters) == 0 && b.mu.free >= n {
		b.mu.free -= n
		b.observeLocked()
		b.mu.Unlock()
		return b.releaser(n), nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.mu.waiters = append(b.mu.waiters, w)
	b.observeLocked()
	b.mu.Unlock()
	select {
	case <-w.ready:
		return b.releaser(n), nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while ctx ended: hand it back
		b.mu.free += n
	default:
		b.mu.waiters = removeWaiter(b.mu.waiters, w)
	}
	b.grantLocked() // w may have blocked the queue's head
	return nil, ctx.Err()
}

func (b *memoryBudget) releaser(n int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.mu.free += n
			b.grantLocked()
			b.mu.Unlock()
		})
	}
}

// grantLocked wakes waiters from the head of the queue while they fit.
// b.mu must be held.
func (b *memoryBudget) grantLocked() {
	for len(b.mu.waiters) > 0 && b.mu.waiters[0].n <= b.mu.free {
		w := b.mu.waiters[0]
		b.mu.waiters = b.mu.waiters[1:]
		b.mu.free -= w.n
		close(w.ready)
	}
	b.observeLocked()
}

func (b *memoryBudget) observeLocked() { b.observe(b.size-b.mu.free, len(b.mu.waiters)) }

// inUse is the bytes currently reserved.
func (b *memoryBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size - b.mu.free
}

// waiting is how many connections wait for budget.
func (b *memoryBudget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.mu.waiters)
}

func removeWaiter(ws []*budgetWaiter, w *budgetWaiter) []*budgetWaiter {
	for i, x := range ws {
		if x == w {
			return append(ws[:i], ws[i+1:]...)
		}
	}
	return ws
}

// Produce frames are the large ones a busy node reads back to back; each
// would otherwise be a fresh allocation the size of the request, and the
// garbage collector and the kernel's page faults then cost more than
// validating the records. They are pooled by power-of-two size. Only
// Produce: its handler copies what it keeps (storage writes the batches
// out; producer state keeps numbers), whereas other requests' decoded
// fields alias the frame and may be kept (group member metadata).
const (
	minPooledFrameBits = 17 // 128 KiB, just above unbudgetedFrameBytes
	maxPooledFrameBits = 24 // 16 MiB; larger produce frames are rare
)

var framePools [maxPooledFrameBits + 1]sync.Pool

// stagingPool holds the buffers a large Produce frame's first
// unbudgetedFrameBytes are read into before its reservation is taken.
var stagingPool = sync.Pool{New: func() any {
	b := make([]byte, 0, unbudgetedFrameBytes)
	return &b
}}

// peekProduce says whether the frame br is about to deliver is a Produce.
func peekProduce(br *bufio.Reader) bool {
	key, err := br.Peek(2)
	return err == nil && int16(binary.BigEndian.Uint16(key)) == produceKey
}

// frameBuffer returns an empty buffer with room for an n-byte frame, and
// the func that gives it back to its pool once the request has been served
// (nil when the buffer is not pooled).
func frameBuffer(pooled bool, n int) ([]byte, func()) {
	bits := max(minPooledFrameBits, bitsFor(n))
	if !pooled || bits > maxPooledFrameBits {
		return make([]byte, 0, n), nil
	}
	pool := &framePools[bits]
	b, _ := pool.Get().(*[]byte)
	if b == nil {
		b = new([]byte)
		*b = make([]byte, 0, 1<<bits)
	}
	return (*b)[:0], func() { pool.Put(b) }
}

// bitsFor is the smallest k with 1<<k >= n.
func bitsFor(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}
