package kcli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ConsumeConfig is what `ferry consume` asks for.
type ConsumeConfig struct {
	Topic         string
	Group         string // non-empty: join this group and commit what was printed
	Partition     int32  // -1: every partition
	Offset        string // "", earliest, latest or a number; not with Group
	FromBeginning bool   // start at the earliest offset (with Group: when nothing is committed)
	MaxMessages   int64  // 0: no limit
	IdleTimeout   time.Duration
	PrintKey      bool
	KeySeparator  string
	// TopicRegex reads every topic whose name Topic matches (anchored),
	// as kafka-console-consumer.sh --include does.
	TopicRegex bool
	// Format prints one record; nil: the value (and key with PrintKey).
	Format func(*bufio.Writer, *kgo.Record)
	// Opts are more client options (isolation level, client id, …).
	Opts []kgo.Opt
}

// Validate rejects combinations kafka-console-consumer.sh also rejects.
func (c ConsumeConfig) Validate() error {
	if c.TopicRegex && c.Partition >= 0 {
		return errors.New("--partition needs --topic, not --include")
	}
	if c.Group != "" && (c.Partition >= 0 || c.Offset != "") {
		return errors.New("--partition and --offset cannot be used with --group")
	}
	if c.Offset != "" && c.FromBeginning {
		return errors.New("--offset and --from-beginning are exclusive")
	}
	_, err := c.startOffset()
	return err
}

// startOffset is where reading starts (with a group: where it starts
// when the group has no committed offset).
func (c ConsumeConfig) startOffset() (kgo.Offset, error) {
	switch {
	case c.FromBeginning || c.Offset == "earliest":
		return kgo.NewOffset().AtStart(), nil
	case c.Offset == "" || c.Offset == "latest":
		return kgo.NewOffset().AtEnd(), nil
	}
	n, err := strconv.ParseInt(c.Offset, 10, 64)
	if err != nil || n < 0 {
		return kgo.Offset{}, fmt.Errorf("--offset %q: want earliest, latest or a non-negative number", c.Offset)
	}
	return kgo.NewOffset().At(n), nil
}

// joinTimeout bounds the wait for a group's first assignment; the idle
// timeout starts after it, since joining alone takes the coordinator's
// group.initial.rebalance.delay.ms (3s by default).
const joinTimeout = 60 * time.Second

// clientOpts are the consumer options; with a group, assigned is closed
// at the first assignment.
func (c ConsumeConfig) clientOpts(assigned chan struct{}) []kgo.Opt {
	start, _ := c.startOffset()
	switch {
	case c.Group != "":
		var once sync.Once
		onAssigned := func(context.Context, *kgo.Client, map[string][]int32) { once.Do(func() { close(assigned) }) }
		return append(c.topicOpts(), kgo.ConsumerGroup(c.Group),
			kgo.ConsumeResetOffset(start), kgo.AutoCommitMarks(), kgo.OnPartitionsAssigned(onAssigned))
	case c.Partition >= 0:
		return []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.Topic: {c.Partition: start}})}
	}
	return append(c.topicOpts(), kgo.ConsumeResetOffset(start))
}

func (c ConsumeConfig) topicOpts() []kgo.Opt {
	if c.TopicRegex {
		return []kgo.Opt{kgo.ConsumeTopics("^(?:" + c.Topic + ")$"), kgo.ConsumeRegex()}
	}
	return []kgo.Opt{kgo.ConsumeTopics(c.Topic)}
}

// Consume prints record values, one per line (keys too with PrintKey),
// until MaxMessages are printed, nothing arrives for IdleTimeout, or ctx
// ends. In a group it commits exactly what it printed and leaves the
// group. It returns how many records it printed.
func Consume(ctx context.Context, bootstrap string, cfg ConsumeConfig, out io.Writer) (int64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	assigned := make(chan struct{})
	cl, err := Dial(ctx, bootstrap, append(cfg.clientOpts(assigned), cfg.Opts...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if !cfg.TopicRegex {
		if err := checkTopic(ctx, kadm.NewClient(cl), cfg.Topic); err != nil {
			return 0, err
		}
	}
	if cfg.Group != "" {
		if err := waitAssigned(ctx, cfg.Group, assigned); err != nil {
			return 0, err
		}
	}
	n, err := pollLoop(ctx, cl, cfg, bufio.NewWriter(out))
	if cfg.Group != "" {
		commitCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if cerr := cl.CommitMarkedOffsets(commitCtx); cerr != nil && err == nil {
			err = fmt.Errorf("commit offsets of group %q: %w", cfg.Group, cerr)
		}
	}
	return n, err
}

func waitAssigned(ctx context.Context, group string, assigned <-chan struct{}) error {
	t := time.NewTimer(joinTimeout)
	defer t.Stop()
	select {
	case <-assigned:
		return nil
	case <-ctx.Done():
		return nil // interrupted: exit quietly, as after any ^C
	case <-t.C:
		return fmt.Errorf("group %q: no assignment within %v", group, joinTimeout)
	}
}

// checkTopic fails fast on a missing topic: the consumer would otherwise
// wait for it forever.
func checkTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("look up topic %q: %w", topic, err)
	}
	if d, ok := details[topic]; !ok || d.Err != nil {
		return fmt.Errorf("topic %q does not exist", topic)
	}
	return nil
}

func pollLoop(ctx context.Context, cl *kgo.Client, cfg ConsumeConfig, w *bufio.Writer) (int64, error) {
	var n int64
	for cfg.MaxMessages == 0 || n < cfg.MaxMessages {
		fetches, idle := poll(ctx, cl, cfg, n)
		if ctx.Err() != nil || idle || fetches.IsClientClosed() {
			break
		}
		if err := fetchError(fetches); err != nil {
			return n, err
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			writeRecord(w, r, cfg)
			if cfg.Group != "" {
				cl.MarkCommitRecords(r)
			}
			n++
		}
		if err := w.Flush(); err != nil {
			return n, fmt.Errorf("write output: %w", err)
		}
	}
	return n, w.Flush()
}

// poll waits for records, at most IdleTimeout; idle reports that it
// timed out with nothing.
func poll(ctx context.Context, cl *kgo.Client, cfg ConsumeConfig, printed int64) (kgo.Fetches, bool) {
	max := -1
	if cfg.MaxMessages > 0 {
		max = int(cfg.MaxMessages - printed)
	}
	pctx := ctx
	if cfg.IdleTimeout > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, cfg.IdleTimeout)
		defer cancel()
	}
	fetches := cl.PollRecords(pctx, max)
	return fetches, pctx.Err() != nil && fetches.NumRecords() == 0
}

func fetchError(fetches kgo.Fetches) error {
	var first error
	fetches.EachError(func(topic string, p int32, err error) {
		if first == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			first = fmt.Errorf("fetch %s[%d]: %w", topic, p, err)
		}
	})
	return first
}

func writeRecord(w *bufio.Writer, r *kgo.Record, cfg ConsumeConfig) {
	if cfg.Format != nil {
		cfg.Format(w, r)
		return
	}
	if cfg.PrintKey {
		writeBytes(w, r.Key)
		w.WriteString(cfg.KeySeparator)
	}
	writeBytes(w, r.Value)
	w.WriteByte('\n')
}

// writeBytes prints a Kafka null as "null", as the console consumer does.
func writeBytes(w *bufio.Writer, b []byte) {
	if b == nil {
		w.WriteString("null")
		return
	}
	w.Write(b)
}
