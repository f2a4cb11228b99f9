package schemaregistry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The deciding writer. A write is decided by one node against the whole
// committed state and written as decided records (topicstore_decided.go)
// in a Kafka transaction whose transactional id every node of the
// cluster shares. Starting to decide (InitProducerID) bumps that id's
// producer epoch, which at the transaction coordinator aborts (or
// finishes committing) whatever transaction the previous decider had
// open and from then on refuses every produce, AddPartitions and commit
// of the older epoch, on the coordinator and at the partition leader. So:
//
//  1. a node takes the epoch (once, and again only after it was fenced),
//  2. begins a transaction and catches up to the high watermark, reading
//     committed records only: every decision of an earlier epoch is now
//     committed or aborted, so its state is every decision there is,
//  3. decides (a refusal writes nothing), produces the records and
//     commits;
//  4. if another node took the epoch after step 1 the commit fails
//     (fenced), nothing it wrote is ever read, and it goes back to 1.
//
// The decision a node answers with is therefore made against every
// decision committed before it, and no two committed decisions were made
// against the same state: ids and versions are unique, and a node
// starting later reads the same records. The partition's leadership and
// ISR need nothing more: acks=all with unclean election off (the topic's
// config) keeps each committed record on any new leader.
//
// A decider killed in the middle leaves an open transaction: readers
// stop before it (read_committed) until the next decider's epoch aborts
// it or the coordinator does after deciderTransactionTimeout.

// deciderTransactionTimeout bounds how long a dead decider's open
// transaction holds the readers back when no other node writes.
const deciderTransactionTimeout = 10 * time.Second

// deciderAttempts bounds the retries of a write fenced by another
// node's decider.
const deciderAttempts = 10

func deciderTransactionalID(topic string) string { return "ferry-schema-registry-" + topic }

var errFenced = errors.New("fenced by another node's decider")

// write decides e here and waits until this store has applied the
// decision, returning the outcome (for an add, the version stored or why
// not).
func (s *TopicStore) write(ctx context.Context, e journalEntry) (Version, error) {
	if err := s.start(); err != nil {
		return Version{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.ensureTopic(ctx); err != nil {
		return Version{}, fmt.Errorf("%w: %v", errTopicUnavailable, err)
	}
	s.decider.Lock()
	defer s.decider.Unlock()
	var last error
	for attempt := range deciderAttempts {
		v, err := s.decideOnce(ctx, e)
		if !errors.Is(err, errFenced) {
			return v, err
		}
		last = err
		s.dropProducerLocked()
		// Another node decides: let it finish before taking the epoch back.
		select {
		case <-ctx.Done():
			return Version{}, fmt.Errorf("%w: %v (%v)", errTopicUnavailable, last, ctx.Err())
		case <-time.After(time.Duration(1+rand.IntN(20*(attempt+1))) * time.Millisecond):
		}
	}
	return Version{}, fmt.Errorf("%w: %v", errTopicUnavailable, last)
}

// decideOnce runs steps 1–3; errFenced means nothing was committed and
// the write may be tried again. Any other failure after the produce is
// ambiguous (the commit may have happened): the caller's retry rereads.
func (s *TopicStore) decideOnce(ctx context.Context, e journalEntry) (Version, error) {
	cl, err := s.producerLocked()
	if err != nil {
		return Version{}, err
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return Version{}, fmt.Errorf("%w: taking the decider's epoch: %v", errFenced, err)
	}
	if err := cl.BeginTransaction(); err != nil {
		return Version{}, fmt.Errorf("%w: %v", errFenced, err)
	}
	committed := false
	defer func() {
		if !committed {
			actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := cl.EndTransaction(actx, kgo.TryAbort); err != nil {
				s.dropProducerLocked() // its state is unknown: start over next time
			}
		}
	}()
	if err := s.catchUp(ctx); err != nil {
		return Version{}, err
	}
	s.mu.RLock()
	recs, v, err := s.state.decide(e)
	if err == nil && len(recs) > 0 && len(s.intentKeys) > 0 {
		recs = append(s.conversionLocked(), recs...)
	}
	s.mu.RUnlock()
	if err != nil || len(recs) == 0 {
		return v, err
	}
	krs := make([]*kgo.Record, len(recs))
	for i, rec := range recs {
		krs[i] = &kgo.Record{Topic: s.cfg.Topic, Partition: 0, Key: rec.Key, Value: rec.Value}
	}
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		return Version{}, fmt.Errorf("%w: append to %s: %v", errFenced, s.cfg.Topic, err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) {
			// The coordinator refused the commit: the newer epoch's
			// InitProducerID aborted this transaction.
			committed = true // nothing left to abort
			return Version{}, fmt.Errorf("%w: commit to %s: %v", errFenced, s.cfg.Topic, err)
		}
		committed = true // not to be aborted: it may have committed
		s.dropProducerLocked()
		return Version{}, fmt.Errorf("%w: commit to %s: %v", errTopicUnavailable, s.cfg.Topic, err)
	}
	committed = true
	if err := s.waitApplied(ctx, krs[len(krs)-1].Offset+1); err != nil {
		return Version{}, err
	}
	return v, nil
}

// catchUp is CatchUp within a write's deadline.
func (s *TopicStore) catchUp(ctx context.Context) error {
	end, err := s.committedEnd(ctx)
	if err != nil {
		return err
	}
	return s.waitApplied(ctx, end)
}

// conversionLocked is what the first decision on a topic still holding
// intent records writes before itself: the whole state as decided
// records, then a tombstone for each intent's key, so compaction drops
// the intents (a node replaying the log before then applies the intents
// and then the same state again). Holds indexes.mu for reading.
func (s *TopicStore) conversionLocked() []decidedRecord {
	out := s.state.decidedSnapshot()
	for k := range s.intentKeys {
		out = append(out, decidedRecord{Key: []byte(k)})
	}
	return out
}

// trackIntentKey remembers which intent records are still live in the
// log. Holds indexes.mu.
func (s *TopicStore) trackIntentKey(key, value []byte) {
	var k topicKey
	if len(key) == 0 || json.Unmarshal(key, &k) != nil || k.Writer == "" {
		return
	}
	if value == nil {
		delete(s.intentKeys, string(key))
	} else {
		s.intentKeys[string(key)] = struct{}{}
	}
}

func (s *TopicStore) producerLocked() (*kgo.Client, error) {
	if s.decider.producer == nil {
		cl, err := kgo.NewClient(s.producerOpts...)
		if err != nil {
			return nil, fmt.Errorf("topic store: %w", err)
		}
		s.decider.producer = cl
	}
	return s.decider.producer, nil
}

func (s *TopicStore) dropProducerLocked() {
	if s.decider.producer != nil {
		s.decider.producer.Close()
		s.decider.producer = nil
	}
}
