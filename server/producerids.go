package server

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/ferry-mq/ferry/replication/checkpoint"
	"github.com/ferry-mq/ferry/storage"
)

// producerIDFile holds the first producer id not yet handed out by any run
// of this data dir. Ids are reserved producerIDBlock at a time: the file is
// rewritten (atomically) once per block, and a restart, clean or not, starts
// after the last reserved block, so an id is never handed out twice.
const (
	producerIDFile  = "ferry-producer-ids"
	producerIDBlock = 1000
)

// idempotence holds the producer id allocator; the producer state itself
// belongs to each partition (replication/producers.go).
type idempotence struct {
	ids producerIDs
}

// producerIDs allocates producer ids. Ids start at 1: records.BatchOptions
// reads producer id 0 as "none".
type producerIDs struct {
	mu struct {
		sync.Mutex
		loaded      bool
		next, limit int64
	}
}

// ProducerIDSource reserves blocks of producer ids unique across a cluster
// (zookeeper.Client: /latest_producer_id_block).
type ProducerIDSource interface {
	// ReserveProducerIDs reserves size ids for brokerID and returns the
	// first; the cluster's first block starts at from.
	ReserveProducerIDs(brokerID int32, size, from int64) (int64, error)
}

// ErrProducerIDsExhausted: the id space is used up (practically never).
var ErrProducerIDsExhausted = errors.New("producer ids exhausted")

// InitProducerID hands out a new idempotent producer id with epoch 0. With
// a current id and epoch (KIP-360, a producer recovering from an error), it
// bumps the epoch instead, or hands out a new id when the epoch would
// overflow.
func (b *Broker) InitProducerID(currentID int64, currentEpoch int16) (int64, int16, error) {
	if currentID >= 0 && currentEpoch >= 0 && currentEpoch < math.MaxInt16-1 {
		return currentID, currentEpoch + 1, nil
	}
	id, err := b.idem.ids.allocate(b.cfg.DataDir, b.cfg.BrokerID, b.cfg.ProducerIDs)
	return id, 0, err
}

// allocate returns the next id. It holds mu across the rare block
// reservation (a small fsynced file write); only InitProducerID waits on it.
func (a *producerIDs) allocate(dir string, brokerID int32, source ProducerIDSource) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.mu.loaded {
		next, err := readProducerIDFile(dir)
		if err != nil {
			return 0, err
		}
		a.mu.next, a.mu.limit, a.mu.loaded = next, next, true
	}
	if a.mu.next >= a.mu.limit && source != nil {
		// A cluster's ids come from blocks reserved in its metadata, so no
		// two brokers hand out the same one; the data dir's own reservation
		// is where a cluster's first block starts (a node that joins one).
		start, err := source.ReserveProducerIDs(brokerID, producerIDBlock, a.mu.next)
		if err != nil {
			return 0, fmt.Errorf("%w: reserve producer ids: %v", ErrStorage, err)
		}
		a.mu.next, a.mu.limit = max(start, 1), start+producerIDBlock
	}
	if a.mu.next >= a.mu.limit {
		if a.mu.next > math.MaxInt64-producerIDBlock {
			return 0, ErrProducerIDsExhausted
		}
		limit := a.mu.next + producerIDBlock
		data := []byte(strconv.FormatInt(limit, 10) + "\n")
		if err := checkpoint.WriteFile(storage.OSFS{}, filepath.Join(dir, producerIDFile), data); err != nil {
			return 0, fmt.Errorf("%w: reserve producer ids: %v", ErrStorage, err)
		}
		a.mu.limit = limit
	}
	id := a.mu.next
	a.mu.next++
	return id, nil
}

func readProducerIDFile(dir string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, producerIDFile))
	if errors.Is(err, os.ErrNotExist) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%w: read %s: %v", ErrStorage, producerIDFile, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %s holds %q, not a producer id", ErrStorage, producerIDFile, data)
	}
	return n, nil
}
