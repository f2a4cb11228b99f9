package schemaregistry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicStore keeps the registry in a single-partition Kafka topic, a
// cluster's _schemas, as Confluent's registry does: every node consumes the
// partition from its start and applies each committed record to the same
// in-memory indexes the embedded journal builds.
//
// Writes: the node a write reached decides it, one node at a time, fenced
// by a shared transactional id, and writes the outcome as decided records
// keyed by what they set (topicstore_decider.go, topicstore_decided.go).
// The topic is created with cleanup.policy=compact, and the latest record
// per key is the state, so compaction keeps about one record per live
// version and setting.
//
// Older topics hold intent records: key {"writer":"<random hex>","seq":n},
// value one journal entry (embedded.go) with "expect" set on adds. An
// intent holds a write's intent, not its outcome: every node applies
// them in offset order with the check the embedded journal runs before
// its appends (planAdd, applyIntent), so each is decided the same way
// everywhere; one whose precondition no longer holds changes nothing.
// They are still read, and the first decision on such a topic converts it
// (the state as decided records, and tombstones for the intents' keys).
// Setting records, {"setting":"<kind>","subject":"<s>"}, are the same in
// both formats.
//
// Only committed records are read (read_committed, below the high
// watermark), so every in-sync replica, and any leader elected from them,
// holds each record a node has applied. A writer answers once its own
// store has applied its decision.
//
// Reads are local and never wait. CatchUp asks the leader for its high
// watermark and waits until this store has applied that far: Registry calls
// it before each write and when a read misses (an unknown id, subject or
// version), so a schema registered through any node is found on every other
// at once.
type TopicStore struct {
	cfg    TopicStoreConfig
	logger *slog.Logger
	opts   []kgo.Opt
	// producerOpts are the deciding writer's: a transactional producer
	// whose id every node shares, so a node that starts deciding fences
	// every other (topicstore_decider.go).
	producerOpts []kgo.Opt
	// created: the topic is known to exist.
	created atomic.Bool

	// Set once by start, on first use.
	startOnce sync.Once
	startErr  error
	client    *kgo.Client
	admin     *kadm.Client
	stop      context.CancelFunc
	done      chan struct{}

	indexes
	// intentKeys are the keys of the intent records read and not yet
	// tombstoned (guarded by indexes.mu): the first decision written
	// converts them (topicstore_decider.go).
	intentKeys map[string]struct{}

	// decider serialises this node's decisions and guards producer.
	decider struct {
		sync.Mutex
		producer *kgo.Client
	}

	// progress guards the apply position and the writers waiting on it;
	// never held while indexes.mu is.
	progress struct {
		sync.Mutex
		applied int64         // every offset below it is applied
		moved   chan struct{} // closed when applied moves
		closed  bool
	}
	watchers struct {
		sync.Mutex
		fns []func(subject string)
	}
}

// TopicStoreConfig configures OpenTopicStore.
type TopicStoreConfig struct {
	// Brokers are the Kafka addresses to bootstrap from (a ferry node gives
	// its own listener).
	Brokers []string
	// Topic holds the registry. Default "_schemas" (Confluent's
	// kafkastore.topic).
	Topic string
	// ReplicationFactor is the topic's when this store creates it
	// (Confluent's kafkastore.topic.replication.factor). Default 3.
	ReplicationFactor int16
	// Timeout bounds a write (the append and its apply here) and a catch-up.
	// Default 30 s.
	Timeout time.Duration
	// Dial connects to the brokers (nil: plain TCP; a TLS dial when the
	// listener is SSL).
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	Logger *slog.Logger
}

// DefaultSchemasTopic is the topic a cluster keeps its registry in.
const DefaultSchemasTopic = "_schemas"

// maxSchemaRecordBytes bounds one record before compression: a schema of
// MaxSchemaBytes with its JSON escaping. The topic's max.message.bytes
// (1 MiB, compressed) is the broker's limit.
const maxSchemaRecordBytes = 4 << 20

// recordKey is a record's key: its writer, or for a setting what it sets.
type recordKey struct {
	Writer  string      `json:"writer,omitempty"`
	Seq     uint64      `json:"seq,omitempty"`
	Setting SettingKind `json:"setting,omitempty"`
	Subject *string     `json:"subject,omitempty"`
}

