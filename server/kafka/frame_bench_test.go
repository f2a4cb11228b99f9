package kafka

import (
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// BenchmarkProduceFrameSizes produces one batch per request, from small
// frames (read in one piece) to ones the reader grows and budgets.
func BenchmarkProduceFrameSizes(b *testing.B) {
	for _, size := range []int{1 << 10, 256 << 10, 4 << 20} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			ts := newTestServerWith(b, func(c *server.Config) { c.MessageMaxBytes = 16 << 20 })
			c := ts.dial(b)
			data := batch(b, records.BatchOptions{}, strings.Repeat("v", size))
			req := produceReq("bench", 0, 1, data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if p := do[*kmsg.ProduceResponse](c, req, 9).Topics[0].Partitions[0]; p.ErrorCode != 0 {
					b.Fatalf("produce: error %d", p.ErrorCode)
				}
			}
		})
	}
}
