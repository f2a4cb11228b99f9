package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/ownership"
	"github.com/ferry-mq/ferry/server/records"
)

// Topic is the internal compacted topic holding the keys.
const Topic = server.IdempotencyKeysTopic

// Config describes the store. The zero value plus Defaults is the
// documented default.
type Config struct {
	// Window is how long a key's answer is kept and replayed, counted
	// from when its request arrived. Default 1 h (docs/http-idempotency.md
	// says why not Stripe's 24 h).
	Window time.Duration
	// MaxBytes bounds the memory the keys of the partitions this broker
	// owns may take (keys and recorded answers); a new key beyond it is
	// refused (ErrFull) until keys expire. Default 64 MiB.
	MaxBytes int64
	// Partitions and ReplicationFactor shape the keys topic when it is
	// created (a single node uses one replica). Defaults 16 and 3.
	Partitions        int32
	ReplicationFactor int16
	// SegmentBytes is the keys topic's segment.bytes: the cleaner compacts
	// all but the active segment. Default 16 MiB.
	SegmentBytes int32
	// WaitInFlight bounds how long a retry waits for its original still in
	// flight before it is answered ErrInProgress. Default 35 s (a produce's
	// own acks timeout, 30 s, and some).
	WaitInFlight time.Duration
	// ExpiryInterval is how often keys past the window are tombstoned.
	// Default 1 min.
	ExpiryInterval time.Duration
	Logger         *slog.Logger
	// Now is the clock (tests move it).
	Now func() time.Time
}

// Defaults fills zero fields.
func (c *Config) Defaults() {
	if c.Window == 0 {
		c.Window = time.Hour
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = 64 << 20
	}
	if c.Partitions == 0 {
		c.Partitions = 16
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = 3
	}
	if c.SegmentBytes == 0 {
		c.SegmentBytes = 16 << 20
	}
	if c.WaitInFlight == 0 {
		c.WaitInFlight = server.DefaultProduceTimeout + 5*time.Second
	}
	if c.ExpiryInterval == 0 {
		c.ExpiryInterval = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.Window < time.Millisecond:
		return fmt.Errorf("idempotency window %v: must be at least 1ms", c.Window)
	case c.MaxBytes < 1024:
		return fmt.Errorf("idempotency key memory %d bytes: must be at least 1024", c.MaxBytes)
	case c.Partitions < 1 || c.ReplicationFactor < 1:
		return fmt.Errorf("keys topic of %d partitions and %d replicas: both must be at least 1", c.Partitions, c.ReplicationFactor)
	case c.SegmentBytes < 1024:
		return fmt.Errorf("keys topic segment.bytes %d: must be at least 1024", c.SegmentBytes)
	case c.WaitInFlight <= 0 || c.ExpiryInterval <= 0:
		return errors.New("the in-flight wait and the expiry interval must be positive")
	}
	return nil
}

// Errors of Begin; the HTTP gateway maps them to its answers.
var (
	// ErrNotOwner: another broker owns the key (or, while the key's
	// partition has no leader, none); the message names it.
	ErrNotOwner = errors.New("this broker does not own the idempotency key")
	// ErrFull: the memory budget for keys is used up.
	ErrFull = errors.New("the idempotency key memory budget is full")
	// ErrUnavailable: the key's record could not be written (the keys
	// topic lacks in-sync replicas, or its leader moved); nothing was.
	ErrUnavailable = errors.New("the idempotency key store is unavailable")
	// ErrClosed: the store is shutting down.
	ErrClosed = errors.New("the idempotency key store is closed")
)

// Store owns the keys of the keys topic partitions this broker leads, as
// the group coordinator owns __consumer_offsets partitions: a partition is
// loaded when this broker starts leading it and forgotten when it stops.
// mu guards tab; no I/O is done while holding it.
type Store struct {
	broker *server.Broker
	cfg    Config
	logger *slog.Logger

	// own is the keys topic partitions this broker leads (lock order:
	// own, then mu).
	own *ownership.Table[map[string]storedKey]
	mu  sync.Mutex
	tab *table
	// createMu serialises a single node's creation and load of the keys
	// topic on the first request with a key.
	createMu sync.Mutex

	// keys is the keys topic: its creation, a key's partition and owner,
	// its log read back.
	keys *ownership.Topic
	// life runs the expiry loop and the loads; Close ends it.
	life *ownership.Lifecycle
}

