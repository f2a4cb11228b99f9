package isr

import (
	"slices"
	"strings"
	"time"
)

// Kafka's timing for telling the controller of ISR changes
// (IsrChangePropagationConfig in its ZooKeeper mode).
const (
	// ChangeCheckInterval is how often the caller should call Due.
	ChangeCheckInterval = 2500 * time.Millisecond
	// ChangeLinger is how long a quiet spell lasts before changes go out.
	ChangeLinger = 5 * time.Second
	// ChangeMaxDelay bounds how long a change waits during a storm.
	ChangeMaxDelay = 60 * time.Second
)

// Partition names a partition in ISR change notifications.
type Partition struct {
	Topic     string
	Partition int32
}

// ChangeNotifier batches the partitions whose ISR this broker changed, for
// the sequential znode under /isr_change_notification that tells the
// controller (Kafka's ZkIsrManager): a batch goes out once no change came
// for ChangeLinger, or ChangeMaxDelay after the previous batch, so an ISR
// storm (a broker restarting with thousands of partitions) costs a few
// znodes rather than one per change. It is not safe for concurrent use.
type ChangeNotifier struct {
	changed    map[Partition]struct{}
	lastChange time.Time
	lastSent   time.Time
}

// NewChangeNotifier starts the clock at broker start, as Kafka does: the
// first batch waits like any other.
func NewChangeNotifier(now time.Time) *ChangeNotifier {
	return &ChangeNotifier{changed: make(map[Partition]struct{}), lastSent: now}
}

// Changed records a committed ISR change of p.
func (n *ChangeNotifier) Changed(p Partition, now time.Time) {
	n.changed[p] = struct{}{}
	n.lastChange = now
}

// Due returns the batch to write now, sorted, or nil; a returned batch is
// forgotten, so the caller writes it (and, if that fails, records its
// partitions again).
func (n *ChangeNotifier) Due(now time.Time) []Partition {
	if len(n.changed) == 0 {
		return nil
	}
	if now.Sub(n.lastChange) <= ChangeLinger && now.Sub(n.lastSent) <= ChangeMaxDelay {
		return nil
	}
	batch := make([]Partition, 0, len(n.changed))
	for p := range n.changed {
		batch = append(batch, p)
	}
	slices.SortFunc(batch, func(a, b Partition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	clear(n.changed)
	n.lastSent = now
	return batch
}
