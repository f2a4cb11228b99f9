package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/test/harness"
)

func TestMarkersRequestGroupsByProducerAndTopic(t *testing.T) {
	req := MarkersRequest([]server.TxnMarker{
		{ProducerID: 1, ProducerEpoch: 0, Commit: true, CoordinatorEpoch: 3, Topic: "a", Partition: 0},
		{ProducerID: 1, ProducerEpoch: 0, Commit: true, CoordinatorEpoch: 3, Topic: "a", Partition: 2},
		{ProducerID: 1, ProducerEpoch: 0, Commit: true, CoordinatorEpoch: 3, Topic: "b", Partition: 1},
		{ProducerID: 2, ProducerEpoch: 4, Commit: false, CoordinatorEpoch: 3, Topic: "a", Partition: 0},
	})
	if len(req.Markers) != 2 {
		t.Fatalf("markers %+v", req.Markers)
	}
	m := req.Markers[0]
	if m.ProducerID != 1 || !m.Committed || m.CoordinatorEpoch != 3 || len(m.Topics) != 2 || len(m.Topics[0].Partitions) != 2 {
		t.Fatalf("first marker %+v", m)
	}
	if m := req.Markers[1]; m.ProducerID != 2 || m.Committed || m.ProducerEpoch != 4 {
		t.Fatalf("second marker %+v", m)
	}
}

// peer answers WriteTxnMarkers with the codes it is given per partition.
type peer struct {
	codes map[int32]int16
	err   error
	got   []kmsg.Request
}

func (p *peer) Request(_ context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	p.got = append(p.got, req)
	if p.err != nil {
		return nil, p.err
	}
	r := req.(*kmsg.WriteTxnMarkersRequest)
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range r.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p2 := range t.Partitions {
				if code, ok := p.codes[p2]; ok {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition, rp.ErrorCode = p2, code
					rt.Partitions = append(rt.Partitions, rp)
				}
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func TestRemoteMarkersMapAnswers(t *testing.T) {
	p := &peer{codes: map[int32]int16{0: 0, 1: kerr.NotLeaderForPartition.Code}}
	m := &ClusterMarkers{Peers: p}
	batch := []server.TxnMarker{{ProducerID: 9, Topic: "a", Partition: 0}, {ProducerID: 9, Topic: "a", Partition: 1},
		{ProducerID: 9, Topic: "a", Partition: 2}}
	errs := m.sendRemote(context.Background(), 2, batch)
	if errs[0] != nil || !errors.Is(errs[1], kerr.NotLeaderForPartition) || errs[2] == nil {
		t.Fatalf("errors %v", errs)
	}
	if len(p.got) != 1 {
		t.Fatalf("%d requests for one broker", len(p.got))
	}
	p.err = errors.New("connection refused")
	for _, err := range m.sendRemote(context.Background(), 2, batch) {
		if err == nil {
			t.Fatal("an unreachable broker's markers succeeded")
		}
	}
}

// A probe goes to a remote leader as its own entry, tagged, and the
// leader's CONCURRENT_TRANSACTIONS reads as the transaction open there.
func TestRemoteProbeIsTaggedAndReadsOpen(t *testing.T) {
	p := &peer{codes: map[int32]int16{0: kerr.ConcurrentTransactions.Code, 1: 0}}
	m := &ClusterMarkers{Peers: p}
	errs := m.sendRemote(context.Background(), 2, []server.TxnMarker{
		{ProducerID: 9, ProducerEpoch: -1, CoordinatorEpoch: -1, Topic: "a", Partition: 0, Probe: true},
		{ProducerID: 9, ProducerEpoch: 3, Commit: true, Topic: "b", Partition: 1}})
	if !txnOpenThere(errs[0]) || errs[1] != nil {
		t.Fatalf("errors %v", errs)
	}
	req := p.got[0].(*kmsg.WriteTxnMarkersRequest)
	if len(req.Markers) != 2 {
		t.Fatalf("a probe and a marker in %d entries", len(req.Markers))
	}
	for _, e := range req.Markers {
		tagged := false
		e.UnknownTags.Each(func(tag uint32, _ []byte) { tagged = tagged || tag == server.TxnProbeTag })
		if probe := e.Topics[0].Topic == "a"; tagged != probe {
			t.Fatalf("entry of %s: probe tag %v", e.Topics[0].Topic, tagged)
		}
	}
}

// On a single node every marker is written locally, but the markers of a
// deleted topic are reported gone, so the coordinator drops them.
func TestClusterMarkersSingleNode(t *testing.T) {
	ml := &markerLog{}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.Now()})
	m := &ClusterMarkers{Broker: n.broker, Local: ml}
	errs := m.WriteTxnMarkers(context.Background(), []server.TxnMarker{{Topic: "orders", Partition: 1}, {Topic: "gone", Partition: 0},
		{Topic: "orders", Partition: 7}})
	if errs[0] != nil || !errors.Is(errs[1], ErrPartitionGone) || !errors.Is(errs[2], ErrPartitionGone) {
		t.Fatalf("errors %v", errs)
	}
	if got, _ := ml.snapshot(); len(got) != 1 || got[0].Partition != 1 {
		t.Fatalf("written %+v", got)
	}
}