// New starts the store. The keys topic is created by the first request
// with a key (a node whose clients send none pays nothing, not even its
// partitions against max.partitions). On a single node New loads it when
// it exists; on a cluster partitions load as the controller makes this
// broker their leader.
func New(b *server.Broker, cfg Config) (*Store, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{broker: b, cfg: cfg, logger: cfg.Logger.With("component", "idempotency"),
		tab: newTable(cfg.Window, cfg.MaxBytes), life: ownership.NewLifecycle()}
	// Two in-sync replicas when there are two: an acknowledged key then
	// survives the loss of its owner (with one, an owner that shrank the
	// ISR to itself could acknowledge a key no other replica has). One
	// broker owns every key: one partition.
	s.keys = &ownership.Topic{Broker: b, Name: Topic, Partitions: cfg.Partitions, SingleNodePartitions: 1,
		ReplicationFactor: cfg.ReplicationFactor, SegmentBytes: cfg.SegmentBytes, MinISR: 2,
		PartitionOf: PartitionOf, NoCoordinator: ErrNotOwner}
	s.own = s.newOwnership()
	// A new epoch while leading keeps the keys loaded.
	s.own.FollowLeadership(s.keys)
	if !s.keys.Clustered() {
		if err := s.loadLedPartitions(); err != nil {
			return nil, err
		}
	}
	s.life.TickLoop(ownership.Every{Interval: cfg.ExpiryInterval, Run: func() { s.Expire(context.Background()) }})
	return s, nil
}

// Close stops the expiry loop and the loads in progress.
func (s *Store) Close() { s.life.Close() }

func (s *Store) closed() bool { return s.life.Closed() }

func (s *Store) now() int64 { return s.cfg.Now().UnixMilli() }

// Window is how long answers are kept.
func (s *Store) Window() time.Duration { return s.cfg.Window }

// Owner is the broker that answers for key, as the controller last
// described the cluster: this one on a single node.
func (s *Store) Owner(key string) (id int32, addr string, err error) {
	if !s.keys.Clustered() {
		return s.broker.BrokerID(), "", nil
	}
	b, err := s.keys.Coordinator(key)
	if err != nil {
		return -1, "", err
	}
	return b.ID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), nil
}

// Locate says where a request with key is served: here (this broker owns
// the key, is loading it, or nobody else can be named: the local answer
// explains), or the broker that owns it.
func (s *Store) Locate(key string) (broker int32, here bool) {
	self := s.broker.BrokerID()
	if p, ok := s.keys.Partition(key); ok {
		if _, owned := s.own.Get(p); owned {
			return self, true
		}
	}
	id, _, err := s.Owner(key)
	if err != nil || id == self {
		return self, true
	}
	return id, false
}

// Outcome is Begin's answer: Decision Proceed carries a Ticket to finish
// the request with; Replay the recorded Answer.
type Outcome struct {
	Decision Decision
	Answer   Answer
	Ticket   *Ticket
}

// Ticket is a request that Begin let proceed: it must be finished with
// Complete (something was or may have been written) or Release (nothing
// was written).
type Ticket struct {
	s       *Store
	key     string
	p       int32
	e       *entry
	created int64
}

