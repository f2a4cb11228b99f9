package kafka

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/server/tlsconf"
)

// BenchmarkConsumeTLS reads the same 200,000 100-byte records over the
// PLAINTEXT listener (sendfile) and the SSL one (copied, encrypted), one
// franz-go consumer each, in the same process; compare records/s.
func BenchmarkConsumeTLS(b *testing.B) {
	ts := newTLSTestServer(b, tlsconf.ClientAuthNone)
	const records = 200_000
	pcl, err := kgo.NewClient(kgo.SeedBrokers(ts.plain), kgo.DefaultProduceTopic("bench"), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(5*time.Millisecond), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer pcl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	value := make([]byte, 100)
	for i := range records {
		pcl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: value}, nil)
	}
	if err := pcl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"plaintext", "tls"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				opts := []kgo.Opt{kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
				var cl *kgo.Client
				if mode == "tls" {
					cl = ts.tlsClient(b, nil, opts...)
				} else {
					cl, _ = kgo.NewClient(append(opts, kgo.SeedBrokers(ts.plain))...)
				}
				start := time.Now()
				for got := 0; got < records; {
					fs := cl.PollFetches(ctx)
					if ctx.Err() != nil {
						b.Fatal(ctx.Err())
					}
					got += fs.NumRecords()
				}
				b.ReportMetric(records/time.Since(start).Seconds(), "records/s")
				cl.Close()
			}
		})
	}
}

// BenchmarkProduceTLS writes 200,000 100-byte records (acks=1, no
// compression) over the PLAINTEXT and the SSL listener in turn.
func BenchmarkProduceTLS(b *testing.B) {
	ts := newTLSTestServer(b, tlsconf.ClientAuthNone)
	const records = 200_000
	value := make([]byte, 100)
	for _, mode := range []string{"plaintext", "tls"} {
		b.Run(mode, func(b *testing.B) {
			opts := []kgo.Opt{kgo.DefaultProduceTopic("produce-" + mode), kgo.AllowAutoTopicCreation(),
				kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression())}
			var cl *kgo.Client
			if mode == "tls" {
				cl = ts.tlsClient(b, nil, opts...)
			} else {
				var err error
				if cl, err = kgo.NewClient(append(opts, kgo.SeedBrokers(ts.plain))...); err != nil {
					b.Fatal(err)
				}
				defer cl.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for range b.N {
				for range records {
					cl.Produce(ctx, &kgo.Record{Value: value}, nil)
				}
				if err := cl.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