// A transaction whose partition's topic was deleted still completes.
func TestCoordinatorDropsMarkersOfDeletedPartitions(t *testing.T) {
	ml := &markerLog{}
	clk := &clock{now: time.Now()}
	n := newNode(t, t.TempDir(), ml, clk)
	n.c.cfg.Markers = &ClusterMarkers{Broker: n.broker, Local: ml}
	ctx := context.Background()
	if err := n.broker.CreateTopic(server.TopicSpec{Name: "doomed", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	pid, e, _ := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, e, []TopicPartition{{"doomed", 0}, {"orders", 0}}))
	if err := n.broker.DeleteTopic("doomed"); err != nil {
		t.Fatal(err)
	}
	must(t, "commit", n.c.EndTxn(ctx, "tx", pid, e, true))
	n.waitState("tx", CompleteCommit)
	if got, _ := ml.snapshot(); len(got) != 1 || got[0].Topic != "orders" {
		t.Fatalf("written %+v", got)
	}
}

func TestVerifierAnswersLocally(t *testing.T) {
	n := newNode(t, t.TempDir(), &markerLog{}, &clock{now: time.Now()})
	v := &Verifier{Coordinator: n.c}
	ctx := context.Background()
	pid, e, _ := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, e, []TopicPartition{{"orders", 0}}))
	for _, c := range []struct {
		id    string
		epoch int16
		part  int32
		code  int16
	}{
		{"tx", e, 0, 0},
		{"tx", e, 1, kerr.InvalidTxnState.Code},
		{"tx", e - 1, 0, kerr.ProducerFenced.Code},
		{"unknown", e, 0, kerr.InvalidProducerIDMapping.Code},
	} {
		if got := v.VerifyTxnPartition(ctx, c.id, pid, c.epoch, "orders", c.part); got != c.code {
			t.Errorf("%+v: %d", c, got)
		}
	}
}

func TestVerifyAnswerReadsThePartition(t *testing.T) {
	req := VerifyRequest("tx", 5, 1, "orders", 3)
	if req.Version != 4 || !req.Transactions[0].VerifyOnly || req.Transactions[0].Topics[0].Partitions[0] != 3 {
		t.Fatalf("request %+v", req)
	}
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	if got := verifyAnswer(resp, "orders", 3); got != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("an answer without the partition: %d", got)
	}
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	if got := verifyAnswer(resp, "orders", 3); got != resp.ErrorCode {
		t.Fatalf("top-level error: %d", got)
	}
}

// A leader that fenced the coordinator's marker stops its sending: no
// retry loop against a newer coordinator, no completion written.
func TestFencedMarkerStopsCompletion(t *testing.T) {
	ml := &markerLog{failing: kerr.TransactionCoordinatorFenced}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.Now()})
	ctx := context.Background()
	pid, e, _ := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, e, []TopicPartition{{"orders", 0}}))
	must(t, "commit", n.c.EndTxn(ctx, "tx", pid, e, true))
	harness.WaitFor(t, "the completer gives up", 10*time.Second, func() bool {
		n.c.mu.Lock()
		en := n.c.mu.txns["tx"]
		n.c.mu.Unlock()
		en.mu.Lock()
		defer en.mu.Unlock()
		return !en.completing
	})
	if _, calls := ml.snapshot(); calls != 1 {
		t.Fatalf("%d marker attempts after a fence", calls)
	}
	if tx, _ := n.c.Describe("tx"); tx.State != PrepareCommit {
		t.Fatalf("state %v", tx.State)
	}
}

// heldPeer is peer whose first request waits for release, so that the
// markers sent meanwhile queue behind it.
type heldPeer struct {
	peer
	mu      sync.Mutex
	first   chan struct{} // closed once the first request arrived
	release chan struct{}
	n       int
}

func (p *heldPeer) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	if n == 1 {
		close(p.first)
		<-p.release
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peer.Request(ctx, broker, req)
}