// recordValue is a record's value: the journal entry and, when the key
// names what the record sets, the writer and sequence.
type recordValue struct {
	journalEntry
	Writer string `json:"writer,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
}

func init() {
	unavailableChecks = append(unavailableChecks, func(err error) bool {
		return kerr.IsRetriable(err) || errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, errTopicUnavailable)
	})
}

var errTopicUnavailable = errors.New("schemas topic unavailable")

// OpenTopicStore opens the store; it connects on first use (CatchUp or a
// write) and from then on follows the topic from its start. Reads answer
// from what has been applied; CatchUp waits.
func OpenTopicStore(cfg TopicStoreConfig) (*TopicStore, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("topic store: no brokers")
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultSchemasTopic
	}
	if cfg.ReplicationFactor == 0 {
		cfg.ReplicationFactor = 3
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &TopicStore{cfg: cfg, logger: cfg.Logger.With("component", "schemaregistry-topic", "topic", cfg.Topic)}
	s.state = newEmbeddedState()
	s.intentKeys = map[string]struct{}{}
	s.progress.moved = make(chan struct{})
	common := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID("ferry-schema-registry"),
		kgo.WithLogger(kgoLogger{s.logger}),
		kgo.UnknownTopicRetries(-1),
		// A topic another node has just created, or a new leader, is
		// found quickly.
		kgo.MetadataMinAge(200 * time.Millisecond),
	}
	if cfg.Dial != nil {
		common = append(common, kgo.Dialer(cfg.Dial))
	}
	s.opts = append(append([]kgo.Opt{}, common...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: {0: kgo.NewOffset().AtStart()}}),
		// Only committed decisions are state; the transaction markers
		// are kept so the apply position reaches the high watermark.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(time.Second),
	)
	s.producerOpts = append(append([]kgo.Opt{}, common...),
		kgo.TransactionalID(deciderTransactionalID(cfg.Topic)),
		kgo.TransactionTimeout(deciderTransactionTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.ZstdCompression(), kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(maxSchemaRecordBytes),
		kgo.RecordDeliveryTimeout(cfg.Timeout),
	)
	return s, nil
}

// start connects and starts following the topic, on the store's first
// use: a node opens its store before its own Kafka listener, the one it
// bootstraps from, is up.
func (s *TopicStore) start() error {
	s.startOnce.Do(func() {
		s.progress.Lock()
		closed := s.progress.closed
		s.progress.Unlock()
		if closed {
			s.startErr = errStoreClosed
			return
		}
		cl, err := kgo.NewClient(s.opts...)
		if err != nil {
			s.startErr = fmt.Errorf("topic store: %w", err)
			return
		}
		s.client, s.admin = cl, kadm.NewClient(cl)
		ctx, cancel := context.WithCancel(context.Background())
		s.stop, s.done = cancel, make(chan struct{})
		go s.follow(ctx)
	})
	return s.startErr
}

// follow applies the topic's committed records as they come, until Close.
func (s *TopicStore) follow(ctx context.Context) {
	defer close(s.done)
	for {
		fetches := s.client.PollFetches(ctx)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return
		}
		fetches.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				s.logger.Debug("fetching the schemas topic", "err", err)
			}
		})
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) > 0 {
				s.applyRecords(p.Records)
			}
		})
	}
}

// applyRecords applies one fetch's records: the indexes change, then the
// watchers hear of it, and only then do the apply position and the
// writers waiting for these records move, so a caller of CatchUp or a
// writer never finds a cache the watchers have not cleared yet.
func (s *TopicStore) applyRecords(records []*kgo.Record) {
	var subjects []string
	s.mu.Lock()
	for _, r := range records {
		if r.Attrs.IsControl() {
			continue // a transaction's marker: counts for the position only
		}
		s.trackIntentKey(r.Key, r.Value)
		a, err := s.state.applyRecord(r.Key, r.Value)
		if err == nil {
			subjects = append(subjects, a.subject)
		} else if !isRefusal(err) {
			s.logger.Warn("record in the schemas topic ignored", "offset", r.Offset, "err", err)
		}
	}
	s.mu.Unlock()
	s.notify(subjects)
	last := records[len(records)-1].Offset
	s.progress.Lock()
	if last >= s.progress.applied {
		s.progress.applied = last + 1
		close(s.progress.moved)
		s.progress.moved = make(chan struct{})
	}
	s.progress.Unlock()
}

func isRefusal(err error) bool {
	return errors.Is(err, ErrStoreConflict) || errors.Is(err, ErrIDInUse) || errors.Is(err, ErrVersionInUse)
}

// changedSubject is what a watcher is told: "" when ids may be gone.
func changedSubject(e journalEntry) string {
	if e.Op == "purge" {
		return ""
	}
	return e.Subject
}

func (s *TopicStore) notify(subjects []string) {
	if len(subjects) == 0 {
		return
	}
	s.watchers.Lock()
	fns := s.watchers.fns
	s.watchers.Unlock()
	for _, subject := range subjects {
		for _, fn := range fns {
			fn(subject)
		}
	}
}

var errMalformedEntry = errors.New("malformed schema registry entry")

// applyIntent applies one record of the topic: an add is decided here by
// planAdd against the state of every record before it.
func (st *embeddedState) applyIntent(e journalEntry) (Version, error) {
	switch e.Op {
	case "add":
		if e.Expect == nil || e.Schema == nil || e.Subject == "" {
			return Version{}, fmt.Errorf("%w: an add needs expect, schema and subject", errMalformedEntry)
		}
		planned, err := st.planAdd(NewVersion{Subject: e.Subject, Schema: *e.Schema, ExpectLatest: *e.Expect,
			ID: e.ID, Version: e.Version})
		if err != nil {
			return Version{}, err
		}
		st.apply(planned)
		return Version{Subject: planned.Subject, Version: planned.Version, ID: planned.ID}, nil
	case "softdelete", "purge", "set", "unset":
		st.apply(e)
		return Version{}, nil
	}
	return Version{}, fmt.Errorf("%w: op %q", errMalformedEntry, e.Op)
}

// CatchUp waits until this store has applied every record the topic's
// leader had committed when asked.
func (s *TopicStore) CatchUp(ctx context.Context) error {
	if err := s.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	end, err := s.committedEnd(ctx)
	if err != nil {
		return err
	}
	return s.waitApplied(ctx, end)
}

// committedEnd is the leader's high watermark; 0 while the topic does not
// exist and cannot be created (too few live brokers): nothing was written.
func (s *TopicStore) committedEnd(ctx context.Context) (int64, error) {
	for attempt := 0; ; attempt++ {
		end, err := s.listEnd(ctx)
		if errors.Is(err, kerr.UnknownTopicOrPartition) && !s.created.Load() {
			cerr := s.ensureTopic(ctx)
			switch {
			case errors.Is(cerr, kerr.InvalidReplicationFactor):
				return 0, nil
			case cerr == nil:
				continue
			}
			err = cerr
		}
		if err == nil || !kerr.IsRetriable(err) && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return end, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: the high watermark of %s: %v (%v)", errTopicUnavailable, s.cfg.Topic, err, ctx.Err())
		case <-time.After(min(time.Duration(attempt+1)*20*time.Millisecond, 500*time.Millisecond)):
		}
	}
}

func (s *TopicStore) listEnd(ctx context.Context) (int64, error) {
	offsets, err := s.admin.ListEndOffsets(ctx, s.cfg.Topic)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%w: the high watermark of %s: %v", errTopicUnavailable, s.cfg.Topic, err)
		}
		return 0, kerr.LeaderNotAvailable // retried: no broker answered
	}
	if o, ok := offsets.Lookup(s.cfg.Topic, 0); ok {
		return o.Offset, o.Err
	}
	return 0, kerr.UnknownTopicOrPartition
}

func (s *TopicStore) waitApplied(ctx context.Context, offset int64) error {
	for {
		s.progress.Lock()
		applied, moved, closed := s.progress.applied, s.progress.moved, s.progress.closed
		s.progress.Unlock()
		switch {
		case closed:
			return errStoreClosed
		case applied >= offset:
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return fmt.Errorf("%w: applied %s up to %d of %d: %v", errTopicUnavailable, s.cfg.Topic, applied, offset, ctx.Err())
		}
	}
}

// ensureTopic creates the topic unless it is known to exist.
func (s *TopicStore) ensureTopic(ctx context.Context) error {
	if s.created.Load() {
		return nil
	}
	configs := map[string]*string{}
	for k, v := range map[string]string{"cleanup.policy": "compact", "retention.ms": "-1", "retention.bytes": "-1",
		"unclean.leader.election.enable": "false"} {
		configs[k] = &v
	}
	res, err := s.admin.CreateTopic(ctx, 1, s.cfg.ReplicationFactor, configs, s.cfg.Topic)
	switch {
	case err == nil:
		s.logger.Info("created the schemas topic", "replication_factor", s.cfg.ReplicationFactor)
	case errors.Is(err, kerr.TopicAlreadyExists):
	default:
		msg := res.ErrMessage
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("create %s with replication factor %d: %w: %s", s.cfg.Topic, s.cfg.ReplicationFactor, err, msg)
	}
	s.created.Store(true)
	s.client.ForceMetadataRefresh()
	return nil
}

// AddVersion implements Store.
func (s *TopicStore) AddVersion(ctx context.Context, w NewVersion) (Version, error) {
	sc := w.Schema
	sc.ID = 0
	expect := w.ExpectLatest
	return s.write(ctx, journalEntry{Op: "add", Subject: w.Subject, Schema: &sc, Expect: &expect, ID: w.ID, Version: w.Version})
}

// SoftDelete implements Store.
func (s *TopicStore) SoftDelete(ctx context.Context, subject string, versions []int) error {
	_, err := s.write(ctx, journalEntry{Op: "softdelete", Subject: subject, Versions: versions})
	return err
}

// Purge implements Store.
func (s *TopicStore) Purge(ctx context.Context, subject string, versions []int) error {
	_, err := s.write(ctx, journalEntry{Op: "purge", Subject: subject, Versions: versions})
	return err
}

// SetSetting implements Store.
func (s *TopicStore) SetSetting(ctx context.Context, kind SettingKind, subject, value string) error {
	_, err := s.write(ctx, journalEntry{Op: "set", Kind: kind, Subject: subject, Value: value})
	return err
}

// DeleteSetting implements Store.
func (s *TopicStore) DeleteSetting(ctx context.Context, kind SettingKind, subject string) error {
	_, err := s.write(ctx, journalEntry{Op: "unset", Kind: kind, Subject: subject})
	return err
}

// Watch implements Store: fn hears of every record applied, whichever
// node wrote it.
func (s *TopicStore) Watch(fn func(subject string)) {
	s.watchers.Lock()
	s.watchers.fns = append(s.watchers.fns, fn)
	s.watchers.Unlock()
}

// Ping implements the readiness check: the store answers reads from what it
// has applied whether or not the topic's leader is reachable.
func (s *TopicStore) Ping(context.Context) error {
	s.progress.Lock()
	defer s.progress.Unlock()
	if s.progress.closed {
		return errStoreClosed
	}
	return nil
}

// Applied is the offset below which every record of the topic is applied.
func (s *TopicStore) Applied() int64 {
	s.progress.Lock()
	defer s.progress.Unlock()
	return s.progress.applied
}

// Topic is the topic this store keeps the registry in.
func (s *TopicStore) Topic() string { return s.cfg.Topic }

// Close implements Store.
func (s *TopicStore) Close() error {
	s.progress.Lock()
	if s.progress.closed {
		s.progress.Unlock()
		return nil
	}
	s.progress.closed = true
	close(s.progress.moved)
	s.progress.moved = make(chan struct{})
	s.progress.Unlock()
	s.startOnce.Do(func() { s.startErr = errStoreClosed })
	s.decider.Lock()
	s.dropProducerLocked()
	s.decider.Unlock()
	if s.client != nil {
		s.stop()
		s.client.Close()
		<-s.done
	}
	return nil
}

// kgoLogger passes the client's warnings and errors to slog.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelWarn
	if level == kgo.LogLevelError {
		lv = slog.LevelError
	}
	k.l.Log(context.Background(), lv, "kafka client: "+msg, keyvals...)
}

var (
	_ Store  = (*TopicStore)(nil)
	_ pinger = (*TopicStore)(nil)
)
