package assign

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// Sentinel errors; callers map them to Kafka error codes.
var (
	// ErrInvalidReplicationFactor maps to INVALID_REPLICATION_FACTOR.
	ErrInvalidReplicationFactor = errors.New("invalid replication factor")
	// ErrInvalidPartitions maps to INVALID_PARTITIONS.
	ErrInvalidPartitions = errors.New("invalid number of partitions")
	// ErrIncompleteRacks: some brokers have a rack and some do not; Kafka
	// refuses (AdminOperationException) unless rack awareness is disabled.
	ErrIncompleteRacks = errors.New("not all brokers have rack information for replica rack aware assignment")
	// ErrInvalidBrokers: duplicate broker ids, or no source of randomness.
	ErrInvalidBrokers = errors.New("invalid broker list")
)

// Broker is what placement needs to know of a broker.
type Broker struct {
	ID   int32
	Rack string // empty: no rack (Kafka's broker.rack unset)
}

// Options tune placement. The zero value with Rand set is Kafka's default.
type Options struct {
	// Rand draws the start index and the replica shift unless FixedStart.
	Rand *rand.Rand
	// FixedStart uses StartIndex and ReplicaShift instead of Rand.
	// Kafka's fixedStartIndex sets both to the same value.
	FixedStart   bool
	StartIndex   int
	ReplicaShift int
	// StartPartition is the id of the first partition placed (Kafka's
	// startPartitionId): placement continues the walk of a topic that already
	// has this many partitions.
	StartPartition int
	// IgnoreRacks places as if no broker had a rack (--disable-rack-aware).
	IgnoreRacks bool
}

// Assign places partitions partitions of replicationFactor replicas each.
// result[i] lists partition StartPartition+i's replicas, preferred leader
// first.
func Assign(brokers []Broker, partitions, replicationFactor int, opts Options) ([][]int32, error) {
	if partitions < 1 {
		return nil, fmt.Errorf("%w: number of partitions must be larger than 0, got %d", ErrInvalidPartitions, partitions)
	}
	if replicationFactor < 1 {
		return nil, fmt.Errorf("%w: replication factor must be larger than 0, got %d", ErrInvalidReplicationFactor, replicationFactor)
	}
	if replicationFactor > len(brokers) {
		return nil, fmt.Errorf("%w: replication factor: %d larger than available brokers: %d",
			ErrInvalidReplicationFactor, replicationFactor, len(brokers))
	}
	sorted, err := sortedBrokers(brokers)
	if err != nil {
		return nil, err
	}
	racked := countRacked(sorted)
	if opts.IgnoreRacks || racked == 0 {
		return walk(brokerIDs(sorted), partitions, replicationFactor, opts, nil)
	}
	if racked < len(sorted) {
		return nil, fmt.Errorf("%w (%d of %d brokers have a rack)", ErrIncompleteRacks, racked, len(sorted))
	}
	list, rackOf := rackAlternated(sorted)
	return walk(list, partitions, replicationFactor, opts, rackOf)
}

// AddPartitions places the partitions that grow a topic from
// len(existing) to totalPartitions (Kafka's CreatePartitions count), with
// the replication factor of partition 0 and, as Kafka's
// AdminZkClient.addPartitions does, starting at the position of partition 0's
// leader in the id-sorted broker list, with the shift equal to that start.
// Options other than IgnoreRacks are ignored. result[i] is partition
// len(existing)+i.
func AddPartitions(brokers []Broker, existing [][]int32, totalPartitions int, opts Options) ([][]int32, error) {
	if len(existing) == 0 || len(existing[0]) == 0 {
		return nil, fmt.Errorf("%w: the topic has no partition 0 to take the replication factor from", ErrInvalidPartitions)
	}
	if totalPartitions <= len(existing) {
		return nil, fmt.Errorf("%w: the number of partitions for a topic can only be increased: it has %d, %d would not be an increase",
			ErrInvalidPartitions, len(existing), totalPartitions)
	}
	sorted, err := sortedBrokers(brokers)
	if err != nil {
		return nil, err
	}
	start := max(0, slices.IndexFunc(sorted, func(b Broker) bool { return b.ID >= existing[0][0] }))
	return Assign(sorted, totalPartitions-len(existing), len(existing[0]), Options{
		FixedStart:     true,
		StartIndex:     start,
		ReplicaShift:   start,
		StartPartition: len(existing),
		IgnoreRacks:    opts.IgnoreRacks,
	})
}

