// Package fetchsession holds the Kafka listener's incremental fetch
// sessions (KIP-227): which partitions each session fetches, from which
// offsets, and what its client was last told of each, so that a fetch may
// name only the partitions whose offsets moved and its answer only those
// that changed. It is plain state and decisions — no I/O, no goroutines —
// fed by the Fetch handler (server/kafka/01_fetch_session.go):
//
//	Begin(request)      → what to fetch: the request's own partitions (a
//	                      full fetch) or every partition of its session (an
//	                      incremental one), or a session error to answer
//	(the handler fetches those partitions as for any Fetch)
//	Fetch.Answer(resp)  → the session's id for the answer, and which of its
//	                      partitions to send; creates the session after a
//	                      full fetch with epoch 0
//
// The rules follow Kafka's FetchSession.scala: epoch 0 is a full fetch
// that opens a new session (closing the one it names), epoch -1 a full
// fetch without a session (closing the one it names); epoch > 0 must be
// the session's next epoch (INVALID_FETCH_SESSION_EPOCH otherwise; an
// unknown id answers FETCH_SESSION_ID_NOT_FOUND) and adds or replaces the
// partitions it lists and drops those in ForgottenTopics. A session made
// with topic ids (Fetch v13+) serves only v13+ fetches and the other way
// round (FETCH_SESSION_TOPIC_ID_ERROR). A session left without partitions
// is closed and its fetch answered without one.
//
// An incremental answer sends a partition when it has records, an error,
// or a high watermark, last stable offset or log start offset other than
// the one last sent (Kafka leaves out the last stable offset; a
// read_committed consumer needs it to move). A partition sent moves to the
// end of the session's order, as in Kafka, so a fetch capped by MaxBytes
// starts with the partitions the last one left out.
//
// Bounds: Config.Slots sessions; MaxSessionPartitions per session and
// MaxTotalPartitions across them (Kafka has neither: its bound is the
// request size). When the cache is full a new session takes the place of
// one that has not been used for EvictionAge, else of the least valuable
// one older than EvictionAge (consumers before followers, fewer partitions
// before more) when the new one has more partitions, and a follower's
// takes a consumer's at any age, as Kafka's FetchSessionCache does;
// otherwise the fetch is answered without a session. Unlike Kafka, a session serves only the principal that opened
// it (another gets FETCH_SESSION_ID_NOT_FOUND): its id is all a client
// shows, and guessing one should not let a client disturb another's.
package fetchsession

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

// Epochs with a meaning of their own (Kafka's FetchMetadata).
const (
	// InitialEpoch opens a session with a full fetch.
	InitialEpoch = 0
	// FinalEpoch is a full fetch without a session.
	FinalEpoch = -1
)

// FirstVersion is the first Fetch version with sessions.
const FirstVersion = 7

// firstTopicIDVersion names topics by id (KIP-516).
const firstTopicIDVersion = 13

// Config bounds the cache; zero fields take the defaults.
type Config struct {
	// Slots is max.incremental.fetch.session.cache.slots (1000); negative:
	// no sessions at all.
	Slots int
	// EvictionAge is min.incremental.fetch.session.eviction.ms (120 s): a
	// session unused this long may be dropped for a new one, and a newer
	// session is kept from consumers' new sessions.
	EvictionAge time.Duration
	// MaxSessionPartitions caps one session (10,000): a full fetch with
	// more opens none, an incremental one growing past it closes its
	// session (FETCH_SESSION_ID_NOT_FOUND; the client starts over with a
	// full fetch, then fetches without a session).
	MaxSessionPartitions int
	// MaxTotalPartitions caps the partitions of all sessions together
	// (200,000): a session's partitions take about 150 bytes each.
	MaxTotalPartitions int
}

// Defaults of Config.
const (
	DefaultSlots                = 1000
	DefaultEvictionAge          = 120 * time.Second
	DefaultMaxSessionPartitions = 10_000
	DefaultMaxTotalPartitions   = 200_000
)

