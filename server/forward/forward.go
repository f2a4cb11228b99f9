// Package forward is a cluster broker's way to the partitions other
// brokers lead, for the HTTP gateway: server.Forwarder on one franz-go
// client per process, which keeps a pooled connection to each other
// broker's Kafka listener and learns leaders from their Metadata.
//
// It never opens a socket to its own broker: the callers serve what this
// broker leads or coordinates in process, the client's seeds are the live
// peers of each cluster view (LiveBrokers), and the guard turns a dial to
// any of this broker's own addresses (franz-go choosing it for a metadata
// refresh, or as a partition's new leader) into an in-process connection
// (Config.DialSelf).
//
// Produce goes through franz-go's idempotent producer with acks=all:
// records are batched per partition with those of concurrent requests,
// retried through leader changes, and a retry the leader already wrote is
// answered with its first offsets instead of being written again
// (sequence numbers per producer id, as every Kafka producer). Fetch and
// ListOffsets are single requests to the leader the caller names (Fetch)
// or franz-go finds (ListOffsets); the caller retries leadership errors.
//
// Every connection it opens goes through a guard (liveness.go) that
// closes those to a broker the controller declares dead and refuses new
// ones until it is live again: a frozen peer keeps its sockets open, and
// would otherwise hold forwards to the partitions' new leaders.
//
// The decisions (what to forward, what to answer) are the server
// package's; this one only carries records and maps Kafka error codes to
// the core's errors.
package forward

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/ferry-mq/ferry/server"
)

// Config describes the client.
type Config struct {
	// BrokerID is this broker's id. Its requests are never forwarded:
	// the views' other live brokers are the client's seeds.
	BrokerID int32
	// Self are addresses that reach this broker's own Kafka listeners
	// beyond those the views list for it (its listen addresses); at least
	// one. Dials to them go to DialSelf.
	Self []string
	// Listener is the inter-broker listener's name: a peer's endpoint of
	// that name is its seed address (none: its first endpoint).
	Listener string
	// ClientID names the client in other brokers' logs and metrics.
	ClientID string
	// MaxBatchBytes is a topic's max.message.bytes, the most a forwarded
	// batch may hold; nil: franz-go's default (1,000,012 bytes).
	MaxBatchBytes func(topic string) int32
	// Dial connects to the brokers' inter-broker listener (nil: plain
	// TCP; a TLS dial when it is SSL).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialSelf connects to this broker's inter-broker listener in
	// process, as Dial would over the network (its TLS and SASL
	// handshakes over net.Pipe); used for every address in Self or that
	// the views list for this broker. Nil: those dials are refused.
	DialSelf func(ctx context.Context, network, addr string) (net.Conn, error)
	Logger   *slog.Logger
}

// defaultBatchMaxBytes is franz-go's default batch bound.
const defaultBatchMaxBytes = 1_000_012

// forwardLinger is how long a partition's records wait for more before
// franz-go sends them. A broker serves one request at a time per
// connection, as Kafka does, and an acks=all produce holds it until the
// followers have the records, so the records of concurrent HTTP requests
// are best sent together: measured with 48 clients on two cores
// (BenchmarkGatewayForwarding), 1 ms kept 0.76–0.83 of the leader's own
// throughput, no linger 0.66, and two or four clients (more requests in
// flight, each smaller) 0.66.
const forwardLinger = time.Millisecond

// Forwarder implements server.Forwarder. Close it after the listeners
// that use it.
type Forwarder struct {
	cl       *kgo.Client
	logger   *slog.Logger
	guard    *liveGuard
	self     int32
	listener string

	// peers is the last view's live brokers other than this one: the
	// ones a request may go to, and the client's seeds.
	peers struct {
		sync.RWMutex
		ids   map[int32]bool
		seeds []string
	}
}

var _ server.Forwarder = (*Forwarder)(nil)

