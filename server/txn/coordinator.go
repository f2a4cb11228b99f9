package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/ownership"
)

// Config holds the coordinator's settings. The zero value gives Kafka's
// defaults.
type Config struct {
	Logger *slog.Logger
	// Markers writes commit and abort markers to the transaction's
	// partitions (their leaders, here or on other brokers). Required.
	// Close closes it when it has a Close method (ClusterMarkers).
	Markers MarkerWriter
	// StatePartitions is transaction.state.log.num.partitions, used when
	// creating __transaction_state. Default 50.
	StatePartitions int32
	// StateReplicationFactor is transaction.state.log.replication.factor:
	// the replicas of __transaction_state when a cluster creates it (on the
	// first FindCoordinator of a transaction). Default 3; a single node
	// uses 1.
	StateReplicationFactor int16
	// StateMinISR is transaction.state.log.min.isr, the topic's
	// min.insync.replicas. Default 2 (1 on a single node).
	StateMinISR int
	// StateSegmentBytes is transaction.state.log.segment.bytes. Default
	// 100 MiB.
	StateSegmentBytes int32
	// MaxTimeout is transaction.max.timeout.ms: an InitProducerId asking a
	// longer transaction.timeout.ms is answered INVALID_TRANSACTION_TIMEOUT.
	// Default 15 minutes.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms: an id without an
	// open transaction that sees no request this long is removed. Default
	// 7 days.
	IDExpiration time.Duration
	// AbortTimedOutInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms. Default 10 s.
	AbortTimedOutInterval time.Duration
	// RemoveExpiredInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms. Default 1 h.
	RemoveExpiredInterval time.Duration
	// MarkerRetryBackoff is the wait before markers that failed are sent
	// again. Default 100 ms.
	MarkerRetryBackoff time.Duration
	// Now is the clock; tests inject one. Default time.Now.
	Now func() time.Time
	// ManualTick turns off the background loop; tests call Tick.
	ManualTick bool
	// StateAcknowledged, when set, runs after each append of state records
	// returns and before the coordinator acts on its outcome: a test that
	// blocks in it holds back the acknowledgement as replicas that have not
	// fetched yet would, while the records are in this broker's log.
	// Tests outside the package only; nil in production.
	StateAcknowledged func()
}

// Defaults fills zero fields.
func (c *Config) Defaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.StatePartitions == 0 {
		c.StatePartitions = 50
	}
	if c.StateReplicationFactor == 0 {
		c.StateReplicationFactor = 3
	}
	if c.StateMinISR == 0 {
		c.StateMinISR = 2
	}
	if c.StateSegmentBytes == 0 {
		c.StateSegmentBytes = 100 << 20
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = 15 * time.Minute
	}
	if c.IDExpiration == 0 {
		c.IDExpiration = 7 * 24 * time.Hour
	}
	if c.AbortTimedOutInterval == 0 {
		c.AbortTimedOutInterval = 10 * time.Second
	}
	if c.RemoveExpiredInterval == 0 {
		c.RemoveExpiredInterval = time.Hour
	}
	if c.MarkerRetryBackoff == 0 {
		c.MarkerRetryBackoff = 100 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.Markers == nil:
		return errors.New("txn: a MarkerWriter is required")
	case c.StatePartitions < 1:
		return fmt.Errorf("transaction.state.log.num.partitions %d: must be >= 1", c.StatePartitions)
	case c.StateReplicationFactor < 1:
		return fmt.Errorf("transaction.state.log.replication.factor %d: must be >= 1", c.StateReplicationFactor)
	case c.StateMinISR < 1:
		return fmt.Errorf("transaction.state.log.min.isr %d: must be >= 1", c.StateMinISR)
	case c.StateSegmentBytes < 1024:
		return fmt.Errorf("transaction.state.log.segment.bytes %d: must be >= 1024", c.StateSegmentBytes)
	case c.MaxTimeout < time.Millisecond:
		return fmt.Errorf("transaction.max.timeout.ms %v: must be >= 1", c.MaxTimeout)
	case c.IDExpiration < time.Millisecond:
		return fmt.Errorf("transactional.id.expiration.ms %v: must be >= 1", c.IDExpiration)
	case c.AbortTimedOutInterval <= 0 || c.RemoveExpiredInterval <= 0 || c.MarkerRetryBackoff <= 0:
		return errors.New("txn: cleanup intervals and the marker backoff must be > 0")
	}
	return nil
}