// walk is the round-robin shared by both modes; rackOf nil means rack-unaware.
func walk(list []int32, partitions, rf int, opts Options, rackOf map[int32]string) ([][]int32, error) {
	n := len(list)
	start, shift := opts.StartIndex, opts.ReplicaShift
	if !opts.FixedStart {
		if opts.Rand == nil {
			return nil, fmt.Errorf("%w: Options.Rand is nil and FixedStart is false", ErrInvalidBrokers)
		}
		start, shift = opts.Rand.IntN(n), opts.Rand.IntN(n)
	}
	if start < 0 || shift < 0 {
		return nil, fmt.Errorf("%w: negative start index %d or replica shift %d", ErrInvalidBrokers, start, shift)
	}
	racks := countDistinct(rackOf)
	out := make([][]int32, 0, partitions)
	for p := max(0, opts.StartPartition); len(out) < partitions; p++ {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + start) % n
		if rackOf == nil {
			out = append(out, unawareReplicas(list, first, shift, rf))
		} else {
			out = append(out, awareReplicas(list, rackOf, racks, first, shift, rf))
		}
	}
	return out, nil
}

// followerIndex is the position of the j-th follower: never the first
// replica's own position, at a distance that depends on shift.
func followerIndex(first, shift, j, n int) int {
	return (first + 1 + (shift+j)%(n-1)) % n
}

func unawareReplicas(list []int32, first, shift, rf int) []int32 {
	replicas := make([]int32, 0, rf)
	replicas = append(replicas, list[first])
	for j := 0; j < rf-1; j++ {
		replicas = append(replicas, list[followerIndex(first, shift, j, len(list))])
	}
	return replicas
}

// awareReplicas walks as unawareReplicas does but with the shift scaled by
// the number of racks (so a shift step moves to another rack's broker), and
// skips candidates that would put a second replica on a rack (or broker)
// while another rack (or broker) has none.
func awareReplicas(list []int32, rackOf map[int32]string, racks, first, shift, rf int) []int32 {
	leader := list[first]
	replicas := make([]int32, 0, rf)
	replicas = append(replicas, leader)
	usedRacks := map[string]bool{rackOf[leader]: true}
	usedBrokers := map[int32]bool{leader: true}
	k := 0
	for len(replicas) < rf {
		b := list[followerIndex(first, shift*racks, k, len(list))]
		k++
		rackFree := !usedRacks[rackOf[b]] || len(usedRacks) == racks
		brokerFree := !usedBrokers[b] || len(usedBrokers) == len(list)
		if rackFree && brokerFree {
			replicas = append(replicas, b)
			usedRacks[rackOf[b]] = true
			usedBrokers[b] = true
		}
	}
	return replicas
}

// rackAlternated lists one broker of each rack in turn: racks in name order,
// brokers by id within a rack, skipping racks that ran out.
func rackAlternated(sorted []Broker) ([]int32, map[int32]string) {
	rackOf := make(map[int32]string, len(sorted))
	byRack := map[string][]int32{}
	for _, b := range sorted {
		rackOf[b.ID] = b.Rack
		byRack[b.Rack] = append(byRack[b.Rack], b.ID)
	}
	names := make([]string, 0, len(byRack))
	for r, ids := range byRack {
		names = append(names, r)
		slices.Sort(ids)
	}
	sort.Strings(names)
	list := make([]int32, 0, len(sorted))
	for round := 0; len(list) < len(sorted); round++ {
		for _, r := range names {
			if round < len(byRack[r]) {
				list = append(list, byRack[r][round])
			}
		}
	}
	return list, rackOf
}

func sortedBrokers(brokers []Broker) ([]Broker, error) {
	sorted := slices.Clone(brokers)
	slices.SortFunc(sorted, func(a, b Broker) int { return int(a.ID) - int(b.ID) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].ID == sorted[i-1].ID {
			return nil, fmt.Errorf("%w: broker %d listed twice", ErrInvalidBrokers, sorted[i].ID)
		}
	}
	return sorted, nil
}

func brokerIDs(brokers []Broker) []int32 {
	ids := make([]int32, len(brokers))
	for i, b := range brokers {
		ids[i] = b.ID
	}
	return ids
}

func countRacked(brokers []Broker) int {
	n := 0
	for _, b := range brokers {
		if b.Rack != "" {
			n++
		}
	}
	return n
}

func countDistinct(rackOf map[int32]string) int {
	seen := map[string]bool{}
	for _, r := range rackOf {
		seen[r] = true
	}
	return len(seen)
}
