package kbench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// producer holds one produce run's shared state. Promises run on kgo's
// goroutines; everything they touch is atomic or under mu.
type producer struct {
	pool  sync.Pool // *kgo.Record, returned by the promise
	hist  histogram
	acked atomic.Int64
	mu    sync.Mutex
	err   error // first produce failure
}

// Produce runs the produce benchmark: cfg.Records records (or as many as
// fit in cfg.Duration) of cfg.RecordSize bytes to cfg.Topic, creating it
// with cfg.Partitions partitions if it does not exist.
func Produce(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	opts, err := kcli.ProducerOpts(cfg.Acks, cfg.Compression)
	if err != nil {
		return Result{}, err
	}
	cl, err := kcli.Dial(ctx, cfg.Bootstrap, append(opts, producerTuning(cfg)...)...)
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	if err := ensureTopic(ctx, kadm.NewClient(cl), cfg); err != nil {
		return Result{}, err
	}
	p := &producer{pool: sync.Pool{New: func() any { return new(kgo.Record) }}}
	bar := startProgress(cfg.Progress, "produce", &p.acked, cfg.Records, cfg.Duration)
	start := time.Now()
	err = p.run(ctx, cl, cfg)
	elapsed := time.Since(start)
	bar.stop()
	n := p.acked.Load()
	res := Result{Op: "produce", Records: n, Bytes: n * int64(cfg.RecordSize), Elapsed: elapsed,
		P50: p.hist.Quantile(0.50), P99: p.hist.Quantile(0.99)}
	return res, err
}

// producerTuning lets one client keep the broker busy: a buffer deep
// enough to fill large batches, but not so deep that the measured latency
// is mostly time spent queued in the client.
func producerTuning(cfg Config) []kgo.Opt {
	return []kgo.Opt{
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.MaxBufferedRecords(cfg.Buffered),
		kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.ProducerLinger(cfg.Linger),
	}
}

func ensureTopic(ctx context.Context, adm *kadm.Client, cfg Config) error {
	resp, err := adm.CreateTopic(ctx, int32(cfg.Partitions), -1, nil, cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %q: %w", cfg.Topic, err)
	}
	return nil
}

// run produces until the count or time bound, then waits for every
// acknowledgement.
func (p *producer) run(ctx context.Context, cl *kgo.Client, cfg Config) error {
	payload := randomPayload(cfg.RecordSize)
	deadline := deadlineOf(cfg.Duration)
	for i := int64(0); cfg.Records == 0 || i < cfg.Records; i++ {
		if i%1024 == 0 && (time.Now().After(deadline) || ctx.Err() != nil || p.failed() != nil) {
			break
		}
		r := p.pool.Get().(*kgo.Record)
		r.Value, r.Timestamp = payload, time.Now()
		cl.Produce(ctx, r, p.promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return p.failed()
}

func (p *producer) promise(r *kgo.Record, err error) {
	if err != nil {
		p.mu.Lock()
		if p.err == nil {
			p.err = fmt.Errorf("produce: %w", err)
		}
		p.mu.Unlock()
	} else {
		p.hist.Record(time.Since(r.Timestamp))
		p.acked.Add(1)
	}
	*r = kgo.Record{}
	p.pool.Put(r)
}

func (p *producer) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// deadlineOf turns a bound into a deadline; no bound is a distant one.
func deadlineOf(bound time.Duration) time.Time {
	if bound == 0 {
		return time.Now().Add(100 * 365 * 24 * time.Hour)
	}
	return time.Now().Add(bound)
}

// randomPayload is printable and incompressible enough that compression
// codecs are not flattered.
func randomPayload(n int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return b
}
