package kafka

import (
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
		_, rest, err := parseHeader(frame[4:])
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
	ts := newTestServerWith(f, func(c *server.Config) { c.AutoCreateTopics = false })
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
		h, rest, err := parseHeader(frame)
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
