// Package fetcher copies partitions from their leader onto this broker's
// follower replicas: Kafka's ReplicaFetcherThread. One Fetcher serves one
// leader broker, with one connection and one goroutine, and fetches all
// its partitions in each Fetch (with this broker's id as the replica id,
// so the leader reads to its log end and counts this follower's progress),
// through an incremental fetch session (KIP-227, session.go): after the
// first, full, fetch, a Fetch lists only the partitions whose fetch offset
// or leader epoch moved, or that were added or dropped, and the answer
// only the partitions that changed; the leader reads and counts the
// others from its session, at the offsets last listed.
//
// Each answer is applied partition by partition: batches are appended
// with the leader's offsets (replication.Partition.AppendAsFollower), then
// the leader's high watermark is followed. A partition the leader answers
// with an error waits out the backoff and is asked for again, as Kafka
// 2.8's fetcher does: NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH often
// means the leader has not heard the controller yet (it tells brokers in
// parallel), and the caller moves a partition whose leader changed
// (Remove, Add to the new leader's Fetcher). The other partitions go on.
// Unlike Kafka, a partition refused as not led (NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_LEADER_EPOCH) within one backoff of being Added is asked for
// again after quickRetry: after a leader change the follower often asks
// before the new leader has heard, and the full backoff would add a second
// to every failover (acks=all waits for this follower).
// A connection error reconnects after the backoff.
//
// A partition Added first truncates to its leader's epoch boundary
// (KIP-101/279): the Fetcher asks the leader OffsetForLeaderEpoch for the
// end of the replica's latest epoch and cuts its log there, in as many
// rounds as the replica needs, before fetching it. A replica without an
// epoch history truncates to its high watermark instead.
package fetcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/epoch"
	"github.com/ferry-mq/ferry/replication/wire"
	"github.com/ferry-mq/ferry/storage"
)

// Replica is the local follower replica a Fetcher copies into
// (*replication.Partition).
type Replica interface {
	Topic() string
	Index() int32
	LogEndOffset() int64
	LeaderEpoch() int32
	AppendAsFollower(batches []byte) (storage.AppendResult, error)
	FollowHighWatermark(leaderHW int64)
	TruncationQuery() (req epoch.Request, ask bool)
	TruncateForLeader(answer epoch.EndOffset) (done bool, err error)
	TruncateToHighWatermark() error
}

// Config is one Fetcher's; the zero durations and sizes take Kafka's
// defaults.
type Config struct {
	// BrokerID is this broker: the fetch's replica id.
	BrokerID int32
	// Leader and Addr are the source broker and its inter-broker listener.
	Leader int32
	Addr   string
	// Dial connects to the leader's inter-broker listener (nil: plain
	// TCP; TLS when that listener is SSL).
	Dial wire.DialFunc
	// MaxWait is replica.fetch.wait.max.ms (500 ms), MinBytes
	// replica.fetch.min.bytes (1), MaxBytes replica.fetch.response.max.bytes
	// (10 MiB), PartitionMaxBytes replica.fetch.max.bytes (1 MiB), Backoff
	// replica.fetch.backoff.ms (1 s).
	MaxWait           time.Duration
	MinBytes          int32
	MaxBytes          int32
	PartitionMaxBytes int32
	Backoff           time.Duration
	// RequestTimeout bounds one round trip (MaxWait plus 30 s by default).
	RequestTimeout time.Duration
	// Throttle, when set, is the follower replication throttle: a
	// throttled partition that has not caught up is left out of fetches
	// while the rate is used up.
	Throttle Throttle
	Logger   *slog.Logger
}

// Throttle is the follower side of the replication throttle (the
// broker's follower.replication.throttled.rate and the topics'
// follower.replication.throttled.replicas).
type Throttle interface {
	// Throttled reports whether this broker's replica of the partition
	// is throttled.
	Throttled(topic string, partition int32) bool
	// Delay is how long until the rate allows another throttled fetch.
	Delay(now time.Time) time.Duration
	// Record counts bytes fetched for throttled replicas.
	Record(n int, now time.Time)
}

