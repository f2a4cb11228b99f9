package api

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// BenchmarkSearchScan scans 20000 records of about 200 bytes on 4
// partitions for a value no record holds: the cost of the scan itself
// (reads, decoding, copying windows, filtering), reported per record.
func BenchmarkSearchScan(b *testing.B) {
	e := newTestEnv(b)
	const n = 20000
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "scan", Partitions: 4, ReplicationFactor: 1}); err != nil {
		b.Fatal(err)
	}
	value := `{"user":{"id":1},"pad":"` + strings.Repeat("y", 170) + `"}`
	for start := 0; start < n; start += 1000 {
		req := server.ProduceRequest{Topic: "scan"}
		for i := start; i < start+1000; i++ {
			req.Records = append(req.Records, server.ProduceRecord{Partition: int32(i % 4), Record: records.Record{
				Key: []byte(strconv.Itoa(i)), Value: []byte(value), Timestamp: browseBase + int64(i)}})
		}
		if _, err := e.broker.Produce(context.Background(), &req); err != nil {
			b.Fatal(err)
		}
	}
	for _, q := range []string{"value=nothing-matches", "json=%24.user.id%3D%3D2"} {
		b.Run(strings.SplitN(q, "=", 2)[0], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := http.Get(e.url + "/kafka/scan/search?max_scan_records=100000&" + q)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatal(res.Status)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
		})
	}
}