// Coordinator is this broker's transaction coordinator: it serves the
// transactional ids whose __transaction_state partition it leads.
//
// Lock order: own, then mu, then an entry's mu. No lock is held across a
// log write or a marker request.
type Coordinator struct {
	broker *server.Broker
	cfg    Config
	logger *slog.Logger

	// singleNode serializes the lazy creation of __transaction_state on a
	// single node: a request arriving while another creates and loads it
	// waits for the load instead of finding the topic but not its
	// partitions (NOT_COORDINATOR).
	singleNode struct {
		sync.Mutex
		ready atomic.Bool
	}

	mu struct {
		sync.Mutex
		txns map[string]*entry
	}
	// own is the __transaction_state partitions this broker leads
	// (ownership.go).
	own *ownership.Table[map[string]Txn]

	// writers groups the state writes of each __transaction_state
	// partition (statewriter.go).
	writers struct {
		sync.Mutex
		m map[int32]*stateWriter
	}
	// stateAppends counts the appends of state records (each holding one
	// or more records).
	stateAppends atomic.Int64

	// state is __transaction_state: its creation, an id's partition and
	// coordinator, its log read back.
	state *ownership.Topic
	// life runs the tick loop, the loads and the completions; Close ends it.
	life *ownership.Lifecycle

	// concurrentWait is how long a request waits out a transition in
	// flight (concurrentWait); set before the first request.
	concurrentWait time.Duration
	// endingCompletion, when not nil, runs as a completion ends
	// (endCompletion); tests hold it there. Set before the first request.
	endingCompletion func()
	// refused, when not nil, runs when a request was refused
	// CONCURRENT_TRANSACTIONS, before it looks at what to wait for
	// (transitionAnswering); tests end the write it met there. Set
	// before the first request.
	refused func()
	// appendState appends a group of state records and waits for the
	// in-sync replicas (the broker's Produce); tests put replication
	// delays and losses around it. Set before the first request.
	appendState func(ctx context.Context, req *server.ProduceRequest) error
}

// entry is one transactional id's metadata, owned by its mu.
type entry struct {
	mu  sync.Mutex
	txn Txn
	// written: the metadata is in the log (a first InitProducerId that
	// failed to write leaves none).
	written bool
	// busy: a transition is being written; other requests are answered
	// CONCURRENT_TRANSACTIONS, as Kafka's pendingState does.
	busy bool
	// completing: markers are being sent for the Prepare* state.
	completing bool
	// markersDone: the completing transaction's markers are all written
	// and the completer took the parked requests; later ones wait for its
	// write instead of parking.
	markersDone bool
	// parked are requests that arrived while the markers were being
	// written: the completer decides them after the completion and writes
	// one record for all (Txn.CompleteThen), so the producer's next
	// transaction starts without a write of its own.
	parked []*parkedRequest
	// onPark, when not nil, is closed by the next request to park: the
	// completer waits for it (completionLinger).
	onPark chan struct{}
	// changed, when not nil, is closed when busy or completing clears:
	// requests waiting out CONCURRENT_TRANSACTIONS try again. changes
	// counts those wake-ups, so that a request refused before one, and
	// waiting after it, sees it passed (transitionAnswering).
	changed chan struct{}
	changes uint64
	// preparedLate: a transition prepared a commit or abort while the
	// previous completion was still ending (completing, its record
	// written), so it did not start its markers: endCompletion does. At
	// transaction.version 1 the two transactions have the same producer
	// id, epoch and state, which sameTransaction cannot tell apart.
	preparedLate bool

	// undurable are partitions txn holds that no acknowledged record of
	// the id holds yet: a producer's AddPartitionsToTxn is answered once
	// its record is in this broker's log (writeEarly), and a leader's
	// KIP-890 verification of such a partition waits until a record
	// holding it is acknowledged (awaitDurable), so no data reaches a
	// partition that a new coordinator, reading the log, would not know
	// to send a marker to.
	undurable []TopicPartition
	// earlyWrites counts the early records not yet acknowledged or
	// failed; settled, when not nil, is closed when one of them ends.
	earlyWrites int
	settled     chan struct{}

	// markersWritten are the last markers a completer saw all written
	// (hasMarkersWritten: any): a state whose Pending are these, landing
	// from a write decided before they were, drops them (settledLocked).
	markersWritten    markersKey
	hasMarkersWritten bool
}