func (c *Config) defaults() {
	if c.MaxWait <= 0 {
		c.MaxWait = 500 * time.Millisecond
	}
	if c.MinBytes <= 0 {
		c.MinBytes = 1
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 10 << 20
	}
	if c.PartitionMaxBytes <= 0 {
		c.PartitionMaxBytes = 1 << 20
	}
	if c.Backoff <= 0 {
		c.Backoff = time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = c.MaxWait + 30*time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// fetchVersion names topics (v13+ use ids) and carries the leader epoch
// and the last fetched epoch.
const fetchVersion = 12

type key struct {
	topic     string
	partition int32
}

// Status is what a Fetcher knows of one partition.
type Status struct {
	// Err is the leader's last error for it (nil: fetching).
	Err error
	// Fetches counts the answers that named the partition, applied
	// without error (an incremental fetch's answer leaves out the
	// partitions that did not change).
	Fetches int64
}

type partitionState struct {
	replica Replica
	// truncating: the epoch boundary is not settled yet; not fetched.
	truncating bool
	retryAt    time.Time // after an error: not fetched before
	addedAt    time.Time // when Add handed it to this Fetcher (its leader)
	lastErr    error
	fetches    int64
	// caughtUp: the last answer left the replica at the leader's high
	// watermark, so it counts as in sync and is not throttled (Kafka's
	// isReplicaInSync, a lag of 0).
	caughtUp bool
	// throttled: the partition was fetched under the throttle, so its
	// bytes count against the rate.
	throttled bool
	// failingSince and loggedAt: when lastErr began, and was last logged.
	failingSince, loggedAt time.Time
}

// Fetcher copies its partitions from one leader until Closed.
type Fetcher struct {
	cfg    Config
	logger *slog.Logger
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	// applyMu is held while an answer is applied, so once Remove returns
	// no append to the removed partition is in flight.
	applyMu sync.Mutex
	// current is the connection in use, which Close cuts.
	current atomic.Pointer[wire.Conn]
	// opSince is when the network call the goroutine waits on began (unix
	// nanoseconds; 0: none), opDial whether it is a dial: Add cuts one
	// that is overdue (kickIfStuck), and kicked skips the backoff after.
	opSince atomic.Int64
	opDial  atomic.Bool
	kicked  atomic.Bool
	// session is the incremental fetch session with the leader; only the
	// goroutine uses it.
	session session
	mu      struct {
		sync.Mutex
		partitions map[key]*partitionState
		// cancelDial cuts the dial in progress (nil: none).
		cancelDial context.CancelFunc
	}
}

// Start runs a Fetcher for cfg.Leader.
func Start(cfg Config) *Fetcher {
	cfg.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fetcher{cfg: cfg, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
		logger: cfg.Logger.With("component", "replica-fetcher", "leader", cfg.Leader)}
	f.mu.partitions = map[key]*partitionState{}
	go f.run(ctx)
	return f
}

// Add starts copying r from its log end.
func (f *Fetcher) Add(r Replica) {
	now := time.Now()
	f.mu.Lock()
	f.mu.partitions[key{r.Topic(), r.Index()}] = &partitionState{replica: r, truncating: true, addedAt: now}
	f.mu.Unlock()
	f.kickIfStuck(now)
	f.poke()
}

// stuckAfter is how long past its due time a network call is presumed
// lost: a dial answers within a round trip, a fetch within MaxWait.
const stuckAfter = time.Second

// kickIfStuck cuts the dial or request the goroutine has waited on for
// longer than it should take, so a partition just given (a new role,
// typically right after a network partition healed) is not held behind
// it. Issue 23: a fetch sent before a partition waits for TCP to
// retransmit its answer, with backoff, seconds after the heal (or for
// RequestTimeout), while a new connection would be answered at once.
func (f *Fetcher) kickIfStuck(now time.Time) {
	since := f.opSince.Load()
	if since == 0 {
		return
	}
	dial, age := f.opDial.Load(), now.Sub(time.Unix(0, since))
	due := stuckAfter
	if !dial {
		due += f.cfg.MaxWait
	}
	if age < due {
		return
	}
	f.kicked.Store(true)
	f.logger.Info("the leader has not answered for longer than it should; reconnecting for a new partition role",
		"addr", f.cfg.Addr, "dialing", dial, "waited", age.Round(time.Millisecond))
	if dial {
		f.mu.Lock()
		if f.mu.cancelDial != nil {
			f.mu.cancelDial()
		}
		f.mu.Unlock()
	} else if c := f.current.Load(); c != nil {
		c.Close()
	}
}

// beginOp and endOp bracket a network call for kickIfStuck.
func (f *Fetcher) beginOp(dial bool) {
	f.opDial.Store(dial)
	f.opSince.Store(time.Now().UnixNano())
}

func (f *Fetcher) endOp() { f.opSince.Store(0) }

// backoff waits out the backoff after a failure, unless kickIfStuck
// caused it: then the next attempt goes at once.
func (f *Fetcher) backoff(ctx context.Context) {
	if f.kicked.Swap(false) {
		return
	}
	f.sleep(ctx, f.cfg.Backoff)
}

// dial connects to the leader; kickIfStuck may cut it.
func (f *Fetcher) dial(ctx context.Context) (*wire.Conn, error) {
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.mu.Lock()
	f.mu.cancelDial = cancel
	f.mu.Unlock()
	f.beginOp(true)
	defer func() {
		f.endOp()
		f.mu.Lock()
		f.mu.cancelDial = nil
		f.mu.Unlock()
	}()
	maxFrame := int(f.cfg.MaxBytes) + int(f.cfg.PartitionMaxBytes) + 1<<20
	return wire.DialWith(dctx, f.cfg.Dial, f.cfg.Addr, "ferry-replica-fetcher-"+strconv.Itoa(int(f.cfg.BrokerID)),
		10*time.Second, maxFrame)
}

// Remove stops copying a partition; once it returns, nothing more is
// appended to it by this Fetcher.
func (f *Fetcher) Remove(topic string, partition int32) {
	f.mu.Lock()
	delete(f.mu.partitions, key{topic, partition})
	f.mu.Unlock()
	f.applyMu.Lock() // wait out an answer being applied
	f.applyMu.Unlock()
}

// Status reports a partition's state; ok is false when it is not here.
func (f *Fetcher) Status(topic string, partition int32) (st Status, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps, ok := f.mu.partitions[key{topic, partition}]
	if !ok {
		return Status{}, false
	}
	return Status{Err: ps.lastErr, Fetches: ps.fetches}, true
}

// Len is the number of partitions the Fetcher copies.
func (f *Fetcher) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mu.partitions)
}

