package kbench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// Consume runs the consume benchmark: it reads cfg.Topic from the start
// until it has cfg.Records records, or everything that was in the topic
// when it started, or cfg.Duration has passed.
func Consume(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cl, err := kcli.Dial(ctx, cfg.Bootstrap, consumerTuning(cfg)...)
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	target, err := available(ctx, kadm.NewClient(cl), cfg.Topic)
	if err != nil {
		return Result{}, err
	}
	if cfg.Records > 0 {
		target = min(target, cfg.Records)
	}
	var n atomic.Int64
	bar := startProgress(cfg.Progress, "consume", &n, target, cfg.Duration)
	start := time.Now()
	bytes, err := consumeUntil(ctx, cl, target, deadlineOf(cfg.Duration), &n)
	elapsed := time.Since(start)
	bar.stop()
	return Result{Op: "consume", Records: n.Load(), Bytes: bytes, Elapsed: elapsed}, err
}

// consumerTuning asks for large fetches so that one client is not the
// bottleneck.
func consumerTuning(cfg Config) []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64 << 20),
		kgo.FetchMaxPartitionBytes(16 << 20),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
}

// available counts the records in topic between start and end offsets.
func available(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("list start offsets of %q: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("list end offsets of %q: %w", topic, err)
	}
	var total int64
	ends.Each(func(e kadm.ListedOffset) {
		if s, ok := starts.Lookup(e.Topic, e.Partition); ok {
			total += e.Offset - s.Offset
		}
	})
	if total == 0 {
		return 0, fmt.Errorf("topic %q is empty: run the produce benchmark first", topic)
	}
	return total, nil
}

func consumeUntil(ctx context.Context, cl *kgo.Client, target int64, deadline time.Time, n *atomic.Int64) (int64, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var bytes int64
	for n.Load() < target {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			break
		}
		var err error
		fetches.EachError(func(t string, p int32, e error) {
			if err == nil && !errors.Is(e, context.DeadlineExceeded) && !errors.Is(e, context.Canceled) {
				err = fmt.Errorf("fetch %s[%d]: %w", t, p, e)
			}
		})
		if err != nil {
			return bytes, err
		}
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				bytes += int64(len(r.Value))
			}
			n.Add(int64(len(p.Records)))
		})
	}
	return bytes, nil
}
