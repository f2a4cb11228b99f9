package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"

	"github.com/ferry-mq/ferry/test/harness"
)

// sampleFetchResponse has what ferry's answers can hold: several topics,
// partitions with batches in files (one or two sections), in memory, none
// (empty and null), an error partition and aborted transactions.
func sampleFetchResponse(t *testing.T, v int16) (*kmsg.FetchResponse, [][]server.Chunk) {
	dir := t.TempDir()
	file := func(name string, content []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b1 := fixedBatch(t, records.BatchOptions{}, "a", "bb", "ccc")
	b2 := fixedBatch(t, records.BatchOptions{Codec: records.Zstd}, strings.Repeat("z", 3000), "y")
	f1 := file("1.log", append(append([]byte("junk"), b1...), b2...))
	f2 := file("2.log", b2)
	resp := kmsg.NewPtrFetchResponse()
	resp.Version, resp.ThrottleMillis, resp.ErrorCode, resp.SessionID = v, 7, 0, 0
	var chunks [][]server.Chunk
	addTopic := func(name string, id byte, parts ...func(*kmsg.FetchResponseTopicPartition) []server.Chunk) {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = name, [16]byte{id, 1, 2, 3}
		for i, fill := range parts {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = int32(i), 100+int64(i), 99, 3
			rp.RecordBatches = []byte{}
			chunks = append(chunks, fill(&rp))
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	twoSections := func(*kmsg.FetchResponseTopicPartition) []server.Chunk {
		return []server.Chunk{&fileChunk{path: f1, pos: 4, size: len(b1) + len(b2)}, &fileChunk{path: f2, size: len(b2)}}
	}
	oneSection := func(*kmsg.FetchResponseTopicPartition) []server.Chunk {
		return []server.Chunk{&fileChunk{path: f1, pos: 4, size: len(b1)}}
	}
	empty := func(*kmsg.FetchResponseTopicPartition) []server.Chunk { return nil }
	failed := func(rp *kmsg.FetchResponseTopicPartition) []server.Chunk {
		rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = 1, -1, -1, -1
		return nil
	}
	inMemory := func(rp *kmsg.FetchResponseTopicPartition) []server.Chunk {
		rp.RecordBatches = b1
		return nil
	}
	null := func(rp *kmsg.FetchResponseTopicPartition) []server.Chunk {
		rp.RecordBatches = nil
		return nil
	}
	aborted := func(rp *kmsg.FetchResponseTopicPartition) []server.Chunk {
		rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 5, FirstOffset: 9}, {ProducerID: 6, FirstOffset: 10}}
		return oneSection(rp)
	}
	noAborted := func(rp *kmsg.FetchResponseTopicPartition) []server.Chunk {
		rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		rp.PreferredReadReplica = 3
		return twoSections(rp)
	}
	addTopic("orders", 1, twoSections, empty, failed, oneSection)
	addTopic("", 2)
	addTopic(strings.Repeat("t", 200), 3, inMemory, null, aborted, noAborted, empty)
	return resp, chunks
}

// fixedBatch is batch with fixed timestamps, so two calls build the same bytes.
func fixedBatch(t *testing.T, opts records.BatchOptions, values ...string) []byte {
	var b records.Builder
	for _, v := range values {
		b.Add(records.Record{Value: []byte(v), Timestamp: 1700000000000})
	}
	data, err := b.AppendBatch(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// flatten is what the writer puts on the wire for o.
func flatten(t *testing.T, o outgoing) []byte {
	var b []byte
	prev := 0
	for _, s := range o.files {
		b = append(b, o.buf[prev:s.at]...)
		prev = s.at
		var err error
		if b, err = s.chunk.AppendTo(b); err != nil {
			t.Fatal(err)
		}
	}
	return append(b, o.buf[prev:]...)
}

// The hand-framed header with the sections' bytes is, byte for byte, what
// kmsg encodes with those bytes in RecordBatches, for every version with
// record batches.
func TestSendfileFetchEncodingMatchesKmsg(t *testing.T) {
	for v := int16(firstBatchFetchVersion); v <= 17; v++ {
		resp, chunks := sampleFetchResponse(t, v)
		parts, err := openSections(resp, chunks, new(atomic.Int32))
		if err != nil {
			t.Fatal(err)
		}
		sf := &sendfileFetch{FetchResponse: resp, parts: parts}
		out := encodeSendfileFetch(42, sf)
		got := flatten(t, out)
		out.close()

		want := encodeResponse(42, materializeChunks(t, resp, chunks))
		if !bytes.Equal(got, want) {
			t.Fatalf("v%d: sendfile framing differs from kmsg's:\n got %x\nwant %x", v, got, want)
		}
		if len(out.files) != 0 || len(out.buf) > 2048 {
			t.Fatalf("v%d: %d files left open, %d header bytes", v, len(out.files), len(out.buf))
		}
	}
}

// materializeChunks puts the chunks' bytes into RecordBatches.
func materializeChunks(t *testing.T, resp *kmsg.FetchResponse, chunks [][]server.Chunk) *kmsg.FetchResponse {
	k := 0
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			rp := &resp.Topics[i].Partitions[j]
			for _, c := range chunks[k] {
				fc := c.(*fileChunk)
				f, err := os.ReadFile(fc.path)
				if err != nil {
					t.Fatal(err)
				}
				rp.RecordBatches = append(rp.RecordBatches, f[fc.pos:fc.pos+int64(fc.size)]...)
			}
			k++
		}
	}
	return resp
}

// A response with a field the hand framing does not write goes through
// kmsg, batches read into memory, and leaves no file open.
func TestSendfileFetchFallsBackToKmsgForTaggedFields(t *testing.T) {
	resp, chunks := sampleFetchResponse(t, 16)
	resp.Topics[0].Partitions[0].CurrentLeader.LeaderID = 1
	parts, err := openSections(resp, chunks, new(atomic.Int32))
	if err != nil {
		t.Fatal(err)
	}
	out := encodeSendfileFetch(9, &sendfileFetch{FetchResponse: resp, parts: parts})
	if len(out.files) != 0 {
		t.Fatalf("%d sections kept", len(out.files))
	}
	resp2, _ := sampleFetchResponse(t, 16)
	resp2.Topics[0].Partitions[0].CurrentLeader.LeaderID = 1
	if want := encodeResponse(9, materializeChunks(t, resp2, chunks)); !bytes.Equal(out.buf, want) {
		t.Fatal("fallback encoding differs from kmsg's")
	}
}

// secondListener serves ts's broker on another port with cfg changed.
func secondListener(t *testing.T, ts *testServer, mutate func(*Config)) *testServer {
	cfg := Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(ts.logs, nil))}
	mutate(&cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.AdvertisedAddr = ln.Addr().String()
	s, err := New(ts.broker, ts.groups, cfg)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return &testServer{Server: s, broker: ts.broker, groups: ts.groups, addr: ln.Addr().String()}
}