func (c *Config) defaults() {
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.EvictionAge <= 0 {
		c.EvictionAge = DefaultEvictionAge
	}
	if c.MaxSessionPartitions <= 0 {
		c.MaxSessionPartitions = DefaultMaxSessionPartitions
	}
	if c.MaxTotalPartitions <= 0 {
		c.MaxTotalPartitions = DefaultMaxTotalPartitions
	}
}

// Key names a session's partition: by topic id in a v13+ session, by
// name before.
type Key struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
}

// partition is one partition of a session: what its client last asked
// (Fetch, with Partition set) and what it was last told (-1: nothing yet,
// or an error, so the next answer sends it).
type partition struct {
	key                                 Key
	fetch                               kmsg.FetchRequestTopicPartition
	highWatermark, lastStable, logStart int64
	// sent marks it in the answer being taken (session.answer); gone,
	// once forgotten (ForgottenTopics), for an answer begun before. A
	// partition listed again keeps its struct: only its fetch changes.
	sent, gone bool
}

// session is one client's. Its fields are guarded by Cache.mu.
type session struct {
	id        int32
	epoch     int32 // the epoch its next fetch must carry
	owner     auth.Principal
	follower  bool // privileged: a replica fetcher's
	topicIDs  bool // made by a v13+ fetch
	createdAt time.Time
	lastUsed  time.Time
	parts     map[Key]*partition
	order     []*partition // fetch order
	// scratch is sentToEnd's, kept between fetches.
	scratch []*partition
}

// Cache is a broker's fetch sessions, shared by all its connections.
type Cache struct {
	cfg Config
	mu  struct {
		sync.Mutex
		sessions   map[int32]*session
		partitions int // in all sessions
		// evictions counts sessions dropped for a new one or unused.
		evictions uint64
	}
}

// New makes an empty cache.
func New(cfg Config) *Cache {
	cfg.defaults()
	c := &Cache{cfg: cfg}
	c.mu.sessions = map[int32]*session{}
	return c
}

// Stats reports the sessions, the partitions in them and the evictions
// so far, together.
func (c *Cache) Stats() (sessions, partitions int, evictions uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.sessions), c.mu.partitions, c.mu.evictions
}

// Len is the number of sessions.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.sessions)
}

// Partitions is the number of partitions in all sessions.
func (c *Cache) Partitions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.partitions
}

// Request is what Begin needs of a Fetch request.
type Request struct {
	Version  int16
	Follower bool
	Owner    auth.Principal
	// SessionID, SessionEpoch, Topics and Forgotten are the request's
	// own fields.
	SessionID    int32
	SessionEpoch int32
	Topics       []kmsg.FetchRequestTopic
	Forgotten    []kmsg.FetchRequestForgottenTopic
}

// Fetch is one Fetch request's use of the cache, from Begin to Answer.
type Fetch struct {
	c *Cache
	// ErrorCode, when not 0, is the whole answer (a session error).
	ErrorCode int16
	// Topics is what to fetch: the request's, or its session's
	// partitions for an incremental fetch.
	Topics []kmsg.FetchRequestTopic

	version  int16
	follower bool
	owner    auth.Principal
	// open: a full fetch with epoch 0, which opens a session on Answer.
	open bool
	// s is the incremental fetch's session, or the session opened.
	s *session
	// told is, per partition of Topics, what the client knew before this
	// fetch, so Answer can be called again (a fetch read twice) and
	// still compare with it.
	told []told
}

