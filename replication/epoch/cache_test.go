package epoch

import (
	"reflect"
	"testing"
)

func entries(pairs ...int64) []Entry {
	var out []Entry
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Entry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
	}
	return out
}

func checkEntries(t *testing.T, c *Cache, want []Entry) {
	t.Helper()
	if got := c.Entries(); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("entries %v, want %v", got, want)
	}
}

func TestAssign(t *testing.T) {
	for _, tc := range []struct {
		name    string
		start   []Entry
		epoch   int32
		offset  int64
		changed bool
		want    []Entry
	}{
		{"first", nil, 0, 0, true, entries(0, 0)},
		{"newer epoch", entries(0, 0), 1, 10, true, entries(0, 0, 1, 10)},
		{"same epoch later batch", entries(0, 0, 1, 10), 1, 15, false, entries(0, 0, 1, 10)},
		{"same epoch same offset", entries(0, 0, 1, 10), 1, 10, false, entries(0, 0, 1, 10)},
		{"same epoch earlier start replaces it", entries(0, 0, 1, 10), 1, 5, true, entries(0, 0, 1, 5)},
		{"newer epoch at same start replaces the empty epoch", entries(0, 0, 1, 10), 2, 10, true, entries(0, 0, 2, 10)},
		{"newer epoch below a start drops it", entries(0, 0, 1, 10), 2, 8, true, entries(0, 0, 2, 8)},
		{"newer epoch below every start", entries(1, 5, 2, 10), 3, 3, true, entries(3, 3)},
		{"older epoch drops the newer ones", entries(0, 0, 2, 10, 3, 20), 1, 25, true, entries(0, 0, 1, 25)},
		{"negative epoch records nothing", entries(0, 0), -1, 5, false, entries(0, 0)},
		{"negative offset records nothing", entries(0, 0), 1, -1, false, entries(0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache(tc.start)
			if got := c.Assign(tc.epoch, tc.offset); got != tc.changed {
				t.Errorf("changed %v, want %v", got, tc.changed)
			}
			checkEntries(t, c, tc.want)
		})
	}
}

// Loading a checkpoint applies its entries in order, so a file whose
// entries break the order loads as Kafka would load it.
func TestNewCacheRestoresOrder(t *testing.T) {
	checkEntries(t, NewCache(entries(0, 0, 2, 10, 1, 15, 3, 12)), entries(0, 0, 3, 12))
	checkEntries(t, NewCache(entries(0, 0, 1, 10, 2, 20)), entries(0, 0, 1, 10, 2, 20))
}

func TestEndOffsetFor(t *testing.T) {
	const leo = 15
	c := NewCache(entries(2, 6, 4, 11))
	for _, tc := range []struct {
		requested  int32
		wantEpoch  int32
		wantOffset int64
	}{
		{UndefinedEpoch, UndefinedEpoch, UndefinedOffset},
		{0, 0, 6},  // below the first epoch: the requested epoch, ending where the history begins
		{1, 1, 6},  // idem
		{2, 2, 11}, // a known epoch ends where the next starts
		{3, 2, 11}, // an unknown epoch between: the largest below it
		{4, 4, leo},
		{5, UndefinedEpoch, UndefinedOffset}, // above the latest
	} {
		e, off := c.EndOffsetFor(tc.requested, leo)
		if e != tc.wantEpoch || off != tc.wantOffset {
			t.Errorf("EndOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.requested, e, off, tc.wantEpoch, tc.wantOffset)
		}
	}
	var empty Cache
	if e, off := empty.EndOffsetFor(0, leo); e != UndefinedEpoch || off != UndefinedOffset {
		t.Errorf("empty cache: (%d, %d)", e, off)
	}
}

func TestEpochForOffset(t *testing.T) {
	c := NewCache(entries(2, 6, 4, 11))
	for off, want := range map[int64]int32{6: 2, 7: 2, 10: 2, 11: 4, 1000: 4} {
		if e, ok := c.EpochForOffset(off); !ok || e != want {
			t.Errorf("EpochForOffset(%d) = %d %v, want %d", off, e, ok, want)
		}
	}
	if _, ok := c.EpochForOffset(5); ok {
		t.Error("offset before the first entry has an epoch")
	}
	var empty Cache
	if _, ok := empty.EpochForOffset(0); ok {
		t.Error("empty cache has an epoch")
	}
}

func TestTruncateFromEnd(t *testing.T) {
	for _, tc := range []struct {
		end     int64
		changed bool
		want    []Entry
	}{
		{12, false, entries(2, 6, 3, 8, 4, 11)},
		{11, true, entries(2, 6, 3, 8)}, // an entry starting at the new end goes
		{9, true, entries(2, 6, 3, 8)},
		{8, true, entries(2, 6)},
		{6, true, nil},
		{0, true, nil},
		{-1, false, entries(2, 6, 3, 8, 4, 11)},
	} {
		c := NewCache(entries(2, 6, 3, 8, 4, 11))
		if got := c.TruncateFromEnd(tc.end); got != tc.changed {
			t.Errorf("TruncateFromEnd(%d) changed %v, want %v", tc.end, got, tc.changed)
		}
		checkEntries(t, c, tc.want)
	}
}

// The log start moving raises the first entry's start rather than dropping
// the epoch that still covers the remaining records (Kafka's
// truncateFromStart).
func TestTruncateFromStart(t *testing.T) {
	for _, tc := range []struct {
		start   int64
		changed bool
		want    []Entry
	}{
		{5, false, entries(2, 6, 3, 8, 4, 11)},
		{6, false, entries(2, 6, 3, 8, 4, 11)},
		{7, true, entries(2, 7, 3, 8, 4, 11)},
		{8, true, entries(3, 8, 4, 11)},
		{9, true, entries(3, 9, 4, 11)},
		{11, true, entries(4, 11)},
		{100, true, entries(4, 100)},
	} {
		c := NewCache(entries(2, 6, 3, 8, 4, 11))
		if got := c.TruncateFromStart(tc.start); got != tc.changed {
			t.Errorf("TruncateFromStart(%d) changed %v, want %v", tc.start, got, tc.changed)
		}
		checkEntries(t, c, tc.want)
	}
}

func TestLatestEarliestClear(t *testing.T) {
	var c Cache
	if _, ok := c.Latest(); ok || c.LatestEpoch() != UndefinedEpoch {
		t.Fatal("empty cache has a latest entry")
	}
	c.Assign(1, 0)
	c.Assign(3, 9)
	if e, _ := c.Latest(); e != (Entry{Epoch: 3, StartOffset: 9}) || c.LatestEpoch() != 3 {
		t.Fatalf("latest %v", e)
	}
	if e, _ := c.Earliest(); e != (Entry{Epoch: 1, StartOffset: 0}) {
		t.Fatalf("earliest %v", e)
	}
	if !c.Clear() || c.Len() != 0 || c.Clear() {
		t.Fatal("clear")
	}
}

func TestCheckCurrent(t *testing.T) {
	for _, tc := range []struct {
		req, ours int32
		want      error
	}{
		{-1, 5, nil},
		{5, 5, nil},
		{4, 5, ErrFencedLeaderEpoch},
		{6, 5, ErrUnknownLeaderEpoch},
	} {
		if got := CheckCurrent(tc.req, tc.ours); got != tc.want {
			t.Errorf("CheckCurrent(%d, %d) = %v, want %v", tc.req, tc.ours, got, tc.want)
		}
	}
}