// rawFetch sends req at v and returns the response frame as received.
func rawFetch(t *testing.T, c *client, req *kmsg.FetchRequest, v int16) []byte {
	t.Helper()
	req.SetVersion(v)
	c.send(req)
	frame, err := c.readFrame()
	if err != nil {
		t.Fatalf("v%d: %v", v, err)
	}
	return frame
}

// fetchAll asks for every partition of topic from 0 (partition 3 past its
// end, so with an error), plus a topic that does not exist.
func fetchAll(ids map[string][16]byte, partitionMax int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 0, 50<<20
	for _, name := range []string{"zc", "zc-missing"} {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = name, ids[name]
		for p := int32(0); p < 4; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, partitionMax
			if p == 3 {
				rp.FetchOffset = 1000
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// fillZeroCopyTopic writes compressed and uncompressed batches into three
// of four partitions of "zc", over several segments; partition 2 stays empty.
func fillZeroCopyTopic(t *testing.T, ts *testServer) map[string][16]byte {
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "zc", Partitions: 4, ReplicationFactor: 1,
		Configs: map[string]string{"segment.bytes": "4096"}}); err != nil {
		t.Fatal(err)
	}
	c := ts.dial(t)
	codecs := []records.Codec{records.None, records.Gzip, records.Snappy, records.LZ4, records.Zstd}
	for i := 0; i < 30; i++ {
		for _, p := range []int32{0, 1, 3} {
			data := batch(t, records.BatchOptions{Codec: codecs[i%len(codecs)]}, strings.Repeat("v", 100+i*37), "w")
			resp := do[*kmsg.ProduceResponse](c, produceReq("zc", p, -1, data), 9)
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("produce: error %d", code)
			}
		}
	}
	id, err := ts.broker.TopicID("zc")
	if err != nil {
		t.Fatal(err)
	}
	return map[string][16]byte{"zc": id, "zc-missing": {9, 9, 9}}
}

