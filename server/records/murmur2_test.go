package records

import (
	"fmt"
	"testing"
)

// Vectors from the Java client's UtilsTest.testMurmur2.
func TestMurmur2JavaVectors(t *testing.T) {
	for _, c := range []struct {
		key  []byte
		want int32
	}{
		{[]byte("21"), -973932308},
		{[]byte("foobar"), -790332482},
		{[]byte("a-little-bit-long-string"), -985981536},
		{[]byte("a-little-bit-longer-string"), -1486304829},
		{[]byte("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971},
		{[]byte{'a', 'b', 'c'}, 479470107},
	} {
		if got := Murmur2(c.key); got != c.want {
			t.Errorf("Murmur2(%q) = %d, want %d", c.key, got, c.want)
		}
	}
}

func TestPartitionForKey(t *testing.T) {
	// toPositive(-973932308) = 1173551340; 1173551340 % 10 = 0, % 7 = 5.
	if got := PartitionForKey([]byte("21"), 10); got != 0 {
		t.Errorf("PartitionForKey(21, 10) = %d, want 0", got)
	}
	if got := PartitionForKey([]byte("21"), 7); got != 1173551340%7 {
		t.Errorf("PartitionForKey(21, 7) = %d, want %d", got, 1173551340%7)
	}
	if got := PartitionForKey([]byte("x"), 0); got != -1 {
		t.Errorf("PartitionForKey with 0 partitions = %d, want -1", got)
	}
	for i := range 1000 {
		key := fmt.Appendf(nil, "key-%d", i)
		if p := PartitionForKey(key, 13); p < 0 || p >= 13 {
			t.Fatalf("PartitionForKey(%q, 13) = %d", key, p)
		}
	}
}
