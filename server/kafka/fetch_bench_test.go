package kafka

import (
	"encoding/binary"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
)

// BenchmarkFetch fetches size bytes of 64 KiB batches (and 1 MiB of
// 1 KiB batches) over loopback from an in-process listener, the client
// reading into one reused buffer, so allocs/op and B/op are the server's
// per fetch: copying (batches read into memory, then written) against
// sendfile.
func BenchmarkFetch(b *testing.B) {
	type shape struct{ size, batch int }
	shapes := []shape{{64 << 10, 64 << 10}, {1 << 20, 64 << 10}, {8 << 20, 64 << 10}, {1 << 20, 1 << 10}}
	for _, mode := range []string{"copy", "sendfile"} {
		for _, sh := range shapes {
			size := sh.size
			b.Run(mode+"/"+strconv.Itoa(size>>10)+"KiB-of-"+strconv.Itoa(sh.batch>>10)+"KiB-batches", func(b *testing.B) {
				ts := newTestServer(b, func(c *Config) { c.DisableSendfile = mode == "copy" })
				c := ts.dial(b)
				data := batch(b, records.BatchOptions{}, strings.Repeat("v", sh.batch-100))
				for range size / len(data) {
					if p := do[*kmsg.ProduceResponse](c, produceReq("bench", 0, 1, data), 9).Topics[0].Partitions[0]; p.ErrorCode != 0 {
						b.Fatalf("produce: error %d", p.ErrorCode)
					}
				}
				req := fetchReq("bench", 0, 0, 0, 1)
				req.Topics[0].Partitions[0].PartitionMaxBytes = int32(size)
				req.SetVersion(12)
				frame := c.f.AppendRequest(nil, req, 1)
				buf := make([]byte, size+4096)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.nc.Write(frame); err != nil {
						b.Fatal(err)
					}
					n := readBenchFrame(b, c, buf)
					if n < size/2 {
						b.Fatalf("fetched %d bytes, want about %d", n, size)
					}
				}
			})
		}
	}
}

func readBenchFrame(b *testing.B, c *client, buf []byte) int {
	if _, err := io.ReadFull(c.br, buf[:4]); err != nil {
		b.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(buf))
	if _, err := io.ReadFull(c.br, buf[:n]); err != nil {
		b.Fatal(err)
	}
	return n
}
