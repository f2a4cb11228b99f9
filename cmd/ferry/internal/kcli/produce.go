package kcli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxLine bounds one input line; the broker's max.message.bytes is the
// real limit and answers larger records with MESSAGE_TOO_LARGE.
const maxLine = 16 << 20

// ProduceConfig is what `ferry produce` asks for.
type ProduceConfig struct {
	Topic        string
	KeySeparator string // non-empty: each line is key SEP value
	Acks         string // 0, 1 or all
	Compression  string
	Partition    int32     // -1: the default partitioner (murmur2 of the key, sticky without one)
	Verbose      io.Writer // nil: silent; else one "topic partition offset" line per record
	Opts         []kgo.Opt // more client options (linger, retries, client id, …)
	Lines        LineFormat
}

// LineFormat is the rest of kafka-console-producer.sh's line reader:
// headers before the key, lenient lines, and a marker for null.
type LineFormat struct {
	// ParseHeaders reads "k1:v1,k2:v2<HeadersDelimiter>" first.
	ParseHeaders                                           bool
	HeadersDelimiter, HeadersSeparator, HeaderKeySeparator string
	// IgnoreError takes a line without a key separator as a value with a
	// null key, and a header without a key separator as a null header.
	IgnoreError bool
	// NullMarker, when set, is read as null in a key, value or header.
	NullMarker *string
}

// produceState collects the outcome of asynchronous produces.
type produceState struct {
	verbose io.Writer
	mu      sync.Mutex
	err     error // first failure
	acked   int64
}

func (s *produceState) promise(r *kgo.Record, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil {
			s.err = fmt.Errorf("produce to %s: %w", r.Topic, err)
		}
		return
	}
	s.acked++
	if s.verbose != nil {
		fmt.Fprintf(s.verbose, "%s\t%d\t%d\n", r.Topic, r.Partition, r.Offset)
	}
}

func (s *produceState) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Produce sends one record per line of in and waits for every
// acknowledgement. It stops at the first failure and returns it with the
// count of records acknowledged before it.
func Produce(ctx context.Context, bootstrap string, cfg ProduceConfig, in io.Reader) (int64, error) {
	opts, err := ProducerOpts(cfg.Acks, cfg.Compression)
	if err != nil {
		return 0, err
	}
	// As with Kafka's console producer, a missing topic is created when
	// the broker's auto.create.topics.enable allows it.
	opts = append(opts, kgo.DefaultProduceTopic(cfg.Topic), kgo.AllowAutoTopicCreation())
	if cfg.Partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := Dial(ctx, bootstrap, append(opts, cfg.Opts...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	st := &produceState{verbose: cfg.Verbose}
	if err := produceLines(ctx, cl, cfg, in, st); err != nil {
		return st.acked, err
	}
	if err := cl.Flush(ctx); err != nil {
		return st.acked, fmt.Errorf("flush: %w", err)
	}
	return st.acked, st.failed()
}

func produceLines(ctx context.Context, cl *kgo.Client, cfg ProduceConfig, in io.Reader, st *produceState) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for line := 1; sc.Scan(); line++ {
		if err := st.failed(); err != nil {
			return err
		}
		r, err := lineRecord(sc.Text(), line, cfg)
		if err != nil {
			return err
		}
		cl.Produce(ctx, r, st.promise)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	return nil
}

func lineRecord(line string, n int, cfg ProduceConfig) (*kgo.Record, error) {
	f := cfg.Lines
	r := &kgo.Record{Partition: cfg.Partition}
	rest := line
	if f.ParseHeaders {
		head, body, ok := strings.Cut(rest, f.HeadersDelimiter)
		switch {
		case ok:
			hs, err := parseHeaders(head, n, f)
			if err != nil {
				return nil, err
			}
			r.Headers, rest = hs, body
		case !f.IgnoreError:
			return nil, fmt.Errorf("line %d: no headers delimiter %q", n, f.HeadersDelimiter)
		}
	}
	value := rest
	if cfg.KeySeparator != "" {
		key, v, ok := strings.Cut(rest, cfg.KeySeparator)
		switch {
		case ok:
			r.Key, value = f.bytes(key), v
		case !f.IgnoreError:
			return nil, fmt.Errorf("line %d: no key separator %q", n, cfg.KeySeparator)
		}
	}
	r.Value = f.bytes(value)
	return r, nil
}

func parseHeaders(s string, n int, f LineFormat) ([]kgo.RecordHeader, error) {
	var hs []kgo.RecordHeader
	for _, pair := range strings.Split(s, f.HeadersSeparator) {
		k, v, ok := strings.Cut(pair, f.HeaderKeySeparator)
		switch {
		case ok:
			hs = append(hs, kgo.RecordHeader{Key: k, Value: f.bytes(v)})
		case f.IgnoreError:
			hs = append(hs, kgo.RecordHeader{Key: pair})
		default:
			return nil, fmt.Errorf("line %d: no header key separator %q in %q", n, f.HeaderKeySeparator, pair)
		}
	}
	return hs, nil
}

// bytes is s, or nil when s is the null marker.
func (f LineFormat) bytes(s string) []byte {
	if f.NullMarker != nil && s == *f.NullMarker {
		return nil
	}
	return []byte(s)
}
