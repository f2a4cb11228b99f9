package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// mib is the MB of Kafka's perf tools.
const mib = 1024 * 1024

// kafkaProducerPerfTest is kafka-producer-perf-test.sh: produce
// --num-records records at up to --throughput records/s, printing a
// window line every 5 s and Kafka's summary line at the end.
func kafkaProducerPerfTest(args []string) error {
	t := newKafkaTool("kafka-producer-perf-test.sh", "This tool is used to verify the producer performance.", "", false)
	var (
		topic, payloadFile, delimiter, txID            string
		numRecords, recordSize, throughput, txDuration int64
		printMetrics                                   bool
	)
	throughput, delimiter = -2, `\n`
	recordSize = -1
	t.str(&topic, "topic", "TOPIC", "produce messages to this topic")
	t.num(&numRecords, "num-records", "NUM-RECORDS", "number of messages to produce")
	t.num(&recordSize, "record-size", "RECORD-SIZE", "message size in bytes. Note that you must provide exactly one of --record-size or --payload-file.")
	t.str(&payloadFile, "payload-file", "PAYLOAD-FILE", "file to read the message payloads from, split by --payload-delimiter; a random one is sent each time.")
	t.str(&delimiter, "payload-delimiter", "PAYLOAD-DELIMITER", "delimiter to be used when --payload-file is provided (default: \\n).")
	t.num(&throughput, "throughput", "THROUGHPUT", "throttle maximum message throughput to *approximately* THROUGHPUT messages/sec. Set this to -1 to disable throttling.")
	client := t.clientPropertyFlags("producer-props", "PROP-NAME=PROP-VALUE", "kafka producer related configuration properties like bootstrap.servers,client.id etc. (repeatable)",
		"producer.config", "CONFIG-FILE", "producer config properties file.")
	t.flag(&printMetrics, "print-metrics", "print out metrics at the end of the test.")
	t.str(&txID, "transactional-id", "TRANSACTIONAL-ID", "Not supported by ferry's tool.")
	t.num(&txDuration, "transaction-duration-ms", "TRANSACTION-DURATION", "Not supported by ferry's tool.")
	if err := t.parse(expandMultiValue(args, "producer-props")); err != nil {
		return err
	}
	switch {
	case topic == "" || numRecords <= 0:
		return t.usage("argument --topic and a positive --num-records are required")
	case throughput == -2 || throughput == 0:
		return t.usage("argument --throughput is required (-1: unthrottled)")
	case (recordSize < 0) == (payloadFile == ""):
		return t.usage("Either --record-size or --payload-file must be specified but not both.")
	case txID != "" || txDuration > 0:
		return errors.New("--transactional-id: ferry's perf test produces without transactions")
	}
	cfg, bootstrap, err := client.read(t, func(props map[string]string) string { return props["bootstrap.servers"] },
		"Missing bootstrap.servers in --producer-props or --bootstrap-server")
	if err != nil {
		return err
	}
	payloads, err := perfPayloads(recordSize, payloadFile, delimiter)
	if err != nil {
		return err
	}
	acks := cfg["acks"]
	if acks == "" {
		acks = "all"
	}
	opts, err := kcli.ProducerOpts(acks, cfg["compression.type"])
	if err != nil {
		return err
	}
	opts = append(opts, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.MaxBufferedRecords(32<<10))
	more, err := producerPropertyOpts(cfg)
	if err != nil {
		return err
	}
	opts = append(opts, more...)
	ctx, stop := signalContext()
	defer stop()
	cl, err := kcli.Dial(ctx, bootstrap, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	stats := newPerfStats(numRecords)
	err = producePerf(ctx, cl, payloads, numRecords, throughput, stats)
	stats.printTotal()
	return err
}

func perfPayloads(size int64, file, delimiter string) ([][]byte, error) {
	if file == "" {
		p := make([]byte, size)
		for i := range p {
			p[i] = byte('A' + rand.IntN(26))
		}
		return [][]byte{p}, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, p := range bytes.Split(data, []byte(unescapeJava(delimiter))) {
		if len(p) > 0 {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("File is empty: %s", file)
	}
	fmt.Printf("Number of messages read: %d\n", len(out))
	return out, nil
}

func producePerf(ctx context.Context, cl *kgo.Client, payloads [][]byte, n, throughput int64, stats *perfStats) error {
	start := time.Now()
	var failed atomic.Pointer[error]
	for i := int64(0); i < n && ctx.Err() == nil && failed.Load() == nil; i++ {
		if throughput > 0 {
			// Sleep until this record's place in an even schedule.
			if due := start.Add(time.Duration(float64(i) / float64(throughput) * float64(time.Second))); time.Until(due) > 0 {
				time.Sleep(time.Until(due))
			}
		}
		payload := payloads[rand.IntN(len(payloads))]
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: payload}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
			stats.record(time.Since(sent), len(payload))
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if p := failed.Load(); p != nil {
		return fmt.Errorf("produce: %w", *p)
	}
	return ctx.Err()
}

// perfStats are ProducerPerformance's Stats: a window line every 5 s and
// the totals, with latencies of a sample of the records.
type perfStats struct {
	mu                         sync.Mutex
	start, windowStart         time.Time
	count, bytes, windowCount  int64
	windowBytes                int64
	totalLatency, maxLatency   time.Duration
	windowLatency, windowMax   time.Duration
	sample                     []time.Duration
	sampleEvery, sampleCounter int64
}

// perfSamples bounds the latencies kept for percentiles, as Kafka's does.
const perfSamples = 500000

func newPerfStats(n int64) *perfStats {
	now := time.Now()
	return &perfStats{start: now, windowStart: now, sampleEvery: max(1, n/perfSamples)}
}

func (s *perfStats) record(latency time.Duration, size int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.bytes += int64(size)
	s.totalLatency += latency
	s.maxLatency = max(s.maxLatency, latency)
	s.windowCount++
	s.windowBytes += int64(size)
	s.windowLatency += latency
	s.windowMax = max(s.windowMax, latency)
	if s.sampleCounter%s.sampleEvery == 0 {
		s.sample = append(s.sample, latency)
	}
	s.sampleCounter++
	if time.Since(s.windowStart) >= 5*time.Second {
		elapsed := time.Since(s.windowStart).Seconds()
		fmt.Printf("%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
			s.windowCount, float64(s.windowCount)/elapsed, float64(s.windowBytes)/mib/elapsed,
			msOf(s.windowLatency)/float64(s.windowCount), msOf(s.windowMax))
		s.windowStart, s.windowCount, s.windowBytes, s.windowLatency, s.windowMax = time.Now(), 0, 0, 0, 0
	}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (s *perfStats) printTotal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	elapsed := time.Since(s.start).Seconds()
	avg := 0.0
	if s.count > 0 {
		avg = msOf(s.totalLatency) / float64(s.count)
	}
	slices.Sort(s.sample)
	pct := func(q float64) int64 {
		if len(s.sample) == 0 {
			return 0
		}
		return s.sample[int(q*float64(len(s.sample)-1))].Milliseconds()
	}
	fmt.Printf("%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.\n",
		s.count, float64(s.count)/elapsed, float64(s.bytes)/mib/elapsed, avg, msOf(s.maxLatency),
		pct(0.5), pct(0.95), pct(0.99), pct(0.999))
}

// kafkaConsumerPerfTest is kafka-consumer-perf-test.sh: consume
// --messages records as a group member and print Kafka's CSV summary.
func kafkaConsumerPerfTest(args []string) error {
	t := newKafkaTool("kafka-consumer-perf-test.sh", "This tool is used to verify the consumer performance.", "", false)
	var (
		topic, include, group, dateFormat              string
		messages, fetchSize, timeoutMs, interval       int64
		threads, fetchThreads                          int64
		fromLatest, detailed, hideHeader, printMetrics bool
		brokers                                        string
	)
	timeoutMs, interval, fetchSize, dateFormat = 10000, 5000, 1<<20, "yyyy-MM-dd HH:mm:ss:SSS"
	group = fmt.Sprintf("perf-consumer-%d", rand.IntN(100000))
	t.str(&brokers, "broker-list", "String: host", "DEPRECATED, use --bootstrap-server instead.")
	t.str(&topic, "topic", "String: topic", "REQUIRED: The topic to consume from.")
	t.str(&include, "include", "String: include", "Regular expression specifying list of topics to include for consumption.")
	t.str(&group, "group", "String: gid", "The group id to consume on.")
	t.num(&messages, "messages", "Long: count", "REQUIRED: The number of messages to consume.")
	t.num(&fetchSize, "fetch-size", "Integer: size", "The amount of data to fetch in a single request.")
	t.flag(&fromLatest, "from-latest", "If the consumer does not already have an established offset to consume from, start with the latest message present in the log rather than the earliest message.")
	t.num(&timeoutMs, "timeout", "Long: milliseconds", "The maximum allowed time in milliseconds between returned records.")
	t.num(&interval, "reporting-interval", "Integer: interval_ms", "Interval in milliseconds at which to print progress info.")
	t.flag(&detailed, "show-detailed-stats", "If set, stats are reported for each reporting interval as configured by reporting-interval")
	t.flag(&hideHeader, "hide-header", "If set, skips printing the header for the stats")
	t.str(&dateFormat, "date-format", "String: date format", "The date format to use for formatting the time field (Java's SimpleDateFormat; yyyy-MM-dd HH:mm:ss:SSS).")
	client := t.clientPropertyFlags("", "", "", "consumer.config", "String: config file", "Consumer config properties file.")
	t.num(&threads, "threads", "Integer: count", "Ignored (deprecated in Kafka).")
	t.num(&fetchThreads, "num-fetch-threads", "Integer: count", "Ignored (deprecated in Kafka).")
	t.flag(&printMetrics, "print-metrics", "Print out the metrics.")
	if err := t.parse(args); err != nil {
		return err
	}
	if (topic == "") == (include == "") || messages <= 0 {
		return t.usage("Exactly one of --topic/--include and a positive --messages are required")
	}
	cfg, bootstrap, err := client.read(t, brokerList(&brokers), "")
	if err != nil {
		return err
	}
	more, err := consumerPropertyOpts(cfg)
	if err != nil {
		return err
	}
	reset := kgo.NewOffset().AtStart()
	if fromLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	topics := []kgo.Opt{kgo.ConsumeTopics(topic)}
	if include != "" {
		topics = []kgo.Opt{kgo.ConsumeTopics("^(?:" + include + ")$"), kgo.ConsumeRegex()}
	}
	assigned := make(chan time.Time, 1)
	opts := append(append(topics, more...), kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(reset), kgo.FetchMaxBytes(int32(max(fetchSize, 1024))),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- time.Now():
			default:
			}
		}))
	ctx, stop := signalContext()
	defer stop()
	cl, err := kcli.Dial(ctx, bootstrap, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	layout := dateFormat
	if !hideHeader {
		fmt.Println("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
	}
	res := consumePerf(ctx, cl, messages, time.Duration(timeoutMs)*time.Millisecond, assigned)
	if res.count < messages {
		fmt.Printf("WARNING: Exiting before consuming the expected number of messages: timeout (%d ms) exceeded. You can use the --timeout option to increase the timeout.\n", timeoutMs)
	}
	res.print(layout)
	return nil
}

type consumeResult struct {
	start, end, assignedAt time.Time
	count, bytes           int64
}

func consumePerf(ctx context.Context, cl *kgo.Client, want int64, timeout time.Duration, assigned <-chan time.Time) consumeResult {
	r := consumeResult{start: time.Now()}
	last := time.Now()
	for r.count < want && ctx.Err() == nil && time.Since(last) < timeout {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fetches := cl.PollRecords(pctx, int(min(want-r.count, 10000)))
		cancel()
		if fetches.IsClientClosed() {
			break
		}
		fetches.EachRecord(func(rec *kgo.Record) {
			r.count++
			r.bytes += int64(len(rec.Key) + len(rec.Value))
			last = time.Now()
		})
		if r.assignedAt.IsZero() {
			select {
			case at := <-assigned:
				r.assignedAt = at
			default:
			}
		}
	}
	r.end = time.Now()
	if r.assignedAt.IsZero() {
		r.assignedAt = r.start
	}
	return r
}

func (r consumeResult) print(layout string) {
	elapsed := r.end.Sub(r.start).Seconds()
	fetchElapsed := r.end.Sub(r.assignedAt).Seconds()
	mb := float64(r.bytes) / mib
	rate := func(v, secs float64) float64 {
		if secs <= 0 {
			return 0
		}
		return v / secs
	}
	fmt.Printf("%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f\n",
		formatJavaDate(r.start, layout), formatJavaDate(r.end, layout), mb, rate(mb, elapsed), r.count, rate(float64(r.count), elapsed),
		r.assignedAt.Sub(r.start).Milliseconds(), r.end.Sub(r.assignedAt).Milliseconds(),
		rate(mb, fetchElapsed), rate(float64(r.count), fetchElapsed))
}

// formatJavaDate formats t with the common SimpleDateFormat letters
// (yyyy MM dd HH mm ss SSS); Go's layouts know milliseconds only after a
// dot, so SSS is filled in by hand.
func formatJavaDate(t time.Time, f string) string {
	layout := strings.NewReplacer("yyyy", "2006", "MM", "01", "dd", "02", "HH", "15", "mm", "04", "ss", "05").Replace(f)
	parts := strings.Split(layout, "SSS")
	for i, p := range parts {
		parts[i] = t.Format(p)
	}
	return strings.Join(parts, fmt.Sprintf("%03d", t.Nanosecond()/int(time.Millisecond)))
}