// Begin checks a request's session fields and says what to fetch. A
// request before v7 has no session.
func (c *Cache) Begin(r Request, now time.Time) *Fetch {
	f := &Fetch{c: c, Topics: r.Topics, version: r.Version, follower: r.Follower, owner: r.Owner}
	if r.Version < FirstVersion {
		return f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.SessionEpoch == InitialEpoch || r.SessionEpoch == FinalEpoch {
		if s := c.mu.sessions[r.SessionID]; s != nil && s.owner == r.Owner {
			c.remove(s)
		}
		f.open = r.SessionEpoch == InitialEpoch && c.cfg.Slots > 0
		return f
	}
	s := c.mu.sessions[r.SessionID]
	switch {
	case s == nil || s.owner != r.Owner:
		f.ErrorCode = kerr.FetchSessionIDNotFound.Code
	case s.epoch != r.SessionEpoch:
		f.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
	case s.topicIDs != (r.Version >= firstTopicIDVersion):
		f.ErrorCode = kerr.FetchSessionTopicIDError.Code
	}
	if f.ErrorCode != 0 {
		f.Topics = nil
		return f
	}
	c.update(s, r.Topics, r.Forgotten)
	if len(s.parts) > c.cfg.MaxSessionPartitions || c.mu.partitions > c.cfg.MaxTotalPartitions {
		c.remove(s)
		f.ErrorCode, f.Topics = kerr.FetchSessionIDNotFound.Code, nil
		return f
	}
	if len(s.parts) == 0 {
		c.remove(s) // as Kafka: the fetch is answered without a session
		f.Topics = nil
		return f
	}
	s.epoch = nextEpoch(s.epoch)
	s.lastUsed = now
	f.s = s
	f.Topics, f.told = s.request()
	return f
}

func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// update adds or replaces the partitions listed and drops those
// forgotten. c.mu is held.
func (c *Cache) update(s *session, topics []kmsg.FetchRequestTopic, forgotten []kmsg.FetchRequestForgottenTopic) {
	for ti := range topics {
		t := &topics[ti]
		for pi := range t.Partitions {
			k := s.key(t.Topic, t.TopicID, t.Partitions[pi].Partition)
			if p := s.parts[k]; p != nil {
				p.fetch = t.Partitions[pi]
				continue
			}
			p := &partition{key: k, fetch: t.Partitions[pi], highWatermark: -1, lastStable: -1, logStart: -1}
			s.parts[k] = p
			s.order = append(s.order, p)
			c.mu.partitions++
		}
	}
	removed := false
	for _, t := range forgotten {
		for _, pn := range t.Partitions {
			k := s.key(t.Topic, t.TopicID, pn)
			if p := s.parts[k]; p != nil {
				p.gone = true
				delete(s.parts, k)
				c.mu.partitions--
				removed = true
			}
		}
	}
	if removed {
		s.compact()
	}
}

func (s *session) key(topic string, id [16]byte, p int32) Key {
	if s.topicIDs {
		return Key{TopicID: id, Partition: p}
	}
	return Key{Topic: topic, Partition: p}
}

// compact drops the removed partitions from the fetch order.
func (s *session) compact() {
	kept := s.order[:0]
	for _, p := range s.order {
		if !p.gone {
			kept = append(kept, p)
		}
	}
	clear(s.order[len(kept):])
	s.order = kept
}

// request lists the session's partitions as a full fetch would, in its
// order, grouping consecutive partitions of one topic; told is what was
// last sent of each, in the same order. Two allocations besides told: the
// partitions share one array.
func (s *session) request() ([]kmsg.FetchRequestTopic, []told) {
	runs := 0
	for i, p := range s.order {
		if i == 0 || !sameTopic(s.order[i-1].key, p.key) {
			runs++
		}
	}
	topics := make([]kmsg.FetchRequestTopic, 0, runs)
	parts := make([]kmsg.FetchRequestTopicPartition, len(s.order))
	was := make([]told, len(s.order))
	start := 0
	for i, p := range s.order {
		was[i] = told{p: p, highWatermark: p.highWatermark, lastStable: p.lastStable, logStart: p.logStart}
		parts[i] = p.fetch
		if i+1 == len(s.order) || !sameTopic(s.order[i+1].key, p.key) {
			topics = append(topics, kmsg.FetchRequestTopic{Topic: p.key.Topic, TopicID: p.key.TopicID,
				Partitions: parts[start : i+1 : i+1]})
			start = i + 1
		}
	}
	return topics, was
}

func sameTopic(a, b Key) bool { return a.Topic == b.Topic && a.TopicID == b.TopicID }

// told is what a client knew of a partition before a fetch.
type told struct {
	p                                   *partition
	highWatermark, lastStable, logStart int64
}

// remove drops a session. c.mu is held.
func (c *Cache) remove(s *session) {
	delete(c.mu.sessions, s.id)
	c.mu.partitions -= len(s.parts)
}
