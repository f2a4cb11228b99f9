package fetcher

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchOf lists partitions of topic t from the given offsets.
func fetchOf(offsets map[int32]int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	for _, p := range slices.Sorted(func(yield func(int32) bool) {
		for p := range offsets {
			if !yield(p) {
				return
			}
		}
	}) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch = p, offsets[p], 1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func listedOf(req *kmsg.FetchRequest) (listed, forgotten []int32) {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			listed = append(listed, p.Partition)
		}
	}
	for _, t := range req.ForgottenTopics {
		forgotten = append(forgotten, t.Partitions...)
	}
	slices.Sort(forgotten)
	return listed, forgotten
}

func answer(id int32, code int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SessionID, resp.ErrorCode = id, code
	return resp
}

// The fetcher's side of a session, scripted: full first, then only the
// partitions whose fetch offset moved, added or dropped; each kind of
// answer sets the next fetch's id and epoch.
func TestSessionShapesFetches(t *testing.T) {
	var s session
	step := func(name string, offsets map[int32]int64, resp *kmsg.FetchResponse, wantID, wantEpoch int32, wantListed, wantForgotten []int32) error {
		t.Helper()
		req := fetchOf(offsets)
		full := s.shape(req)
		if req.SessionID != wantID || req.SessionEpoch != wantEpoch || full != (wantEpoch == 0) {
			t.Fatalf("%s: session %d epoch %d full %v, want %d %d", name, req.SessionID, req.SessionEpoch, full, wantID, wantEpoch)
		}
		listed, forgotten := listedOf(req)
		if !slices.Equal(listed, wantListed) || !slices.Equal(forgotten, wantForgotten) {
			t.Fatalf("%s: lists %v forgets %v, want %v %v", name, listed, forgotten, wantListed, wantForgotten)
		}
		if resp == nil {
			s.lost()
			return nil
		}
		return s.answered(resp, full)
	}
	step("first", map[int32]int64{0: 0, 1: 0, 2: 0}, answer(77, 0), 0, 0, []int32{0, 1, 2}, nil)
	step("idle", map[int32]int64{0: 0, 1: 0, 2: 0}, answer(77, 0), 77, 1, nil, nil)
	step("1 moved, 2 dropped, 3 added", map[int32]int64{0: 0, 1: 5, 3: 0}, answer(77, 0), 77, 2, []int32{1, 3}, []int32{2})
	step("connection lost", map[int32]int64{0: 0, 1: 5, 3: 0}, nil, 77, 3, nil, nil)
	step("full again, naming the old session", map[int32]int64{0: 0, 1: 5, 3: 0}, answer(78, 0), 77, 0, []int32{0, 1, 3}, nil)
	if err := step("the leader lost it", map[int32]int64{0: 1, 1: 5, 3: 0}, answer(0, kerr.FetchSessionIDNotFound.Code), 78, 1, []int32{0}, nil); !errors.Is(err, kerr.FetchSessionIDNotFound) {
		t.Fatalf("FETCH_SESSION_ID_NOT_FOUND: %v", err)
	}
	step("full, no session", map[int32]int64{0: 1, 1: 5, 3: 0}, answer(79, 0), 0, 0, []int32{0, 1, 3}, nil)
	if err := step("epoch refused", map[int32]int64{0: 1, 1: 5, 3: 0}, answer(0, kerr.InvalidFetchSessionEpoch.Code), 79, 1, nil, nil); !errors.Is(err, kerr.InvalidFetchSessionEpoch) {
		t.Fatalf("INVALID_FETCH_SESSION_EPOCH: %v", err)
	}
	step("full, closing 79; the leader opens none", map[int32]int64{0: 1}, answer(0, 0), 79, 0, []int32{0}, nil)
	step("full while sessionless", map[int32]int64{0: 1}, answer(80, 0), 0, 0, []int32{0}, nil)
	step("session closed by the leader", map[int32]int64{0: 2}, answer(0, 0), 80, 1, []int32{0}, nil)
	step("full after the close", map[int32]int64{0: 2}, answer(81, 0), 0, 0, []int32{0}, nil)
	if err := step("another top-level error", map[int32]int64{0: 2}, answer(0, kerr.ClusterAuthorizationFailed.Code), 81, 1, nil, nil); err != nil {
		t.Fatalf("a non-session error is the caller's: %v", err)
	}
	step("full after it", map[int32]int64{0: 2}, answer(82, 0), 81, 0, []int32{0}, nil)
}

// BenchmarkSessionShape: the follower's side of one incremental fetch of
// 21 partitions, one of which moved (the replica fetcher's loop while a
// producer writes one partition).
func BenchmarkSessionShape(b *testing.B) {
	offsets := map[int32]int64{}
	for p := range int32(21) {
		offsets[p] = 100
	}
	var s session
	s.shape(fetchOf(offsets))
	s.answered(answer(7, 0), true)
	reqs := make([]*kmsg.FetchRequest, b.N)
	for i := range reqs {
		offsets[0] = int64(101 + i)
		reqs[i] = fetchOf(offsets)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if s.shape(reqs[i]) {
			b.Fatal("a full fetch in the session")
		}
		s.answered(answer(7, 0), false)
	}
}
