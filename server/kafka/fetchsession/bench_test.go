package fetchsession

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkIncrementalFetch is a follower's incremental fetch of a
// 21-partition session that lists one partition, whose answer sends it:
// what the session adds to each replica fetch the leader serves.
func BenchmarkIncrementalFetch(b *testing.B) {
	c := New(Config{})
	var items []string
	for p := range 21 {
		items = append(items, fmt.Sprintf("%c:%d@0", 'a'+p%3, p))
	}
	r := req(0, InitialEpoch, topics(items...))
	r.Follower = true
	f := c.Begin(r, t0)
	id, _ := f.Answer(f.Topics, respond(f.Topics, nil, nil), nil, t0)
	listed := topics("a:0@1")
	resp := kmsg.NewPtrFetchResponse()
	b.ReportAllocs()
	for n := range b.N {
		listed[0].Partitions[0].FetchOffset = int64(n + 1)
		f := c.Begin(Request{Version: 12, Follower: true, Owner: alice, SessionID: id, SessionEpoch: int32(n + 1), Topics: listed}, t0)
		fill(resp, f.Topics, int64(n+1))
		if _, send := f.Answer(f.Topics, resp, nil, t0); !slices.Contains(send, true) {
			b.Fatal("a:0 not sent")
		}
	}
}

// fill answers ts in resp, reusing its slices: a:0 at high watermark hw,
// the others at 0.
func fill(resp *kmsg.FetchResponse, ts []kmsg.FetchRequestTopic, hw int64) {
	resp.Topics = resp.Topics[:0]
	for _, t := range ts {
		if len(resp.Topics) < cap(resp.Topics) {
			resp.Topics = resp.Topics[:len(resp.Topics)+1]
		} else {
			resp.Topics = append(resp.Topics, kmsg.FetchResponseTopic{})
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Topic, rt.Partitions = t.Topic, rt.Partitions[:0]
		for _, p := range t.Partitions {
			rp := kmsg.FetchResponseTopicPartition{Partition: p.Partition}
			if t.Topic == "a" && p.Partition == 0 {
				rp.HighWatermark, rp.LastStableOffset = hw, hw
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
}