// markersKey names one transaction's markers: producer id, the markers'
// epoch and outcome.
type markersKey struct {
	producerID int64
	epoch      int16
	commit     bool
}

func preparedKey(t *Txn) markersKey {
	return markersKey{t.ProducerID, t.ProducerEpoch, t.State == PrepareCommit}
}

func pendingKey(pm *PendingMarkers) markersKey {
	return markersKey{pm.ProducerID, pm.ProducerEpoch, pm.Commit}
}

// settledLocked is t without its Pending markers when they are written
// already; e.mu is held.
func (e *entry) settledLocked(t Txn) Txn {
	if t.Pending != nil && e.hasMarkersWritten && pendingKey(t.Pending) == e.markersWritten {
		t.Pending = nil
	}
	return t
}

// markersWrittenLocked records that the markers k are all written, and
// drops them from the state's Pending; e.mu is held.
func (e *entry) markersWrittenLocked(k markersKey) {
	e.markersWritten, e.hasMarkersWritten = k, true
	e.txn = e.settledLocked(e.txn)
}

// durableLocked records that t, a state of e's id, is acknowledged: the
// partitions it holds are durable, and none of an ended transaction
// matters any more. e.mu is held.
func (e *entry) durableLocked(t Txn) {
	if t.State != Ongoing {
		e.undurable = nil
		return
	}
	e.undurable = slices.DeleteFunc(e.undurable, t.Has)
}

// wakeLingerLocked ends a completer's wait for the producer's next
// request (completionLinger): a request that began the next transaction
// without parking (ahead of the markers, or quietly) needs no completion
// record, and the markers of that transaction's end must not wait for
// the linger. e.mu is held.
func (e *entry) wakeLingerLocked() {
	if e.onPark != nil {
		close(e.onPark)
		e.onPark = nil
	}
}

// notifyLocked wakes the requests waiting for e to change; e.mu is held.
func (e *entry) notifyLocked() {
	e.changes++
	if e.changed != nil {
		close(e.changed)
		e.changed = nil
	}
}

