package records

import (
	"testing"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

func TestNextOffset(t *testing.T) {
	first := buildBatch(t, sampleRecords(), BatchOptions{})
	second := buildBatch(t, sampleRecords()[:1], BatchOptions{Codec: Gzip})
	recordbatch.SetBaseOffset(second, 40)
	both := append(append([]byte(nil), first...), second...)
	n := int64(len(sampleRecords()))
	for name, c := range map[string]struct {
		data []byte
		want int64
	}{
		"one batch":         {first, n},
		"two batches":       {both, 41},
		"truncated second":  {both[:len(both)-3], n},
		"nothing":           {nil, -1},
		"a truncated first": {first[:20], -1},
	} {
		if got := NextOffset(c.data); got != c.want {
			t.Errorf("%s: %d, want %d", name, got, c.want)
		}
	}
}
