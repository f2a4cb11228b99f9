package idempotency

import "time"

// The table is the decisions, without I/O: which keys this broker owns and
// what a request with a key does (go on, replay, refuse, wait). The store
// (store.go) feeds it the leadership changes, the loaded records and the
// clock, and writes what it decides to the keys topic.

type phase uint8

const (
	// inFlight: started on this broker, its outcome not known yet.
	inFlight phase = iota + 1
	// inDoubt: loaded as started (pending) without an outcome: the broker
	// that took it stopped or lost the partition before recording what it
	// wrote. Its records may or may not have been written; a retry is
	// refused rather than written a second time.
	inDoubt
	// done: the answer is recorded and replayed to every retry.
	done
)

type entry struct {
	fp      Fingerprint
	phase   phase
	created int64 // ms since the epoch; the window counts from it
	answer  Answer
	// size is what the entry counts against the memory budget.
	size int64
	// finished is closed when an inFlight entry leaves that phase; nil for
	// entries loaded from the log.
	finished chan struct{}
	// expiring: past the window, its tombstone being written. The key is
	// not taken again until the tombstone is in the log, or the tombstone
	// could land after the new request's records and forget them.
	expiring bool
}

// entryOverhead approximates an entry's memory beside its key and answer
// (the map slot, the struct, the fingerprint).
const entryOverhead = 160

func (e *entry) expired(now int64, window time.Duration) bool {
	return e.phase != inFlight && now >= e.created+window.Milliseconds()
}

// ownedPartition is a keys topic partition this broker leads and has
// loaded (its leadership and loading: the Store's ownership.Table).
type ownedPartition struct {
	keys map[string]*entry
}

// Decision is what a request with a key does.
type Decision uint8

const (
	// Proceed: the key is new (or its window is over); the request runs
	// and its outcome is recorded.
	Proceed Decision = iota + 1
	// Replay: the key's answer is recorded; answer it, write nothing.
	Replay
	// Conflict: the key was used by a different request.
	Conflict
	// Wait: the same request is in flight here; wait for it to finish.
	Wait
	// InDoubt: the same request was started by a broker that stopped
	// before recording its outcome.
	InDoubt
	// Full: the memory budget holds no more keys until some expire.
	Full
	// NotHere: this broker does not serve the key's partition (the Store
	// tells Loading from it: its ownership.Table knows what is loading).
	NotHere
	// Loading: this broker leads the key's partition and is reading it.
	Loading
	// Expiring: the key's window is over and its tombstone is being
	// written; retry shortly.
	Expiring
)

// table is every key of the partitions this broker owns. Not safe for
// concurrent use: the store guards it with its mutex.
type table struct {
	window   time.Duration
	maxBytes int64
	bytes    int64
	parts    map[int32]*ownedPartition
}

func newTable(window time.Duration, maxBytes int64) *table {
	return &table{window: window, maxBytes: maxBytes, parts: map[int32]*ownedPartition{}}
}

// begin decides a request with key (in partition p) and fingerprint fp at
// now (ms). On Proceed it holds a new in-flight entry for the key; on
// Replay, Wait and InDoubt the key's entry.
func (t *table) begin(p int32, key string, fp Fingerprint, now int64) (Decision, *entry) {
	op, ok := t.parts[p]
	if !ok {
		return NotHere, nil
	}
	if e, ok := op.keys[key]; ok && e.expiring {
		return Expiring, e
	} else if ok && !e.expired(now, t.window) {
		switch {
		case e.fp != fp:
			return Conflict, e
		case e.phase == done:
			return Replay, e
		case e.phase == inDoubt:
			return InDoubt, e
		}
		return Wait, e
	} else if ok {
		t.drop(op, key, e)
	}
	size := entryOverhead + int64(len(key))
	if t.bytes+size > t.maxBytes {
		return Full, nil
	}
	e := &entry{fp: fp, phase: inFlight, created: now, size: size, finished: make(chan struct{})}
	op.keys[key] = e
	t.bytes += size
	return Proceed, e
}

// finish records e's answer: retries replay it from now on. The budget
// counts the answer (so one answer may take the table past maxBytes: the
// next new key is then refused).
func (t *table) finish(p int32, key string, e *entry, a Answer) {
	if e.phase != inFlight {
		return
	}
	e.phase, e.answer = done, a
	grown := int64(len(a.ContentType) + len(a.Body))
	if op, ok := t.parts[p]; ok && op.keys[key] == e {
		e.size += grown
		t.bytes += grown
	}
	close(e.finished)
}

// release forgets an in-flight e whose request wrote nothing: a retry
// runs it again.
func (t *table) release(p int32, key string, e *entry) {
	if e.phase != inFlight {
		return
	}
	if op, ok := t.parts[p]; ok && op.keys[key] == e {
		t.drop(op, key, e)
	}
	e.phase = 0
	close(e.finished)
}

func (t *table) drop(op *ownedPartition, key string, e *entry) {
	delete(op.keys, key)
	t.bytes -= e.size
}

// expiredKeys lists, per served partition, the keys whose window is over
// at now, and marks them expiring until forget or keep.
func (t *table) expiredKeys(now int64) map[int32][]string {
	due := map[int32][]string{}
	for p, op := range t.parts {
		for k, e := range op.keys {
			if e.expired(now, t.window) {
				e.expiring = true
				due[p] = append(due[p], k)
			}
		}
	}
	return due
}

// forget drops key of p once its tombstone is written.
func (t *table) forget(p int32, key string) bool {
	op, ok := t.parts[p]
	if !ok {
		return false
	}
	e, ok := op.keys[key]
	if !ok || !e.expiring {
		return false
	}
	t.drop(op, key, e)
	return true
}

// keep ends the expiry of key of p when its tombstone was not written;
// the next pass tries again.
func (t *table) keep(p int32, key string) {
	if op, ok := t.parts[p]; ok {
		if e, ok := op.keys[key]; ok {
			e.expiring = false
		}
	}
}

// install serves p with the keys read from its log (pending ones are in
// doubt). Expired keys are kept until the expiry pass tombstones them.
func (t *table) install(p int32, loaded map[string]storedKey) {
	t.resign(p) // none: a partition is installed once per leadership
	op := &ownedPartition{keys: make(map[string]*entry, len(loaded))}
	for k, sk := range loaded {
		e := &entry{fp: sk.fp, phase: done, created: sk.created, answer: sk.answer,
			size: entryOverhead + int64(len(k)+len(sk.answer.ContentType)+len(sk.answer.Body))}
		if sk.state == statePending {
			e.phase = inDoubt
		}
		op.keys[k] = e
		t.bytes += e.size
	}
	t.parts[p] = op
}

// resign stops owning p: its keys are forgotten here (the new leader
// loads them), and in-flight requests finish without a replay here.
func (t *table) resign(p int32) int {
	op, ok := t.parts[p]
	if !ok {
		return 0
	}
	for _, e := range op.keys {
		t.bytes -= e.size
	}
	delete(t.parts, p)
	return len(op.keys)
}