// Close stops the Fetcher and waits for its goroutine.
func (f *Fetcher) Close() {
	f.cancel()
	// A long-poll in flight would hold the goroutine for up to MaxWait
	// (and a frozen leader for the request timeout): cut it.
	if c := f.current.Load(); c != nil {
		c.Close()
	}
	<-f.done
}

func (f *Fetcher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *Fetcher) run(ctx context.Context) {
	defer close(f.done)
	var c *wire.Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for ctx.Err() == nil {
		truncating := f.truncateWithoutLeader(time.Now())
		req, wanted, throttleDelay := f.buildRequest(time.Now())
		if len(wanted) == 0 && len(truncating) == 0 {
			f.idle(ctx, throttleDelay)
			continue
		}
		if c == nil {
			var err error
			if c, err = f.dial(ctx); err != nil {
				f.logger.Warn("cannot reach the leader", "addr", f.cfg.Addr, "err", err)
				f.backoff(ctx)
				continue
			}
			f.kicked.Store(false) // a kick meant for an older call
			f.current.Store(c)
			if ctx.Err() != nil { // Close ran before the Store
				c.Close()
			}
		}
		if len(truncating) > 0 {
			if err := f.truncate(c, truncating, time.Now()); err != nil {
				f.logger.Warn("OffsetForLeaderEpoch to the leader failed; reconnecting", "addr", f.cfg.Addr, "err", err)
				c.Close()
				c = nil
				f.backoff(ctx)
			}
			continue // the truncated partitions join the next fetch
		}
		full := f.session.shape(req)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		f.beginOp(false)
		err := c.RoundTrip(req, resp, f.cfg.RequestTimeout)
		f.endOp()
		if err != nil {
			f.session.lost()
			if ctx.Err() == nil {
				f.logger.Warn("fetch from the leader failed; reconnecting", "addr", f.cfg.Addr, "err", err)
			}
			c.Close()
			c = nil
			f.backoff(ctx)
			continue
		}
		if err := f.session.answered(resp, full); err != nil {
			f.logger.Info("the leader ended the fetch session; fetching in full", "err", err)
			continue
		}
		f.apply(resp, wanted, time.Now())
	}
}

// idle waits for a partition to be added, for the first retry due, or
// (throttleDelay > 0) for the throttle to allow a fetch again.
func (f *Fetcher) idle(ctx context.Context, throttleDelay time.Duration) {
	wait, now := f.cfg.Backoff, time.Now()
	if throttleDelay > 0 {
		wait = min(wait, throttleDelay)
	}
	f.mu.Lock()
	for _, ps := range f.mu.partitions {
		if ps.retryAt.After(now) {
			wait = min(wait, ps.retryAt.Sub(now))
		}
	}
	f.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-f.wake:
	case <-time.After(wait):
	}
}

