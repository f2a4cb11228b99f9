package cluster_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// txnTimeline records, from the client's side, every request a producer
// sends: its key, broker and the wall-clock span from writing it to
// reading its answer.
type txnTimeline struct {
	mu    sync.Mutex
	spans []requestSpan
}

type requestSpan struct {
	key        int16
	broker     int32
	start, end time.Time
}

func (tl *txnTimeline) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	end := time.Now()
	tl.mu.Lock()
	tl.spans = append(tl.spans, requestSpan{key, meta.NodeID, end.Add(-e2e.DurationE2E()), end})
	tl.mu.Unlock()
}

func (tl *txnTimeline) reset() {
	tl.mu.Lock()
	tl.spans = nil
	tl.mu.Unlock()
}

// BenchmarkTxnTimeline: where one transaction's time goes, as the
// producer sees it. On three brokers (as BenchmarkTxnProduce), a
// transactional producer writes transactions of k records (k = 10, 100,
// 1,000) for FERRY_BENCH_WINDOW; for each request kind it logs the mean
// time per transaction spent in it (client write to answer read) and the
// mean time per transaction with no request in flight (the client's own
// work and its waits), beside the same figures for the idempotent loop
// and for the floor: the idempotent loop with one acknowledged write
// after each flush, the least an EndTxn costs, whose ratio to the
// idempotent loop bounds what any transaction could reach on these
// machines. Records are 100 bytes, or FERRY_BENCH_SIZE; FERRY_BENCH_K
// measures one k alone.
func BenchmarkTxnTimeline(b *testing.B) {
	for range b.N {
		nodes := startTxnBrokers(b)
		adm := txnAdmin(b, nodes)
		tl := &txnTimeline{}
		idem := benchClient(b, nodes, "", kgo.WithHooks(tl))
		txn := benchClient(b, nodes, "", kgo.TransactionalID("bench-txn-timeline"), kgo.WithHooks(tl))
		size := 100
		if n, err := strconv.Atoi(os.Getenv("FERRY_BENCH_SIZE")); err == nil && n > 0 {
			size = n
		}
		value := make([]byte, size)
		// The floor (floorSide): no transaction can be answered sooner,
		// so idempotent/floor bounds any txn/idempotent ratio here.
		createFloorTopic(b, adm)
		ks := []int{10, 100, 1000}
		if v, err := strconv.Atoi(os.Getenv("FERRY_BENCH_K")); err == nil && v > 0 {
			ks = []int{v} // one cell, for a quicker look
		}
		for _, k := range ks {
			perLoop := map[side]float64{}
			for _, sd := range sides {
				withFreshTopic(b, adm, fmt.Sprintf("bench-txn-timeline-%d-%v", k, sd), func(topic string) {
					run := func(window time.Duration) float64 {
						rate, err := sd.loop(idem, txn, 0, topic, k, value, window)
						if err != nil {
							b.Fatal(err)
						}
						return rate
					}
					// Warm up (connections, producer id) briefly: the more
					// data the brokers hold the slower they write here.
					run(300 * time.Millisecond)
					tl.reset()
					brokersBefore, clientBefore, callsBefore := brokersCPU(nodes), processCPU(), brokersSyscalls(nodes)
					start := time.Now()
					rate := run(benchWindow())
					elapsed := time.Since(start)
					brokers, client := brokersCPU(nodes)-brokersBefore, processCPU()-clientBefore
					calls := brokersSyscalls(nodes) - callsBefore
					loops := float64(rate) * elapsed.Seconds() / float64(k)
					perLoop[sd] = elapsed.Seconds() * 1000 / loops
					b.Logf("k=%d %v: %.0f rec/s, %.3f ms per loop; per loop: brokers' CPU %.3f ms and %.0f reads and writes, client's CPU %.3f ms (%.2f of 2 cores); %s",
						k, sd, rate, perLoop[sd], ms(brokers)/loops, float64(calls)/loops, ms(client)/loops,
						(brokers+client).Seconds()/elapsed.Seconds()/2, tl.summary(start, elapsed, loops))
				})
			}
			b.Logf("k=%d: idempotent/floor %.2f (the best txn/idempotent ratio here), txn/idempotent %.2f",
				k, perLoop[idempotentSide]/perLoop[floorSide], perLoop[idempotentSide]/perLoop[transactionalSide])
		}
	}
}

// brokersCPU is the CPU time (user and system) the brokers' processes
// have used, from /proc: what a loop costs the machine, beside how long
// it takes (2 cores, shared with the client).
func brokersCPU(nodes []*harness.Node) time.Duration {
	var total time.Duration
	for _, n := range nodes {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.PID()))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: utime and stime are fields 14 and 15,
		// the 12th and 13th after the state, in clock ticks (100 a second).
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(utime+stime) * 10 * time.Millisecond
	}
	return total
}

// brokersSyscalls counts the read and write system calls (of files and
// sockets: /proc's syscr and syscw) the brokers' processes have made:
// each request, response, replica fetch and append between brokers costs
// some, and their count is what a transaction's extra round trips cost.
func brokersSyscalls(nodes []*harness.Node) int64 {
	var total int64
	for _, n := range nodes {
		io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", n.PID()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(io), "\n") {
			name, v, ok := strings.Cut(line, ": ")
			if ok && (name == "syscr" || name == "syscw") {
				c, _ := strconv.ParseInt(v, 10, 64)
				total += c
			}
		}
	}
	return total
}

// processCPU is the CPU time this process (the clients) has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

// summary is the mean time per loop in each request kind, in ms, and
// the time no request was in flight.
func (tl *txnTimeline) summary(start time.Time, elapsed time.Duration, loops float64) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	per := map[string]time.Duration{}
	counts := map[string]int{}
	for _, s := range tl.spans {
		name := kmsg.NameForKey(s.key)
		per[name] += s.end.Sub(s.start)
		counts[name]++
	}
	idle := elapsed - busyTime(tl.spans, start, start.Add(elapsed))
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, n := range names {
		fmt.Fprintf(&sb, "%s %.3f ms (%.1f/loop, %.3f ms each); ", n, per[n].Seconds()*1000/loops,
			float64(counts[n])/loops, per[n].Seconds()*1000/float64(counts[n]))
	}
	fmt.Fprintf(&sb, "no request in flight %.3f ms", idle.Seconds()*1000/loops)
	return sb.String()
}

// busyTime is how much of [from, to] at least one span covers.
func busyTime(spans []requestSpan, from, to time.Time) time.Duration {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b requestSpan) int { return a.start.Compare(b.start) })
	var busy time.Duration
	var curStart, curEnd time.Time
	flush := func() {
		if curEnd.After(curStart) {
			busy += curEnd.Sub(curStart)
		}
	}
	for _, sp := range s {
		st, en := sp.start, sp.end
		if st.Before(from) {
			st = from
		}
		if en.After(to) {
			en = to
		}
		if !en.After(st) {
			continue
		}
		if st.After(curEnd) {
			flush()
			curStart, curEnd = st, en
		} else if en.After(curEnd) {
			curEnd = en
		}
	}
	flush()
	return busy
}