// What a sendfile connection receives is byte for byte what a copying
// listener sends, for every version with record batches, across segments,
// compressed and not, with empty, failed and unknown partitions, and with
// a partition limit and a fetch.max.bytes cap that cut batches.
func TestSendfileFetchWireMatchesCopying(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.FetchMaxBytes = 6000 })
	ids := fillZeroCopyTopic(t, ts)
	copying := secondListener(t, ts, func(c *Config) { c.FetchMaxBytes, c.DisableSendfile = 6000, true })
	zc, cp := ts.dial(t), copying.dial(t)
	var sections atomic.Int64
	setSectionHook(t, func() { sections.Add(1) })
	for v := int16(firstBatchFetchVersion); v <= 17; v++ {
		for _, partitionMax := range []int32{1 << 20, 700, 1} {
			got := rawFetch(t, zc, fetchAll(ids, partitionMax), v)
			want := rawFetch(t, cp, fetchAll(ids, partitionMax), v)
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d partition max %d: sendfile answer (%d bytes) differs from the copying one (%d bytes)",
					v, partitionMax, len(got), len(want))
			}
			if len(got) > 6000+2000 {
				t.Fatalf("v%d: %d-byte answer passes fetch.max.bytes 6000", v, len(got))
			}
		}
	}
	if sections.Load() == 0 {
		t.Fatal("no section was sent from a file")
	}
	resp := do[*kmsg.FetchResponse](zc, fetchAll(ids, 1<<20), 11)
	if n := len(resp.Topics[0].Partitions[0].RecordBatches); n == 0 {
		t.Fatal("partition 0 answered no batches")
	}
}

func setSectionHook(t *testing.T, fn func()) {
	testHookBeforeSection.Store(&fn)
	t.Cleanup(func() { testHookBeforeSection.Store(nil) })
}

// Retention unlinking the segment while its bytes are being sent does not
// change them: the open descriptor keeps the file.
func TestSendfileFetchSurvivesSegmentDeletion(t *testing.T) {
	ts := newTestServer(t)
	ids := fillZeroCopyTopic(t, ts)
	copying := secondListener(t, ts, func(c *Config) { c.DisableSendfile = true })
	want := rawFetch(t, copying.dial(t), fetchAll(ids, 1<<20), 12)
	dir := filepath.Join(ts.cfg.DataDir, "zc-0")
	setSectionHook(t, func() {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, p := range logs {
			os.Remove(p)
		}
	})
	got := rawFetch(t, ts.dial(t), fetchAll(ids, 1<<20), 12)
	if !bytes.Equal(got, want) {
		t.Fatalf("answer changed when its segments were unlinked mid-send")
	}
}

// A segment truncated under the send closes the connection: the client
// never gets a response whose framing is wrong.
func TestSendfileFetchTruncatedSegmentClosesConnection(t *testing.T) {
	ts := newTestServer(t)
	ids := fillZeroCopyTopic(t, ts)
	dir := filepath.Join(ts.cfg.DataDir, "zc-0")
	setSectionHook(t, func() {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, p := range logs {
			os.Truncate(p, 10)
		}
	})
	c := ts.dial(t)
	req := fetchAll(ids, 1<<20)
	req.SetVersion(12)
	c.send(req)
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(c.br, int64(binary.BigEndian.Uint32(size[:]))))
	if err != nil || n == int64(binary.BigEndian.Uint32(size[:])) {
		t.Fatalf("read %d of %d bytes (%v): want the connection closed before the frame ends", n, binary.BigEndian.Uint32(size[:]), err)
	}
}

// Pipelined requests answered from memory and with sendfile come back in
// request order, each whole.
func TestSendfileFetchKeepsPipelinedOrder(t *testing.T) {
	ts := newTestServer(t)
	ids := fillZeroCopyTopic(t, ts)
	c := ts.dial(t)
	var want []int32
	for i := 0; i < 20; i++ {
		var req kmsg.Request = fetchAll(ids, 1<<20)
		if i%3 == 1 {
			req = kmsg.NewPtrApiVersionsRequest()
		}
		req.SetVersion(min(req.MaxVersion(), 12))
		want = append(want, c.send(req))
	}
	for i, corr := range want {
		frame, err := c.readFrame()
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
			t.Fatalf("response %d has correlation id %d, want %d", i, got, corr)
		}
		if i%3 != 1 {
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = 12
			if err := resp.ReadFrom(frame[5:]); err != nil || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
				t.Fatalf("fetch response %d: %v", i, err)
			}
		}
	}
}

// A segment unlinked between the read and the opening of its file (what
// retention does) makes the fetch read again, copying: the answer is what
// a copying listener sends, and nothing is left open.
func TestSendfileFetchCopiesWhenSegmentIsGoneBeforeOpen(t *testing.T) {
	ts := newTestServer(t)
	ids := fillZeroCopyTopic(t, ts)
	copying := secondListener(t, ts, func(c *Config) { c.DisableSendfile = true })
	want := rawFetch(t, copying.dial(t), fetchAll(ids, 1<<20), 12)
	dir := filepath.Join(ts.cfg.DataDir, "zc-1")
	fn := func() {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, p := range logs {
			os.Remove(p)
		}
	}
	testHookBeforeOpenSections.Store(&fn)
	t.Cleanup(func() { testHookBeforeOpenSections.Store(nil) })
	var sections atomic.Int64
	setSectionHook(t, func() { sections.Add(1) })
	got := rawFetch(t, ts.dial(t), fetchAll(ids, 1<<20), 12)
	if !bytes.Equal(got, want) {
		t.Fatal("answer differs from the copying listener's after its segments were unlinked")
	}
	if n := sections.Load(); n != 0 {
		t.Fatalf("%d sections sent from files, want the copying path", n)
	}
}