// New builds the client; it connects when first used.
func New(cfg Config) (*Forwarder, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(cfg.Self) == 0 {
		return nil, errors.New("forwarding client: no address of this broker's own listeners")
	}
	// Fetch v13+ names topics by id: stay at v12, which names them.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.Fetch), 12)
	opts := []kgo.Opt{
		// franz-go needs a seed from the start: this broker's own
		// address, reached in process, until the first view names the
		// peers.
		kgo.SeedBrokers(cfg.Self[0]),
		kgo.ClientID(cfg.ClientID),
		kgo.MaxVersions(versions),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// The leader compresses as the topic's compression.type says; on
		// loopback or a LAN compressing here costs more than it saves.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(forwardLinger),
		// A leader change is noticed from the produce answers; the
		// default 5 s between metadata refreshes would stall forwards
		// that long after each one.
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	if cfg.MaxBatchBytes != nil {
		opts = append(opts, kgo.ProducerBatchMaxBytesFn(func(topic string) int32 {
			if topic == "" {
				return defaultBatchMaxBytes // franz-go validating its config
			}
			return min(max(cfg.MaxBatchBytes(topic), 512), 1<<30)
		}))
	}
	// Every connection goes through the guard, which connects to this
	// broker in process and cuts the connections to brokers the cluster
	// has declared dead (liveness.go).
	guard := newLiveGuard(cfg.Dial, cfg.DialSelf, cfg.BrokerID, cfg.Self)
	opts = append(opts, kgo.Dialer(guard.Dial))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("forwarding client: %w", err)
	}
	f := &Forwarder{cl: cl, logger: cfg.Logger.With("component", "forward"), guard: guard, self: cfg.BrokerID, listener: cfg.Listener}
	f.peers.ids = map[int32]bool{}
	return f, nil
}

// Close ends the client; forwards still waiting fail.
func (f *Forwarder) Close() { f.cl.Close() }

// LiveBrokers implements server.Forwarder: connections to brokers no
// longer live are closed, failing what waits on them, and not opened
// again until the brokers are live (liveness.go); the other live brokers
// become the client's seeds.
func (f *Forwarder) LiveBrokers(brokers []server.ClusterBroker) {
	f.guard.SetLive(brokers)
	ids, seeds := peerSeeds(brokers, f.self, f.listener)
	f.peers.Lock()
	defer f.peers.Unlock()
	f.peers.ids = ids
	// No peers live (this broker alone, or a view in the middle of a
	// restart): the last seeds stay, the guard refusing the dead ones.
	if len(seeds) == 0 || slices.Equal(seeds, f.peers.seeds) {
		return
	}
	// Under the lock, so that two views' seeds are applied in order.
	if err := f.cl.UpdateSeedBrokers(seeds...); err != nil {
		f.logger.Warn("the cluster view's brokers cannot be the forwarding client's seeds", "seeds", seeds, "err", err)
		return
	}
	f.peers.seeds = seeds
}

// peerSeeds is the ids of brokers other than self, and their addresses
// on listener, sorted.
func peerSeeds(brokers []server.ClusterBroker, self int32, listener string) (map[int32]bool, []string) {
	ids := map[int32]bool{}
	var seeds []string
	for _, b := range brokers {
		if b.ID == self {
			continue
		}
		ids[b.ID] = true
		host, port := b.Host, b.Port
		for _, ep := range b.Endpoints {
			if ep.Listener == listener {
				host, port = ep.Host, ep.Port
			}
		}
		seeds = append(seeds, net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	slices.Sort(seeds)
	return ids, seeds
}

// Dial connects to a broker's Kafka listener as the forwarding client
// does: in process when it is this broker, refused while the cluster
// counts the broker dead, and closed once it does. Other clients of this
// process that talk to brokers (the _schemas store) use it so that a
// frozen broker cannot hold their requests either, and so that they
// reach this broker without a socket.
func (f *Forwarder) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return f.guard.Dial(ctx, network, addr)
}

// forwardState is one Produce call's outcomes, filled by franz-go's
// promises; after the call returned (timed out) late ones are dropped.
type forwardState struct {
	mu       sync.Mutex
	out      []server.ForwardOutcome
	settled  []bool
	returned bool
	pending  atomic.Int64
	done     chan struct{}
}

func (s *forwardState) settle(i int, o server.ForwardOutcome) {
	s.mu.Lock()
	if !s.returned {
		s.out[i], s.settled[i] = o, true
	}
	s.mu.Unlock()
	if s.pending.Add(-1) == 0 {
		close(s.done)
	}
}

// Produce implements server.Forwarder.
func (f *Forwarder) Produce(ctx context.Context, topic string, recs []server.ProduceRecord, timeout time.Duration, out []server.ForwardOutcome) {
	st := &forwardState{out: out, settled: make([]bool, len(out)), done: make(chan struct{})}
	st.pending.Store(int64(len(recs)))
	// Records not yet sent when the time is up fail (never written); a
	// record in flight is not abandoned by franz-go (it cannot know
	// whether the leader wrote it) and is reported as timed out here.
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	krs := make([]kgo.Record, len(recs))
	owned := make([]byte, 0, recordBytes(recs))
	for i := range recs {
		kr := &krs[i]
		owned = toKgo(kr, topic, &recs[i], owned)
		f.cl.Produce(pctx, kr, func(r *kgo.Record, err error) {
			if err != nil {
				st.settle(i, server.ForwardOutcome{Offset: -1, Err: produceError(topic, r.Partition, err)})
				return
			}
			st.settle(i, server.ForwardOutcome{Offset: r.Offset})
		})
	}
	select {
	case <-st.done:
		return
	case <-pctx.Done():
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.returned = true
	for i := range out {
		if !st.settled[i] {
			out[i] = server.ForwardOutcome{Offset: -1, Err: fmt.Errorf("%w: %s-%d: the leader did not acknowledge the record within %v (it may have been written)",
				server.ErrRequestTimedOut, topic, recs[i].Partition, timeout)}
		}
	}
}

// toKgo fills kr from pr with copies of its bytes appended to owned: a
// record still in flight when Produce gives up on it is retried by
// franz-go later, and the caller's buffers (the HTTP gateway's pooled
// request scratch) hold another request's bytes by then.
func toKgo(kr *kgo.Record, topic string, pr *server.ProduceRecord, owned []byte) []byte {
	r := &pr.Record
	kr.Topic, kr.Partition = topic, pr.Partition
	kr.Key, owned = own(owned, r.Key)
	kr.Value, owned = own(owned, r.Value)
	kr.Timestamp = time.UnixMilli(r.Timestamp)
	if len(r.Headers) > 0 {
		kr.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			kr.Headers[i].Key = h.Key
			kr.Headers[i].Value, owned = own(owned, h.Value)
		}
	}
	return owned
}

// own appends b to owned (sized by recordBytes, so it never moves) and
// returns the copy; nil stays nil (a Kafka null).
func own(owned, b []byte) ([]byte, []byte) {
	if b == nil {
		return nil, owned
	}
	start := len(owned)
	owned = append(owned, b...)
	return owned[start:len(owned):len(owned)], owned
}

func recordBytes(recs []server.ProduceRecord) int {
	n := 0
	for i := range recs {
		r := &recs[i].Record
		n += len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			n += len(h.Value)
		}
	}
	return n
}