// Markers sent to a leader while a request to it is in flight go
// together in the next one, each caller getting its own markers' answers;
// two markers of one producer and partition never share a request, and
// no marker overtakes one queued before it for the same producer and
// partition. A caller that gives up before its markers are sent
// withdraws them; one whose markers are in flight gets their answers.
func TestRemoteMarkersCoalescePerLeader(t *testing.T) {
	p := &heldPeer{peer: peer{codes: map[int32]int16{0: 0, 1: kerr.NotLeaderForPartition.Code, 2: 0, 3: 0, 4: 0}},
		first: make(chan struct{}), release: make(chan struct{})}
	m := &ClusterMarkers{Peers: p}
	ctx := context.Background()
	results := make([]chan []error, 6)
	queued := func(n int) {
		harness.WaitFor(t, fmt.Sprintf("%d callers queued behind the first", n), 5*time.Second, func() bool {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.toLeader[2] != nil && len(m.toLeader[2].calls) == n
		})
	}
	send := func(i int, ctx context.Context, batch ...server.TxnMarker) {
		results[i] = make(chan []error, 1)
		go func() { results[i] <- m.sendRemote(ctx, 2, batch) }()
		if i > 0 {
			queued(i) // in order
		}
	}
	inFlight, stopWaiting := context.WithCancel(ctx)
	send(0, inFlight, server.TxnMarker{ProducerID: 1, Topic: "a", Partition: 0})
	<-p.first
	send(1, ctx, server.TxnMarker{ProducerID: 2, Topic: "a", Partition: 1}, server.TxnMarker{ProducerID: 2, Topic: "a", Partition: 2})
	send(2, ctx, server.TxnMarker{ProducerID: 3, Topic: "a", Partition: 3})
	// The same producer and partition as 2, and one of its own that 5 shares.
	send(3, ctx, server.TxnMarker{ProducerID: 3, Topic: "a", Partition: 3}, server.TxnMarker{ProducerID: 5, Topic: "a", Partition: 4})
	gone, giveUp := context.WithCancel(ctx)
	send(4, gone, server.TxnMarker{ProducerID: 4, Topic: "a", Partition: 0})
	send(5, ctx, server.TxnMarker{ProducerID: 5, Topic: "a", Partition: 4})
	giveUp()
	if errs := <-results[4]; !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("withdrawn caller: %v", errs)
	}
	stopWaiting()
	close(p.release)
	for i, want := range [][]bool{{true}, {false, true}, {true}, {true, true}, nil, {true}} {
		if want == nil {
			continue
		}
		errs := <-results[i]
		if len(errs) != len(want) {
			t.Fatalf("caller %d: %d answers, want %d", i, len(errs), len(want))
		}
		for j, ok := range want {
			if (errs[j] == nil) != ok {
				t.Fatalf("caller %d marker %d: %v", i, j, errs[j])
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var producers [][]int64
	for _, req := range p.got {
		var ids []int64
		for _, mk := range req.(*kmsg.WriteTxnMarkersRequest).Markers {
			ids = append(ids, mk.ProducerID)
		}
		producers = append(producers, ids)
	}
	if got := fmt.Sprint(producers); got != "[[1] [2 3] [3 5] [5]]" {
		t.Fatalf("requests by producer: %s, want [[1] [2 3] [3 5] [5]]", got)
	}
}

// hangingPeer never answers: a leader frozen or cut off. Its requests end
// with their context.
type hangingPeer struct{ asked chan struct{} }

func (p *hangingPeer) Request(ctx context.Context, _ int32, _ kmsg.Request) (kmsg.Response, error) {
	p.asked <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// Close ends a request to a leader that does not answer, and the
// completer waiting for it gets its error at once, not at the request's
// 30 s timeout; markers sent after Close fail without a request.
func TestClosedMarkersEndTheRequestInFlight(t *testing.T) {
	p := &hangingPeer{asked: make(chan struct{}, 1)}
	m := &ClusterMarkers{Peers: p}
	batch := []server.TxnMarker{{ProducerID: 9, Commit: true, Topic: "a", Partition: 0}}
	answer := make(chan []error, 1)
	go func() { answer <- m.sendRemote(context.Background(), 2, batch) }()
	<-p.asked
	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	select {
	case errs := <-answer:
		if errs[0] == nil {
			t.Fatal("a marker whose request Close ended succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the marker still waits for its leader 10 s after Close")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close has not returned: a drain goroutine still runs")
	}
	if errs := m.sendRemote(context.Background(), 2, batch); !errors.Is(errs[0], errMarkersClosed) {
		t.Fatalf("a marker sent after Close: %v, want refused", errs[0])
	}
}