// Begin decides a request with key and fingerprint fp. A duplicate of a
// request in flight here waits for it, up to WaitInFlight or ctx, then
// gets Wait as its decision. When the request may proceed, its start is
// recorded first (a pending record): if this broker stops before
// the outcome is recorded, the key's next owner refuses retries as in
// doubt instead of writing the records a second time.
func (s *Store) Begin(ctx context.Context, key string, fp Fingerprint) (Outcome, error) {
	if s.closed() {
		return Outcome{}, ErrClosed
	}
	n := s.keys.PartitionCount()
	if n < 1 && !s.keys.Clustered() {
		var err error
		if n, err = s.createLocal(); err != nil {
			return Outcome{}, err
		}
	}
	if n < 1 {
		_, _, err := s.Owner(key)
		return Outcome{}, err
	}
	p := PartitionOf(key, n)
	deadline := time.NewTimer(s.cfg.WaitInFlight)
	defer deadline.Stop()
	loadedHere := false
	for {
		s.mu.Lock()
		d, e := s.tab.begin(p, key, fp, s.now())
		s.mu.Unlock()
		if d == NotHere {
			if o, led := s.own.Get(p); led && o.State == ownership.Loading {
				d = Loading
			} else if led {
				continue // installed since begin looked
			}
		}
		switch d {
		case Proceed:
			return s.start(ctx, p, key, e)
		case Replay:
			return Outcome{Decision: Replay, Answer: e.answer}, nil
		case Wait:
			select {
			case <-e.finished:
				continue
			case <-deadline.C:
			case <-ctx.Done():
			}
			return Outcome{Decision: Wait}, nil
		case NotHere, Loading:
			if !s.keys.Clustered() && !loadedHere {
				// A single node's keys topic created or loading right now.
				loadedHere = true
				if _, err := s.createLocal(); err != nil {
					return Outcome{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
				}
				continue
			}
			return Outcome{}, s.notOwner(key, p, d)
		case Expiring:
			return Outcome{}, fmt.Errorf("%w: idempotency key %q is past its window and being forgotten; retry shortly", ErrNotOwner, key)
		case Full:
			return Outcome{}, fmt.Errorf("%w (%d bytes); new keys are refused until keys older than %v expire", ErrFull, s.cfg.MaxBytes, s.cfg.Window)
		}
		return Outcome{Decision: d}, nil
	}
}

// createLocal creates a single node's keys topic when missing and loads
// the partitions not loaded yet (a single node is told of no leadership).
func (s *Store) createLocal() (int32, error) {
	s.createMu.Lock()
	defer s.createMu.Unlock()
	if s.keys.PartitionCount() < 1 {
		if err := s.keys.Create(); err != nil {
			return 0, err
		}
	}
	if err := s.loadLedPartitions(); err != nil {
		return 0, err
	}
	return s.keys.PartitionCount(), nil
}

// start records the start of a request that may proceed (its pending
// record) and hands out its ticket.
func (s *Store) start(ctx context.Context, p int32, key string, e *entry) (Outcome, error) {
	pending := encodeValue(storedKey{state: statePending, fp: e.fp, created: e.created})
	if err := s.writeMany(ctx, p, []string{key}, [][]byte{pending}, false); err != nil {
		// The request did not run. Had the pending record reached the
		// log nonetheless, a reload would find the key in doubt: safe.
		s.mu.Lock()
		s.tab.release(p, key, e)
		s.mu.Unlock()
		return Outcome{}, fmt.Errorf("%w: the start of the request with idempotency key %q was not recorded, and nothing was written: %v", ErrUnavailable, key, err)
	}
	return Outcome{Decision: Proceed, Ticket: &Ticket{s: s, key: key, p: p, e: e, created: e.created}}, nil
}

func (s *Store) notOwner(key string, p int32, d Decision) error {
	if d == Loading {
		return fmt.Errorf("%w: this broker is loading %s-%d", ErrNotOwner, Topic, p)
	}
	id, addr, err := s.Owner(key)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: %s-%d is led by broker %d at %s", ErrNotOwner, Topic, p, id, addr)
}

// Complete records the request's answer durably, then replays it to every
// retry. If the record cannot be written the answer is still replayed by
// this broker, and after it stops the pending record makes retries in
// doubt: never written twice.
func (t *Ticket) Complete(ctx context.Context, a Answer) error {
	s := t.s
	err := s.write(ctx, t.p, t.key, encodeValue(storedKey{state: stateDone, fp: t.e.fp, created: t.created, answer: a}))
	s.mu.Lock()
	s.tab.finish(t.p, t.key, t.e, a)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("record the answer to idempotency key %q: %w", t.key, err)
	}
	return nil
}

// Release forgets the key of a request that wrote nothing: a retry runs
// it anew. The pending record is tombstoned first (best effort: if that
// fails, the key stays in doubt after a restart, which is safe); the key
// is free only after, so the tombstone cannot land after a retry's
// pending record and forget it.
func (t *Ticket) Release(ctx context.Context) {
	s := t.s
	// No fsync: a tombstone lost with the machine leaves the key in doubt.
	if err := s.writeMany(ctx, t.p, []string{t.key}, [][]byte{nil}, false); err != nil {
		s.logger.Warn("idempotency key not tombstoned after a request that wrote nothing", "key", t.key, "err", err)
	}
	s.mu.Lock()
	s.tab.release(t.p, t.key, t.e)
	s.mu.Unlock()
}

// write appends key's record (nil value: tombstone) to partition p,
// acknowledged by every in-sync replica after fsync.
func (s *Store) write(ctx context.Context, p int32, key string, value []byte) error {
	return s.writeMany(ctx, p, []string{key}, [][]byte{value}, true)
}

// writeMany appends records to p, acknowledged by every in-sync replica,
// after fsync when sync. The pending record of a request is written
// without: it is in the page cache (kept through kill -9) and on the
// in-sync replicas before the request's records are written, and the
// answer's fsync, on the same file, makes both durable at once — one
// fsync per keyed request instead of two.
func (s *Store) writeMany(ctx context.Context, p int32, keys []string, values [][]byte, sync bool) error {
	req := &server.ProduceRequest{Topic: Topic, Sync: sync, Internal: true}
	now := s.now()
	for i, k := range keys {
		req.Records = append(req.Records, server.ProduceRecord{Partition: p,
			Record: records.Record{Key: []byte(k), Value: values[i], Timestamp: now}})
	}
	_, err := s.broker.Produce(ctx, req)
	return err
}