// sleep waits d, or less when a partition is Added meanwhile (a new role
// is worth a new attempt at once).
func (f *Fetcher) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-f.wake:
	case <-time.After(d):
	}
}

// buildRequest asks for every partition not waiting out an error nor held
// back by the throttle, each from its log end; wanted maps the request's
// partitions to their state. throttleDelay, when positive, is how long
// the throttle holds back the partitions it left out.
func (f *Fetcher) buildRequest(now time.Time) (req *kmsg.FetchRequest, wanted map[key]*partitionState, throttleDelay time.Duration) {
	req = kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaID = f.cfg.BrokerID
	req.MaxWaitMillis = int32(f.cfg.MaxWait / time.Millisecond)
	req.MinBytes, req.MaxBytes = f.cfg.MinBytes, f.cfg.MaxBytes
	wanted = map[key]*partitionState{}
	topics := map[string]int{}
	rateDelay := time.Duration(-1) // not asked yet: most fetchers throttle nothing
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, ps := range f.mu.partitions {
		if ps.truncating || now.Before(ps.retryAt) {
			continue
		}
		ps.throttled = f.cfg.Throttle != nil && !ps.caughtUp && f.cfg.Throttle.Throttled(k.topic, k.partition)
		if ps.throttled {
			if rateDelay < 0 {
				rateDelay = f.cfg.Throttle.Delay(now)
			}
			if rateDelay > 0 {
				throttleDelay = rateDelay
				continue
			}
		}
		i := wire.TopicSlot(topics, &req.Topics, k.topic, func(topic string) kmsg.FetchRequestTopic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			return rt
		})
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = k.partition
		rp.FetchOffset = ps.replica.LogEndOffset()
		rp.CurrentLeaderEpoch = ps.replica.LeaderEpoch()
		rp.PartitionMaxBytes = f.cfg.PartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		wanted[k] = ps
	}
	return req, wanted, throttleDelay
}

// apply appends each partition's answer and follows its high watermark.
func (f *Fetcher) apply(resp *kmsg.FetchResponse, wanted map[key]*partitionState, now time.Time) {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	if resp.ErrorCode != 0 {
		f.logger.Warn("the leader refused the fetch", "err", kerr.ErrorForCode(resp.ErrorCode))
		f.backoffAll(wanted, now, kerr.ErrorForCode(resp.ErrorCode))
		return
	}
	for _, rt := range resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			ps, ok := wanted[key{rt.Topic, rp.Partition}]
			if !ok || !f.stillHere(rt.Topic, rp.Partition, ps) {
				continue // not asked for, or removed meanwhile
			}
			f.applyPartition(ps, rp, now)
		}
	}
}

func (f *Fetcher) stillHere(topic string, partition int32, ps *partitionState) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.partitions[key{topic, partition}] == ps
}

func (f *Fetcher) applyPartition(ps *partitionState, rp *kmsg.FetchResponseTopicPartition, now time.Time) {
	r := ps.replica
	if rp.ErrorCode != 0 {
		f.fail(ps, now, kerr.ErrorForCode(rp.ErrorCode))
		return
	}
	if len(rp.RecordBatches) > 0 {
		if _, err := r.AppendAsFollower(rp.RecordBatches); err != nil {
			f.fail(ps, now, fmt.Errorf("append at %d: %w", r.LogEndOffset(), err))
			return
		}
		if ps.throttled {
			f.cfg.Throttle.Record(len(rp.RecordBatches), now)
		}
	}
	r.FollowHighWatermark(rp.HighWatermark)
	f.mu.Lock()
	ps.lastErr = nil
	ps.fetches++
	ps.caughtUp = r.LogEndOffset() >= rp.HighWatermark
	f.mu.Unlock()
}

// fail records a partition's error: one the controller resolves parks the
// partition until it is moved, any other waits out the backoff.
func (f *Fetcher) fail(ps *partitionState, now time.Time, err error) {
	f.mu.Lock()
	changed := ps.lastErr == nil || ps.lastErr.Error() != err.Error()
	// The same error again is logged once more every failingReminder, so a
	// partition stuck on it is visible in the logs.
	remind := !changed && now.Sub(ps.loggedAt) >= failingReminder
	if changed || remind {
		ps.loggedAt = now
		if changed {
			ps.failingSince = now
		}
	}
	since := ps.failingSince
	ps.lastErr, ps.retryAt = err, now.Add(f.retryDelay(ps, err, now))
	f.mu.Unlock()
	if changed {
		f.logger.Warn("replica fetch failed", "topic", ps.replica.Topic(), "partition", ps.replica.Index(), "err", err)
	} else if remind {
		f.logger.Warn("replica fetch still failing", "topic", ps.replica.Topic(), "partition", ps.replica.Index(),
			"err", err, "since", now.Sub(since).Round(time.Second))
	}
}

