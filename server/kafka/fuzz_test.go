package kafka

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// seedRequests are valid requests of every served API, encoded with kmsg.
func seedRequests(tb testing.TB) [][]byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	var frames [][]byte
	data := batch(tb, records.BatchOptions{}, "a", "b")
	for _, a := range apis {
		for _, v := range []int16{a.min, a.max} {
			req := kmsg.RequestForKey(a.key)
			switch r := req.(type) {
			case *kmsg.ProduceRequest:
				r.Acks = 1
				r.Topics = produceReq("fz", 0, 1, data).Topics
			case *kmsg.FetchRequest:
				r.Topics = fetchReq("fz", 0, 0, 0, 1).Topics
			case *kmsg.MetadataRequest:
				name := "fz"
				r.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
			}
			req.SetVersion(v)
			frames = append(frames, f.AppendRequest(nil, req, int32(len(frames))))
		}
	}
	return frames
}

// FuzzFrame writes arbitrary bytes to a real connection: the server must
// answer, close the connection or wait for more, and never panic.
func FuzzFrame(f *testing.F) {
	for _, frame := range seedRequests(f) {
		f.Add(frame)
		f.Add(frame[:len(frame)/2])
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add(rawFrame(3, 1, 1, 0, 0, 0x7f, 0xff, 0xff, 0xff))
	ts := newTestServer(f, func(c *Config) { c.MaxRequestBytes = 1 << 16 })
	ts.cancel() // handlers never wait (fetch long polls return at once)
	f.Fuzz(func(t *testing.T, data []byte) {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.Write(data)
		nc.(*net.TCPConn).CloseWrite()
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.Copy(io.Discard, nc); err != nil {
			t.Fatalf("the server neither answered nor closed: %v", err)
		}
		if n := ts.logs.bugCount(); n > 0 {
			t.Fatalf("%d requests panicked", n)
		}
	})
}

// FuzzDispatch decodes arbitrary bodies as every served API and version
// and runs the handler without the panic guard, so a panic fails here
// with its stack. Whatever the handler answers must encode and decode.
func FuzzDispatch(f *testing.F) {
	for _, frame := range seedRequests(f) {
		key := int16(binary.BigEndian.Uint16(frame[4:]))
		version := int16(binary.BigEndian.Uint16(frame[6:]))
		_, rest, err := parseHeader(frame[4:], "")
		if err != nil {
			f.Fatal(err)
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.IsFlexible() {
			rest = rest[1:]
		}
		f.Add(key, version, rest)
	}
	// No auto-created topics and validate-only topic creation: the fuzzer
	// would otherwise create thousands of partition logs, and every topic
	// change rewrites the topic table, so runs slow down without end.
	// Inter-broker APIs are served too; the leaders they name are kept on
	// a closed loopback port, so a fuzzed LeaderAndIsr never dials out.
	ts := newTestServerWith(f, func(c *server.Config) { c.AutoCreateTopics = false },
		func(c *Config) { c.InterBroker = true })
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "fz", Partitions: 2}); err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // handlers never wait
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		a := lookupAPI(key)
		if a == nil {
			a = &apis[int(uint16(key))%len(apis)]
		}
		version = a.min + int16(int(uint16(version))%int(a.max-a.min+1))
		frame := binary.BigEndian.AppendUint16(nil, uint16(a.key))
		frame = binary.BigEndian.AppendUint16(frame, uint16(version))
		frame = append(frame, 0, 0, 0, 7, 0, 4, 'f', 'u', 'z', 'z')
		req := kmsg.RequestForKey(a.key)
		req.SetVersion(version)
		if req.IsFlexible() {
			frame = append(frame, 0)
		}
		frame = append(frame, body...)
		h, rest, err := parseHeader(frame, "")
		if err != nil {
			t.Fatalf("header: %v", err)
		}
		decoded, err := ts.decodeRequest(h, rest)
		if err != nil {
			return // the connection would be closed
		}
		switch r := decoded.(type) {
		case *kmsg.CreateTopicsRequest:
			r.ValidateOnly = true
		case *kmsg.CreatePartitionsRequest:
			r.ValidateOnly = true
		case *kmsg.LeaderAndISRRequest:
			for i := range r.LiveLeaders {
				r.LiveLeaders[i].Host, r.LiveLeaders[i].Port = "127.0.0.1", 1
			}
		}
		resp := a.serve(ts.Server, ctx, decoded)
		if resp == nil {
			return
		}
		resp.SetVersion(version)
		out := encodeResponse(h.correlation, resp)
		body = out[8:]
		if resp.IsFlexible() && a.key != apiVersionsKey {
			body = body[1:]
		}
		check := kmsg.ResponseForKey(a.key)
		check.SetVersion(version)
		if err := check.ReadFrom(body); err != nil {
			t.Fatalf("%s v%d response does not decode: %v", kmsg.NameForKey(a.key), version, err)
		}
	})
}

// FuzzFrameReader reads a stream of frames with the listener's limits
// (small ones, so the fuzzer reaches them): every frame returned has its
// declared size, nothing is allocated beyond twice the bytes present, and
// the memory budget is whole again after each frame.
func FuzzFrameReader(f *testing.F) {
	for _, frame := range seedRequests(f) {
		f.Add(frame)
	}
	f.Add(binary.BigEndian.AppendUint32(nil, 100<<20))
	f.Add(append(binary.BigEndian.AppendUint32(nil, 200<<10), make([]byte, 70<<10)...))
	f.Add(append(binary.BigEndian.AppendUint32(nil, 9<<20), 0, 3))
	const maxBytes = 256 << 10
	budget := newMemoryBudget(maxBytes, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), readBufferBytes)
		for {
			n, err := frameSize(br, maxBytes)
			if err != nil {
				return
			}
			if n < minFrameBytes || n > maxBytes {
				t.Fatalf("size %d passed the checks", n)
			}
			frame, release, err := readFrameBody(context.Background(), br, n, budget, func() error { return nil })
			if err != nil {
				if budget.inUse() != 0 {
					t.Fatalf("a failed frame kept %d bytes of budget", budget.inUse())
				}
				return
			}
			if len(frame) != n || cap(frame) != n {
				t.Fatalf("frame of %d bytes (cap %d), declared %d", len(frame), cap(frame), n)
			}
			release()
			if budget.inUse() != 0 {
				t.Fatalf("%d bytes of budget kept after release", budget.inUse())
			}
		}
	})
}

// FuzzReadGrowing checks the growth rule on its own: what readGrowing
// allocates is bounded by the bytes that arrived, whatever is declared.
func FuzzReadGrowing(f *testing.F) {
	f.Add([]byte("abc"), uint32(100<<20))
	f.Add(make([]byte, 10000), uint32(9000))
	f.Fuzz(func(t *testing.T, data []byte, want uint32) {
		w := int(want % (128 << 20))
		buf, err := readGrowing(bytes.NewReader(data), nil, w)
		if err == nil && len(buf) != w {
			t.Fatalf("read %d, want %d", len(buf), w)
		}
		if limit := max(firstChunkBytes, 2*len(buf)); cap(buf) > limit {
			t.Fatalf("cap %d after %d bytes arrived (declared %d)", cap(buf), len(buf), w)
		}
	})
}