// produceError maps a forward's failure to the core's errors, naming the
// partition.
func produceError(topic string, partition int32, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: %s-%d: not sent to its leader in time", server.ErrRequestTimedOut, topic, partition)
	case errors.Is(err, kgo.ErrClientClosed):
		return fmt.Errorf("%w: %s-%d: the forwarding client is closed", server.ErrShuttingDown, topic, partition)
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		// A connection failure, not an answer: the request may have
		// reached the leader before its connection broke (the liveness
		// guard cuts the connections to a broker declared dead, frozen
		// with the request in its socket buffer), and franz-go's retries
		// then found no way in. Only the old leader knows, so the record
		// is reported as possibly written, never as refused.
		return fmt.Errorf("%w: %s-%d: the connection to its leader failed before an answer (it may have been written): %v",
			server.ErrRequestTimedOut, topic, partition, err)
	}
	return fmt.Errorf("%w: %s-%d: its leader answered: %v", coreError(err), topic, partition, err)
}

// coreError is the core's error for a Kafka answer or a connection
// failure: leadership and reachability problems are ErrLeaderNotAvailable
// (the caller retries or answers 503 with Retry-After).
func coreError(err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke.Code {
		case kerr.LeaderNotAvailable.Code, kerr.NotLeaderForPartition.Code, kerr.BrokerNotAvailable.Code,
			kerr.UnknownTopicOrPartition.Code, kerr.FencedLeaderEpoch.Code, kerr.UnknownLeaderEpoch.Code:
			return server.ErrLeaderNotAvailable
		}
		if core := server.ErrorForKafkaCode(ke.Code); core != nil {
			return core
		}
		if ke.Retriable {
			return server.ErrLeaderNotAvailable
		}
		return server.ErrInvalidRequest
	}
	// Connection refused or lost, a broker the client does not know: the
	// leader is out of reach.
	return server.ErrLeaderNotAvailable
}