// failingReminder is how often a partition failing with the same error
// is logged again.
const failingReminder = 30 * time.Second

// quickRetry is how soon a just-Added partition refused as not led is
// asked for again: long enough not to flood the leader (at most
// Backoff/quickRetry requests per leader change), short next to a
// failover.
const quickRetry = 50 * time.Millisecond

// retryDelay is the backoff, or quickRetry while the leader may not have
// heard the controller yet. f.mu is held.
func (f *Fetcher) retryDelay(ps *partitionState, err error, now time.Time) time.Duration {
	notLedYet := errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.UnknownLeaderEpoch)
	if notLedYet && now.Sub(ps.addedAt) < f.cfg.Backoff {
		return min(quickRetry, f.cfg.Backoff)
	}
	return f.cfg.Backoff
}

func (f *Fetcher) backoffAll(wanted map[key]*partitionState, now time.Time, err error) {
	for _, ps := range wanted {
		f.mu.Lock()
		ps.lastErr, ps.retryAt = err, now.Add(f.cfg.Backoff)
		f.mu.Unlock()
	}
}

// offsetForLeaderEpochVersion carries the replica id (v3+) and the
// current leader epoch (v2+).
const offsetForLeaderEpochVersion = 3

// truncateWithoutLeader settles the truncating partitions that have no
// epoch history (KIP-101's fallback: the high watermark) and returns those
// that must ask the leader.
func (f *Fetcher) truncateWithoutLeader(now time.Time) map[key]*partitionState {
	f.mu.Lock()
	var ask map[key]*partitionState
	var local []*partitionState
	for k, ps := range f.mu.partitions {
		if !ps.truncating || now.Before(ps.retryAt) {
			continue
		}
		if _, needs := ps.replica.TruncationQuery(); needs {
			if ask == nil {
				ask = map[key]*partitionState{}
			}
			ask[k] = ps
		} else {
			local = append(local, ps)
		}
	}
	f.mu.Unlock()
	for _, ps := range local {
		f.applyMu.Lock()
		err := ps.replica.TruncateToHighWatermark()
		f.applyMu.Unlock()
		f.settleTruncation(ps, true, err, now)
	}
	return ask
}

// truncate asks the leader where each partition's latest epoch ends and
// cuts the replicas there.
func (f *Fetcher) truncate(c *wire.Conn, parts map[key]*partitionState, now time.Time) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(offsetForLeaderEpochVersion)
	req.ReplicaID = f.cfg.BrokerID
	topics := map[string]int{}
	for k, ps := range parts {
		q, _ := ps.replica.TruncationQuery()
		i := wire.TopicSlot(topics, &req.Topics, k.topic, func(topic string) kmsg.OffsetForLeaderEpochRequestTopic {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = topic
			return rt
		})
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = k.partition, q.CurrentLeaderEpoch, q.LeaderEpoch
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	f.beginOp(false)
	err := c.RoundTrip(req, resp, f.cfg.RequestTimeout)
	f.endOp()
	if err != nil {
		return err
	}
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			ps, ok := parts[key{rt.Topic, rp.Partition}]
			if !ok || !f.stillHere(rt.Topic, rp.Partition, ps) {
				continue
			}
			if rp.ErrorCode != 0 {
				f.fail(ps, now, kerr.ErrorForCode(rp.ErrorCode))
				continue
			}
			done, err := ps.replica.TruncateForLeader(epoch.EndOffset{Epoch: rp.LeaderEpoch, Offset: rp.EndOffset})
			f.settleTruncation(ps, done, err, now)
		}
	}
	return nil
}

// settleTruncation ends a partition's truncation (it is fetched next), or
// records why it failed.
func (f *Fetcher) settleTruncation(ps *partitionState, done bool, err error, now time.Time) {
	if err != nil {
		f.fail(ps, now, fmt.Errorf("truncate at %d: %w", ps.replica.LogEndOffset(), err))
		return
	}
	f.mu.Lock()
	ps.truncating = !done
	f.mu.Unlock()
}
