package kbench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestProduceThenConsume(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var bar bytes.Buffer
	cfg := Config{Bootstrap: strings.Join(c.ListenAddrs(), ","), Topic: "b", RecordSize: 100, Records: 5000,
		Partitions: 3, Acks: "1", Compression: "none", Duration: 20 * time.Second, Buffered: 1000, Progress: &bar}
	p, err := Produce(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Records != 5000 || p.Bytes != 500000 || p.P50 <= 0 || p.P99 < p.P50 {
		t.Fatalf("produce result %+v", p)
	}
	cfg.Records = 10000 // more than the topic holds: stops at the end offsets
	got, err := Consume(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Records != 5000 || got.Bytes != 500000 {
		t.Fatalf("consume result %+v", got)
	}
	var out bytes.Buffer
	got.WriteText(&out)
	if !strings.Contains(out.String(), "RESULT op=consume records=5000 bytes=500000 ") {
		t.Fatalf("WriteText:\n%s", out.String())
	}
}

func TestValidate(t *testing.T) {
	cfg := Config{Topic: "t", Partitions: 1, Buffered: 1}
	if err := cfg.Validate(); err == nil {
		t.Fatal("unbounded run accepted")
	}
	cfg.Duration = time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// The end-to-end run sees every record it sent, once, after records that
// were in the topic before it started, and reports ordered latencies.
func TestEndToEnd(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{Bootstrap: strings.Join(c.ListenAddrs(), ","), Topic: "e", RecordSize: 100, Records: 300,
		Partitions: 2, Acks: "all", Compression: "none", Duration: 20 * time.Second, Buffered: 1000, Rate: 2000}
	if _, err := Produce(ctx, cfg); err != nil { // earlier records the e2e consumer must skip
		t.Fatal(err)
	}
	got, err := EndToEnd(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Records != 300 || got.P50 <= 0 || got.P99 < got.P50 || got.P999 < got.P99 {
		t.Fatalf("e2e result %+v", got)
	}
	cfg.Rate = 0
	if _, err := EndToEnd(ctx, cfg); err == nil {
		t.Fatal("a run without a rate was accepted")
	}
}