// New starts the coordinator. On a single node it loads
// __transaction_state before returning if it exists, completing the
// transactions left prepared (the first request of a transaction creates
// it); on a cluster it serves the partitions
// the controller makes this broker lead, each once loaded.
func New(b *server.Broker, cfg Config) (*Coordinator, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{broker: b, cfg: cfg, logger: cfg.Logger.With("component", "txn"), life: ownership.NewLifecycle(),
		concurrentWait: concurrentWait}
	c.appendState = func(ctx context.Context, req *server.ProduceRequest) error {
		_, err := b.Produce(ctx, req)
		if cfg.StateAcknowledged != nil {
			cfg.StateAcknowledged()
		}
		return err
	}
	c.mu.txns = map[string]*entry{}
	c.state = &ownership.Topic{Broker: b, Name: StateTopic, Partitions: cfg.StatePartitions,
		ReplicationFactor: cfg.StateReplicationFactor, ReplicationSetting: "transaction.state.log.replication.factor",
		SegmentBytes: cfg.StateSegmentBytes, MinISR: cfg.StateMinISR,
		Configs:     map[string]string{"unclean.leader.election.enable": "false"},
		PartitionOf: StatePartition, NoCoordinator: errNoCoordinator}
	c.own = c.newOwnership()
	c.writers.m = map[int32]*stateWriter{}
	// Kafka reloads on a new epoch too; here the metadata loaded stays
	// right and markers sent from then on carry the new epoch (the Table
	// keeps it).
	c.own.FollowLeadership(c.state)
	// __transaction_state is created by the first FindCoordinator of a
	// transaction (CoordinatorOf), as Kafka does, so a node that never
	// sees one holds no 50 partitions for it (and max.partitions counts
	// only what is used); one that exists already is loaded now.
	if err := c.loadLedPartitions(); err != nil {
		return nil, err
	}
	if !cfg.ManualTick {
		c.life.TickLoop(ownership.Every{Interval: cfg.AbortTimedOutInterval, Run: c.AbortTimedOut},
			ownership.Every{Interval: cfg.RemoveExpiredInterval, Run: c.RemoveExpired})
	}
	return c, nil
}

// Close stops the tick loop, the loads and the marker senders. Prepared
// transactions are completed by the next coordinator (or this one after a
// restart).
func (c *Coordinator) Close() error {
	// The markers first: a completer waiting for a leader that does not
	// answer gets its error now, not at the request's timeout.
	if m, ok := c.cfg.Markers.(interface{ Close() }); ok {
		m.Close()
	}
	c.life.Close()
	return nil
}

func (c *Coordinator) closed() bool { return c.life.Closed() }

func (c *Coordinator) nowMs() int64 { return c.cfg.Now().UnixMilli() }

// Tick runs both cleanups at the clock's time; tests with ManualTick call it.
func (c *Coordinator) Tick() {
	c.AbortTimedOut()
	c.RemoveExpired()
}

// AbortTimedOut fences and aborts every Ongoing transaction older than its
// timeout (Kafka's abortTimedOutTransactions). A loaded state whose next
// transaction may have begun on its carried partitions unseen
// (MayHaveBegunUnseen) is first probed (probeBeforeAbort): an idle
// producer is not fenced for a transaction it never began.
func (c *Coordinator) AbortTimedOut() {
	now := c.nowMs()
	for _, e := range c.entries() {
		e.mu.Lock()
		due := e.written && !e.busy && e.txn.TimedOut(now)
		t := e.txn
		e.mu.Unlock()
		if !due {
			continue
		}
		if t.MayHaveBegunUnseen() && !c.probeBeforeAbort(t, now) {
			continue
		}
		id := t.ID
		_, code := c.transition(context.Background(), id, false, func(t *Txn) Outcome {
			if !t.TimedOut(now) {
				return answer(0)
			}
			return t.AbortTimedOut(now)
		})
		if code != 0 {
			c.logger.Warn("aborting a timed-out transaction failed", "transactional_id", id, "code", code)
			continue
		}
		c.logger.Info("aborted a timed-out transaction", "transactional_id", id)
	}
}