// Fetch implements server.Forwarder.
func (f *Forwarder) Fetch(ctx context.Context, leader int32, req server.FetchRequest, dst []byte) (server.FetchResult, error) {
	if err := f.learn(ctx, leader); err != nil {
		return server.FetchResult{}, err
	}
	maxBytes := int32(min(max(req.MaxBytes, 1), 1<<30))
	kreq := kmsg.NewPtrFetchRequest()
	kreq.ReplicaID = -1
	kreq.MaxWaitMillis = int32(req.MaxWait.Milliseconds())
	kreq.MinBytes = 1
	kreq.MaxBytes = maxBytes
	kreq.SessionEpoch = -1 // no fetch session: a full request and answer
	if req.ReadCommitted {
		kreq.IsolationLevel = 1
	}
	kt := kmsg.NewFetchRequestTopic()
	kt.Topic = req.Topic
	kp := kmsg.NewFetchRequestTopicPartition()
	kp.Partition, kp.FetchOffset, kp.PartitionMaxBytes = req.Partition, req.Offset, maxBytes
	kp.CurrentLeaderEpoch, kp.LogStartOffset = -1, -1
	kt.Partitions = append(kt.Partitions, kp)
	kreq.Topics = append(kreq.Topics, kt)
	resp, err := kreq.RequestWith(ctx, f.cl.Broker(int(leader)))
	if err != nil {
		return server.FetchResult{}, fmt.Errorf("%w: fetch %s-%d from broker %d: %v", coreError(err), req.Topic, req.Partition, leader, err)
	}
	if resp.ErrorCode != 0 {
		return server.FetchResult{}, answerError(req.Topic, req.Partition, leader, resp.ErrorCode)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return server.FetchResult{}, fmt.Errorf("%w: broker %d answered a fetch of %s-%d with %d topics", server.ErrLeaderNotAvailable, leader, req.Topic, req.Partition, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	res := server.FetchResult{HighWatermark: p.HighWatermark, LogStartOffset: p.LogStartOffset, LastStableOffset: p.LastStableOffset}
	if p.ErrorCode != 0 {
		if p.ErrorCode == kerr.OffsetOutOfRange.Code {
			return res, fmt.Errorf("%w: %s-%d offset %d is outside [%d, %d] on its leader, broker %d",
				server.ErrOffsetOutOfRange, req.Topic, req.Partition, req.Offset, p.LogStartOffset, p.HighWatermark, leader)
		}
		return res, answerError(req.Topic, req.Partition, leader, p.ErrorCode)
	}
	res.Data = append(dst[:0], p.RecordBatches...)
	if req.ReadCommitted {
		res.AbortedTxns = make([]server.AbortedTxn, len(p.AbortedTransactions))
		for i, a := range p.AbortedTransactions {
			res.AbortedTxns[i] = server.AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
		}
	}
	return res, nil
}

func answerError(topic string, partition, leader int32, code int16) error {
	err := kerr.ErrorForCode(code)
	return fmt.Errorf("%w: %s-%d: broker %d answered %v", coreError(err), topic, partition, leader, err)
}

// learn checks that a request may go to broker id: another broker the
// last cluster view lists as live. This broker's own requests are served
// in process by the callers; one that reaches here is refused rather
// than sent to this broker's listener. (franz-go finds id's address in
// its metadata, refreshed from a peer when it has none.)
func (f *Forwarder) learn(_ context.Context, id int32) error {
	if id == f.self {
		return fmt.Errorf("%w: broker %d is this one, whose requests are served in process, never forwarded", server.ErrLeaderNotAvailable, id)
	}
	f.peers.RLock()
	ok := f.peers.ids[id]
	f.peers.RUnlock()
	if !ok {
		return fmt.Errorf("%w: broker %d is not live in the cluster's metadata", server.ErrLeaderNotAvailable, id)
	}
	return nil
}

// ListOffset implements server.Forwarder. It goes to the leader the
// caller names, as Fetch does, not to the one franz-go's metadata last
// named: after a leader change that may be the old one, frozen or gone,
// until franz-go refreshes.
func (f *Forwarder) ListOffset(ctx context.Context, leader int32, topic string, partition int32, ts int64) (offset, timestamp int64, err error) {
	if err := f.learn(ctx, leader); err != nil {
		return 0, 0, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, f.cl.Broker(int(leader)))
	if err != nil {
		return 0, 0, fmt.Errorf("%w: list offsets of %s-%d from broker %d: %v", coreError(err), topic, partition, leader, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, 0, fmt.Errorf("%w: list offsets of %s-%d: %d topics answered", server.ErrLeaderNotAvailable, topic, partition, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		err := kerr.ErrorForCode(p.ErrorCode)
		return 0, 0, fmt.Errorf("%w: list offsets of %s-%d: %v", coreError(err), topic, partition, err)
	}
	return p.Offset, p.Timestamp, nil
}
