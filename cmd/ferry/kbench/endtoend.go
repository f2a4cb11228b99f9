package kbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// EndToEnd runs the latency benchmark: one client produces at cfg.Rate
// records/s while another consumes the same topic from its current end,
// and each record's latency is taken from the moment Produce was called
// to the moment PollFetches handed it to the consumer. Both clients run
// in this process, so the send time travels in the value's first 8 bytes
// (nanoseconds since the run started, on the monotonic clock).
func EndToEnd(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if cfg.Rate < 1 {
		return Result{}, errors.New("--rate: the end-to-end benchmark needs a rate of at least 1 record/s")
	}
	opts, err := kcli.ProducerOpts(cfg.Acks, cfg.Compression)
	if err != nil {
		return Result{}, err
	}
	pcl, err := kcli.Dial(ctx, cfg.Bootstrap, append(opts, producerTuning(cfg)...)...)
	if err != nil {
		return Result{}, err
	}
	defer pcl.Close()
	adm := kadm.NewClient(pcl)
	if err := ensureTopic(ctx, adm, cfg); err != nil {
		return Result{}, err
	}
	ends, err := adm.ListEndOffsets(ctx, cfg.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return Result{}, fmt.Errorf("list end offsets of %q: %w", cfg.Topic, err)
	}
	from := map[string]map[int32]kgo.Offset{cfg.Topic: {}}
	ends.Each(func(e kadm.ListedOffset) { from[cfg.Topic][e.Partition] = kgo.NewOffset().At(e.Offset) })
	ccl, err := kcli.Dial(ctx, cfg.Bootstrap, kgo.ConsumePartitions(from), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return Result{}, err
	}
	defer ccl.Close()

	run := &endToEnd{cfg: cfg, epoch: time.Now()}
	bar := startProgress(cfg.Progress, "e2e", &run.seen, cfg.Records, cfg.Duration)
	consumed := make(chan error, 1)
	go func() { consumed <- run.consume(ctx, ccl) }()
	produceErr := run.produce(ctx, pcl)
	consumeErr := <-consumed
	bar.stop()
	n := run.seen.Load()
	res := Result{Op: "e2e", Records: n, Bytes: n * int64(max(cfg.RecordSize, 8)), Elapsed: run.elapsed,
		P50: run.hist.Quantile(0.50), P99: run.hist.Quantile(0.99), P999: run.hist.Quantile(0.999)}
	return res, errors.Join(produceErr, consumeErr)
}

// endToEnd is one latency run; the producer and the consumer goroutine
// share only atomics and the histogram (itself atomic).
type endToEnd struct {
	cfg     Config
	epoch   time.Time
	hist    histogram
	sent    atomic.Int64
	seen    atomic.Int64
	done    atomic.Bool // the producer has flushed; sent is final
	elapsed time.Duration
	failed  atomic.Pointer[error]
}

// produce paces records at cfg.Rate with a 1 ms tick, so a slow tick is
// caught up on the next rather than lowering the rate.
func (e *endToEnd) produce(ctx context.Context, cl *kgo.Client) error {
	defer e.done.Store(true)
	size := max(e.cfg.RecordSize, 8)
	deadline := deadlineOf(e.cfg.Duration)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for e.cfg.Records == 0 || e.sent.Load() < e.cfg.Records {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			if now.After(deadline) || e.failed.Load() != nil {
				return e.flush(ctx, cl, start)
			}
			due := int64(now.Sub(start).Seconds() * float64(e.cfg.Rate))
			if e.cfg.Records > 0 {
				due = min(due, e.cfg.Records)
			}
			for e.sent.Load() < due {
				value := make([]byte, size)
				binary.BigEndian.PutUint64(value, uint64(time.Since(e.epoch)))
				cl.Produce(ctx, &kgo.Record{Value: value}, e.promise)
				e.sent.Add(1)
			}
		}
	}
	return e.flush(ctx, cl, start)
}

func (e *endToEnd) flush(ctx context.Context, cl *kgo.Client, start time.Time) error {
	err := cl.Flush(ctx)
	e.elapsed = time.Since(start)
	if p := e.failed.Load(); p != nil {
		return *p
	}
	return err
}

func (e *endToEnd) promise(_ *kgo.Record, err error) {
	if err != nil {
		err = fmt.Errorf("produce: %w", err)
		e.failed.CompareAndSwap(nil, &err)
	}
}

// consume reads until it has seen every record sent, or for a few
// seconds after the producer stopped (records it failed to send).
func (e *endToEnd) consume(ctx context.Context, cl *kgo.Client) error {
	var grace time.Time
	for {
		if e.done.Load() {
			if e.seen.Load() >= e.sent.Load() {
				return nil
			}
			if grace.IsZero() {
				grace = time.Now().Add(5 * time.Second)
			} else if time.Now().After(grace) {
				return fmt.Errorf("consumed %d of %d records sent", e.seen.Load(), e.sent.Load())
			}
		}
		pollCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return ctx.Err()
		}
		now := time.Since(e.epoch)
		fetches.EachRecord(func(r *kgo.Record) {
			if len(r.Value) >= 8 {
				e.hist.Record(now - time.Duration(binary.BigEndian.Uint64(r.Value)))
				e.seen.Add(1)
			}
		})
	}
}
