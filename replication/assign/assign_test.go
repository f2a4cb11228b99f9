package assign

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func plainBrokers(ids ...int32) []Broker {
	bs := make([]Broker, len(ids))
	for i, id := range ids {
		bs[i] = Broker{ID: id}
	}
	return bs
}

func fixed(start int) Options {
	return Options{FixedStart: true, StartIndex: start, ReplicaShift: start}
}

// The table in Kafka's AdminUtils doc: 5 brokers, 10 partitions, RF 3,
// start 0: leaders round-robin, followers one step further apart after the
// first 5 partitions.
func TestAssignRackUnawareKafkaTable(t *testing.T) {
	got, err := Assign(plainBrokers(4, 3, 2, 1, 0), 10, 3, fixed(0))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{
		{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
		{0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestAssignRackUnawareStartAndShift(t *testing.T) {
	// start 1 shift 2 on brokers 10,20,30: leader of p0 is the second
	// broker; follower distance 1+(2 mod 2)=1, then 1+(3 mod 2)=2 at p3.
	got, err := Assign(plainBrokers(10, 20, 30), 4, 2, Options{FixedStart: true, StartIndex: 1, ReplicaShift: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{20, 30}, {30, 10}, {10, 20}, {20, 10}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func kafkaDocRacks() []Broker {
	return []Broker{{0, "rack1"}, {1, "rack3"}, {2, "rack3"}, {3, "rack2"}, {4, "rack2"}, {5, "rack1"}}
}

// The rack-aware example of Kafka's AdminUtils doc: rack-alternated list
// 0,3,1,5,4,2 and, for a 7th partition, shifted followers 0,4,2.
func TestAssignRackAwareKafkaExample(t *testing.T) {
	list, _ := rackAlternated(kafkaDocRacks())
	if want := []int32{0, 3, 1, 5, 4, 2}; !reflect.DeepEqual(list, want) {
		t.Fatalf("rack alternated list %v want %v", list, want)
	}
	got, err := Assign(kafkaDocRacks(), 7, 3, fixed(0))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{0, 3, 1}, {3, 1, 5}, {1, 5, 4}, {5, 4, 2}, {4, 2, 0}, {2, 0, 3}, {0, 4, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// With start 2 the walk meets a broker of an already used rack and skips it.
func TestAssignRackAwareSkipsUsedRack(t *testing.T) {
	brokers := []Broker{{0, "rack1"}, {1, "rack2"}, {2, "rack2"}, {3, "rack3"}, {4, "rack3"}, {5, "rack1"}}
	got, err := Assign(brokers, 1, 3, fixed(2))
	if err != nil {
		t.Fatal(err)
	}
	// list 0,1,3,5,2,4; first = list[2] = 3 (rack3); candidates at
	// positions 4 (2, rack2), 5 (4, rack3: skipped), 0 (0, rack1).
	if want := [][]int32{{3, 2, 0}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestAssignUnevenRacksList(t *testing.T) {
	list, _ := rackAlternated([]Broker{{4, "b"}, {1, "a"}, {2, "b"}, {3, "b"}})
	if want := []int32{1, 2, 3, 4}; !reflect.DeepEqual(list, want) {
		t.Fatalf("got %v want %v", list, want)
	}
}

func TestAddPartitionsContinuesFromPartitionZeroLeader(t *testing.T) {
	existing := [][]int32{{1, 2}, {2, 0}}
	got, err := AddPartitions(plainBrokers(2, 0, 1), existing, 5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// start = index of broker 1 = 1, shift 1, partitions 2..4:
	// p2 first (2+1)%3=0, follower 0+1+(1%2)=2; p3 shift 2, first 1, follower 2;
	// p4 first 2, follower 2+1+(2%2)=0.
	want := [][]int32{{0, 2}, {1, 2}, {2, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestAddPartitionsLeaderGoneStartsAtNextID(t *testing.T) {
	// Partition 0's leader 20 left the cluster: start at the first id >= 20.
	got, err := AddPartitions(plainBrokers(10, 30), [][]int32{{20}}, 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int32{{10}, {30}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestAddPartitionsErrors(t *testing.T) {
	if _, err := AddPartitions(plainBrokers(1, 2), [][]int32{{1}, {2}}, 2, Options{}); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("no increase: %v", err)
	}
	if _, err := AddPartitions(plainBrokers(1, 2), nil, 2, Options{}); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("no partition 0: %v", err)
	}
	_, err := AddPartitions(plainBrokers(1, 2), [][]int32{{1, 2, 3}}, 2, Options{})
	if !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("RF 3 on 2 brokers: %v", err)
	}
}

func TestAssignErrors(t *testing.T) {
	three := plainBrokers(1, 2, 3)
	_, err := Assign(three[:2], 1, 3, fixed(0))
	if !errors.Is(err, ErrInvalidReplicationFactor) || !strings.Contains(err.Error(), "3") || !strings.Contains(err.Error(), "2") {
		t.Fatalf("RF above brokers: %v", err)
	}
	if _, err := Assign(three, 1, 0, fixed(0)); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("RF 0: %v", err)
	}
	if _, err := Assign(three, 0, 1, fixed(0)); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("0 partitions: %v", err)
	}
	if _, err := Assign(nil, 1, 1, fixed(0)); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("no brokers: %v", err)
	}
	mixed := []Broker{{1, "a"}, {2, ""}, {3, "b"}}
	if _, err := Assign(mixed, 1, 2, fixed(0)); !errors.Is(err, ErrIncompleteRacks) {
		t.Fatalf("mixed racks: %v", err)
	}
	ignoring := fixed(0)
	ignoring.IgnoreRacks = true
	if _, err := Assign(mixed, 1, 2, ignoring); err != nil {
		t.Fatalf("mixed racks ignored: %v", err)
	}
	if _, err := Assign(plainBrokers(1, 1), 1, 1, fixed(0)); !errors.Is(err, ErrInvalidBrokers) {
		t.Fatalf("duplicate broker: %v", err)
	}
	if _, err := Assign(three, 1, 1, Options{}); !errors.Is(err, ErrInvalidBrokers) {
		t.Fatalf("no rand: %v", err)
	}
}

func TestAssignSameSeedSameResult(t *testing.T) {
	a, _ := Assign(plainBrokers(1, 2, 3, 4), 8, 3, Options{Rand: rand.New(rand.NewPCG(7, 7))})
	b, _ := Assign(plainBrokers(1, 2, 3, 4), 8, 3, Options{Rand: rand.New(rand.NewPCG(7, 7))})
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%v != %v", a, b)
	}
}

// Properties over random shapes: replicas distinct, leaders spread to within
// one partition per broker, and with racks, min(RF, racks) racks covered.
func TestAssignProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		n := 1 + r.IntN(9)
		racks := r.IntN(4) // 0: rack-unaware
		brokers := make([]Broker, n)
		for j := range brokers {
			brokers[j].ID = int32(100 + j*3)
			if racks > 0 {
				brokers[j].Rack = string(rune('a' + r.IntN(racks)))
			}
		}
		parts, rf := 1+r.IntN(40), 1+r.IntN(n)
		got, err := Assign(brokers, parts, rf, Options{Rand: r})
		if err != nil {
			t.Fatal(err)
		}
		checkShape(t, brokers, got, parts, rf)
	}
}

func checkShape(t *testing.T, brokers []Broker, got [][]int32, parts, rf int) {
	t.Helper()
	rackOf := map[int32]string{}
	for _, b := range brokers {
		rackOf[b.ID] = b.Rack
	}
	racks := countDistinct(rackOf)
	if rackOf[brokers[0].ID] == "" {
		racks = 0
	}
	leads := map[int32]int{}
	for p, replicas := range got {
		if len(replicas) != rf {
			t.Fatalf("p%d: %v has %d replicas, want %d", p, replicas, len(replicas), rf)
		}
		seen, seenRacks := map[int32]bool{}, map[string]bool{}
		for _, b := range replicas {
			if seen[b] {
				t.Fatalf("p%d: %v repeats broker %d", p, replicas, b)
			}
			seen[b] = true
			seenRacks[rackOf[b]] = true
		}
		if racks > 0 && len(seenRacks) != min(rf, racks) {
			t.Fatalf("p%d: %v spans %d racks, want %d", p, replicas, len(seenRacks), min(rf, racks))
		}
		leads[replicas[0]]++
	}
	lo, hi := parts/len(brokers), (parts+len(brokers)-1)/len(brokers)
	for _, b := range brokers {
		if leads[b.ID] < lo || leads[b.ID] > hi {
			t.Fatalf("broker %d leads %d of %d partitions on %d brokers: %v", b.ID, leads[b.ID], parts, len(brokers), got)
		}
	}
}

// Whole rounds of partitions put the same number of replicas on every
// broker: without racks, and with racks of equal size and RF = racks (the
// case Kafka's doc says is even across brokers and racks).
func TestAssignEvenReplicaCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	racked := []Broker{{1, "a"}, {2, "a"}, {3, "b"}, {4, "b"}, {5, "c"}, {6, "c"}}
	for i := 0; i < 200; i++ {
		for _, tc := range []struct {
			brokers []Broker
			rf      int
		}{{plainBrokers(1, 2, 3, 4, 5), 1 + r.IntN(5)}, {racked, 3}} {
			rounds := 1 + r.IntN(4)
			parts := rounds * len(tc.brokers)
			got, err := Assign(tc.brokers, parts, tc.rf, Options{Rand: r})
			if err != nil {
				t.Fatal(err)
			}
			count := map[int32]int{}
			for _, replicas := range got {
				for _, b := range replicas {
					count[b]++
				}
			}
			for _, b := range tc.brokers {
				if count[b.ID] != rounds*tc.rf {
					t.Fatalf("broker %d holds %d replicas, want %d: %v", b.ID, count[b.ID], rounds*tc.rf, got)
				}
			}
		}
	}
}