// probeBeforeAbort probes the leaders of t's carried partitions
// (MayHaveBegunUnseen) for an open transaction of its producer
// (server.TxnMarker.Probe) and reports whether t's next transaction is to
// be aborted as timed out: only when some leader has one open. When none
// has, the next transaction never began, and t is written without its
// carried partitions (Txn.SettleIdle); a probe also revokes the
// verifications the leaders granted the producer's batches, so none can
// land after it unseen. When some leader did not answer, nothing is
// decided: the next check asks again (that partition's data, if any, is
// held back from read_committed readers meanwhile, as while its leader is
// away).
func (c *Coordinator) probeBeforeAbort(t Txn, now int64) (abort bool) {
	// Epochs of -1: a broker that does not know the probe's tag reads the
	// entry as an abort marker, and refuses it as older than the one the
	// partition has from this producer (its previous transaction's), so
	// nothing is ended; its error reads as no answer here.
	probes := make([]server.TxnMarker, len(t.Carried))
	for i, tp := range t.Carried {
		probes[i] = server.TxnMarker{ProducerID: t.ProducerID, ProducerEpoch: -1, CoordinatorEpoch: -1,
			Topic: tp.Topic, Partition: tp.Partition, Probe: true}
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	errs := c.cfg.Markers.WriteTxnMarkers(ctx, probes)
	cancel()
	var unanswered error
	for i, m := range probes {
		err := errNoAnswer
		if i < len(errs) {
			err = errs[i]
		}
		switch {
		case err == nil, errors.Is(err, ErrPartitionGone):
		case txnOpenThere(err):
			return true
		default:
			unanswered = fmt.Errorf("%s-%d: %w", m.Topic, m.Partition, err)
		}
	}
	if unanswered != nil {
		c.logger.Warn("probing a loaded transaction's carried partitions failed; asking again at the next check",
			"transactional_id", t.ID, "err", unanswered)
		return false
	}
	settled := false
	_, code := c.transition(context.Background(), t.ID, false, func(cur *Txn) Outcome {
		if !sameTransaction(cur, &t) {
			return answer(0) // the producer came back meanwhile
		}
		out := cur.SettleIdle(now) // nothing, unless still unseen
		settled = out.Write
		return out
	})
	switch {
	case code != 0:
		c.logger.Warn("recording that a loaded transaction's successor never began failed", "transactional_id", t.ID, "code", code)
		return false
	case !settled:
		return false // its producer was heard meanwhile: decided on what it asked
	}
	c.logger.Info("no transaction began on a loaded state's carried partitions; the producer stays at its epoch",
		"transactional_id", t.ID, "producer_id", t.ProducerID, "producer_epoch", t.ProducerEpoch)
	return false
}

// txnOpenThere: a probe's leader has the producer's transaction open
// (CONCURRENT_TRANSACTIONS from a remote leader, the core's ErrTxnOpen
// from this broker).
func txnOpenThere(err error) bool {
	return errors.Is(err, server.ErrTxnOpen) || errors.Is(err, kerr.ConcurrentTransactions)
}

// probeTimeout bounds one round of probes; a leader not answering within
// it is asked again at the next check.
const probeTimeout = 10 * time.Second

// RemoveExpired removes the ids idle for transactional.id.expiration.ms,
// writing a tombstone for each.
func (c *Coordinator) RemoveExpired() {
	now := c.nowMs()
	exp := c.cfg.IDExpiration.Milliseconds()
	for _, e := range c.entries() {
		e.mu.Lock()
		due := e.written && !e.busy && e.txn.Expired(now, exp)
		id := e.txn.ID
		e.mu.Unlock()
		if !due {
			continue
		}
		next, code := c.transition(context.Background(), id, false, func(t *Txn) Outcome {
			if !t.Expired(now, exp) {
				return answer(0)
			}
			return t.Expire(now)
		})
		if code == 0 && next.State == Dead {
			c.logger.Info("removed an expired transactional id", "transactional_id", id)
		}
	}
}

func (c *Coordinator) entries() []*entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	es := make([]*entry, 0, len(c.mu.txns))
	for _, e := range c.mu.txns {
		es = append(es, e)
	}
	return es
}

// Transactions lists the ids this broker coordinates now, sorted, as it
// acts on them (as Describe).
func (c *Coordinator) Transactions() []Txn {
	var out []Txn
	for _, e := range c.entries() {
		e.mu.Lock()
		if e.written {
			out = append(out, e.txn.begunCarried())
		}
		e.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