func TestOpenSectionsClosesWhatItOpenedOnError(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "1.log")
	b := fixedBatch(t, records.BatchOptions{}, "a")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	chunks := [][]server.Chunk{
		{&fileChunk{path: p, size: len(b)}},
		{&fileChunk{path: p, size: len(b)}, &fileChunk{path: filepath.Join(dir, "gone.log"), size: 10}},
	}
	before := openFDs(t)
	resp := kmsg.NewPtrFetchResponse()
	resp.Topics = []kmsg.FetchResponseTopic{{Partitions: make([]kmsg.FetchResponseTopicPartition, 2)}}
	held := new(atomic.Int32)
	if _, err := openSections(resp, chunks, held); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if after := openFDs(t); after != before || held.Load() != 0 {
		t.Fatalf("%d descriptors open before, %d after", before, after)
	}
}

// fileChunk is a test twin of storage's chunks (server.Chunk): a byte
// range of a file, sent by copying.
type fileChunk struct {
	path string
	pos  int64
	size int
	f    *os.File
}

func (c *fileChunk) Size() int { return c.size }

func (c *fileChunk) Open() (err error) {
	c.f, err = os.Open(c.path)
	return err
}

func (c *fileChunk) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, io.NewSectionReader(c.f, c.pos, int64(c.size)))
}

func (c *fileChunk) AppendTo(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, make([]byte, c.size)...)
	if _, err := c.f.ReadAt(dst[start:], c.pos); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

func (c *fileChunk) Close() error {
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	return err
}

func openFDs(t *testing.T) int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(fds)
}

// Past maxConnSendfileFiles open files on a connection, partitions are
// read into memory: the answer is the same bytes, and closing it gives
// the files back.
func TestSendfileFetchCapsOpenFilesPerConnection(t *testing.T) {
	for _, already := range []int32{0, maxConnSendfileFiles - 3, maxConnSendfileFiles - 1, maxConnSendfileFiles} {
		resp, chunks := sampleFetchResponse(t, 12)
		held := new(atomic.Int32)
		held.Store(already)
		parts, err := openSections(resp, chunks, held)
		if err != nil {
			t.Fatal(err)
		}
		if held.Load() > maxConnSendfileFiles {
			t.Fatalf("%d files held, cap %d", held.Load(), maxConnSendfileFiles)
		}
		out := encodeSendfileFetch(5, &sendfileFetch{FetchResponse: resp, parts: parts})
		got := flatten(t, out)
		out.close()
		ref, refChunks := sampleFetchResponse(t, 12)
		if want := encodeResponse(5, materializeChunks(t, ref, refChunks)); !bytes.Equal(got, want) {
			t.Fatalf("%d files already open: answer differs from kmsg's", already)
		}
		if held.Load() != already {
			t.Fatalf("%d files held after the answer was closed, want %d", held.Load(), already)
		}
	}
}

// A fetch of more partitions with data than a connection may hold files
// for answers the same bytes as a copying listener, and gives every file
// back once sent.
func TestSendfileWideFetchMatchesCopying(t *testing.T) {
	ts := newTestServer(t)
	const partitions = 3 * maxConnSendfileFiles
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "wide", Partitions: partitions, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	c := ts.dial(t)
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes = 50 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "wide"
	for p := int32(0); p < partitions; p++ {
		resp := do[*kmsg.ProduceResponse](c, produceReq("wide", p, -1, fixedBatch(t, records.BatchOptions{}, strings.Repeat("w", int(p)))), 9)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: error %d", code)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	copying := secondListener(t, ts, func(c *Config) { c.DisableSendfile = true })
	want := rawFetch(t, copying.dial(t), req, 12)
	if got := rawFetch(t, ts.dial(t), req, 12); !bytes.Equal(got, want) { // both clients' first request
		t.Fatal("wide sendfile answer differs from the copying one")
	}
	harness.WaitFor(t, "the connection to release its segment files once the answer was read", 10*time.Second,
		func() bool { return connFilesHeld(ts.Server) == 0 })
}

func connFilesHeld(s *Server) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int32(0)
	for c := range s.mu.conns {
		n += c.sendfileFiles.Load()
	}
	return n
}
