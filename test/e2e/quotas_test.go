package e2e

import (
	"context"
	"crypto/rand"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

const quotaRate = 256 << 10 // bytes per second

// throttleHook counts responses that carried a throttle time.
type throttleHook struct{ throttled atomic.Int32 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.throttled.Add(1)
	}
}

// produceFlat produces 16 KiB random records as fast as the client can for
// dur and returns the acknowledged bytes per second after the first
// second (the measure skips the start-up).
func produceFlat(t *testing.T, cl *kgo.Client, topic string, dur time.Duration) float64 {
	t.Helper()
	value := make([]byte, 16<<10)
	rand.Read(value)
	start := time.Now()
	from := start.Add(time.Second)
	var acked atomic.Int64
	var firstErr atomic.Value
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	for ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(r *kgo.Record, err error) {
			if err != nil {
				if ctx.Err() == nil {
					firstErr.CompareAndSwap(nil, err)
				}
				return
			}
			if time.Now().After(from) {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	end := time.Now()
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return float64(acked.Load()) / end.Sub(from).Seconds()
}

// quotaProducer is a franz-go producer with small batches (a 1 MiB batch
// would be four seconds of a 256 KiB/s quota) and a bounded buffer.
func quotaProducer(t *testing.T, node *harness.Node, clientID string, h *throttleHook, opts ...kgo.Opt) *kgo.Client {
	return franz(t, node, append([]kgo.Opt{kgo.ClientID(clientID), kgo.ProducerBatchMaxBytes(64 << 10),
		kgo.MaxBufferedRecords(64), kgo.ProducerLinger(0), kgo.WithHooks(h), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
		// Quotas count the bytes on the wire: identical values would
		// compress, so the measure would not be the quota.
		kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)...)
}

func within(rate, want, tolerance float64) bool {
	return rate >= want*(1-tolerance) && rate <= want*(1+tolerance)
}

// A producer_byte_rate quota on one client id holds franz-go producing as
// fast as it can near the quota, with throttle_time_ms in the responses;
// another client id is not held. The quota is listed by the CLI, with
// Kafka's validation, and survives a restart.
func TestClientQuotaHoldsProducer(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "q-produce", 1)
	out := cli(t, node, "", "quotas", "set", "--entity-type", "clients", "--entity-name", "slow",
		"--add-config", "producer_byte_rate=262144")
	if !strings.Contains(out, "client-id 'slow'") {
		t.Fatalf("set: %s", out)
	}
	if got := squeeze(cli(t, node, "", "quotas", "list")); got != "client-id 'slow' producer_byte_rate=262144\n" {
		t.Fatalf("list: %q", got)
	}
	res := runCLI(t, "", nil, "quotas", "set", "--entity-type", "clients", "--entity-name", "slow",
		"--add-config", "producer_byte_rate=1.5", "--bootstrap", node.KafkaAddr)
	if res.code == 0 || !strings.Contains(res.stderr, "INVALID_REQUEST") {
		t.Fatalf("a fractional byte rate: exit %d %s", res.code, res.stderr)
	}

	var slowHook, fastHook throttleHook
	slow := produceFlat(t, quotaProducer(t, node, "slow", &slowHook), "q-produce", 5*time.Second)
	fast := produceFlat(t, quotaProducer(t, node, "fast", &fastHook), "q-produce", 3*time.Second)
	t.Logf("client id slow: %.0f B/s (quota %d), %d throttled responses; fast: %.0f B/s, %d throttled",
		slow, quotaRate, slowHook.throttled.Load(), fast, fastHook.throttled.Load())
	if !within(slow, quotaRate, 0.25) {
		t.Errorf("slow produced %.0f B/s, want %d ±25%%", slow, quotaRate)
	}
	if slowHook.throttled.Load() == 0 {
		t.Error("no produce response to slow carried a throttle time")
	}
	if fastHook.throttled.Load() != 0 || fast < 2*quotaRate {
		t.Errorf("fast: %.0f B/s, %d throttled responses; want unthrottled", fast, fastHook.throttled.Load())
	}
	m := scrapeMetrics(t, node)
	if m.value("ferry_client_quota_throttle_seconds_total", "quota=produce", "client_id=slow", "user=") <= 1 {
		t.Errorf("client id slow's throttle seconds are not counted")
	}
	if m.value("ferry_client_quota_throttled_responses_total", "client_id=fast") != 0 {
		t.Errorf("client id fast counted as throttled")
	}

	node.Stop()
	node.Restart()
	node.WaitKafka()
	if got := squeeze(cli(t, node, "", "quotas", "list", "--entity-type", "clients", "--entity-name", "slow")); got != "client-id 'slow' producer_byte_rate=262144\n" {
		t.Fatalf("after a restart: %q", got)
	}
	cli(t, node, "", "quotas", "remove", "--entity-type", "clients", "--entity-name", "slow", "--delete-config", "producer_byte_rate")
	if got := cli(t, node, "", "quotas", "list"); got != "" {
		t.Fatalf("after remove: %q", got)
	}
}

// A consumer_byte_rate quota on the client-id default holds a consumer
// near the quota.
func TestClientQuotaHoldsConsumer(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "q-fetch", 1)
	var h throttleHook
	produceFlat(t, quotaProducer(t, node, "filler", &h), "q-fetch", 2*time.Second) // unthrottled: MiBs
	cli(t, node, "", "quotas", "set", "--entity-type", "clients", "--entity-default", "--add-config", "consumer_byte_rate=262144")

	var ch throttleHook
	cl := franz(t, node, kgo.ClientID("reader"), kgo.WithHooks(&ch), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"q-fetch": {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	from := start.Add(time.Second)
	var n int64
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if time.Now().After(from) {
				n += int64(len(r.Value))
			}
		})
	}
	rate := float64(n) / time.Since(from).Seconds()
	t.Logf("consumer: %.0f B/s (quota %d), %d throttled responses", rate, quotaRate, ch.throttled.Load())
	if !within(rate, quotaRate, 0.25) {
		t.Errorf("consumed %.0f B/s, want %d ±25%%", rate, quotaRate)
	}
	if ch.throttled.Load() == 0 {
		t.Error("no fetch response carried a throttle time")
	}
}

// A user quota applies over SASL to that user only.
func TestUserQuotaOverSasl(t *testing.T) {
	node := saslNode(t)
	createTopicAs(t, node, aliceScram, "q-user")
	adm := kadm.NewClient(franz(t, node, kgo.SASL(bobScram512)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := "alice"
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &alice}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quotaRate}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, res)
	}
	var ah, bh throttleHook
	aliceRate := produceFlat(t, quotaProducer(t, node, "app", &ah, kgo.SASL(aliceScram)), "q-user", 4*time.Second)
	bobRate := produceFlat(t, quotaProducer(t, node, "app", &bh, kgo.SASL(bobScram512)), "q-user", 3*time.Second)
	t.Logf("alice: %.0f B/s, %d throttled; bob (same client id): %.0f B/s, %d throttled", aliceRate, ah.throttled.Load(), bobRate, bh.throttled.Load())
	if !within(aliceRate, quotaRate, 0.25) || ah.throttled.Load() == 0 {
		t.Errorf("alice: %.0f B/s, want %d ±25%% and throttled", aliceRate, quotaRate)
	}
	if bh.throttled.Load() != 0 || bobRate < 2*quotaRate {
		t.Errorf("bob: %.0f B/s, %d throttled responses; want unthrottled", bobRate, bh.throttled.Load())
	}
}

// The CLI's entity flags: a user with the client-id default, the user
// default, filters, and usage errors (exit 2).
func TestQuotasCLIEntities(t *testing.T) {
	node := kafkaNode(t)
	cli(t, node, "", "quotas", "set", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-default",
		"--add-config", "consumer_byte_rate=1000,producer_byte_rate=2000")
	cli(t, node, "", "quotas", "set", "--entity-type", "users", "--entity-default", "--add-config", "request_percentage=12.5")
	all := squeeze(cli(t, node, "", "quotas", "list"))
	want := "user-principal '<default>' request_percentage=12.5\n" +
		"user-principal 'alice', client-id '<default>' consumer_byte_rate=1000,producer_byte_rate=2000\n"
	if all != want {
		t.Fatalf("list:\n%s\nwant:\n%s", all, want)
	}
	if got := squeeze(cli(t, node, "", "quotas", "list", "--entity-type", "users", "--entity-default")); got != "user-principal '<default>' request_percentage=12.5\n" {
		t.Fatalf("list the user default: %q", got)
	}
	for _, args := range [][]string{
		{"quotas", "set", "--entity-name", "x", "--add-config", "producer_byte_rate=1"},
		{"quotas", "set", "--entity-type", "users", "--add-config", "producer_byte_rate=1"},
		{"quotas", "set", "--entity-type", "topics", "--entity-name", "x", "--add-config", "producer_byte_rate=1"},
		{"quotas", "set", "--entity-type", "users", "--entity-name", "x", "--add-config", "producer_byte_rate"},
		{"quotas", "remove", "--entity-type", "users", "--entity-name", "x"},
		{"quotas", "frobnicate"},
	} {
		if res := runCLI(t, "", nil, append(args, "--bootstrap", node.KafkaAddr)...); res.code != 2 {
			t.Errorf("ferry %v: exit %d, want 2 (usage)\n%s", args, res.code, res.stderr)
		}
	}
}

// metadataHammer sends Metadata requests for topic one after another to
// the seed broker until ctx ends, counting the answers and those that
// carried a throttle time.
type metadataHammer struct {
	served, throttled int
	err               error
}

func hammerMetadata(ctx context.Context, cl *kgo.Client, topic string) *metadataHammer {
	h := &metadataHammer{}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	broker := cl.SeedBrokers()[0] // straight to the broker: no client-side metadata cache
	for ctx.Err() == nil {
		resp, err := broker.Request(ctx, req)
		if err != nil {
			if ctx.Err() == nil {
				h.err = err
			}
			break
		}
		h.served++
		if resp.(*kmsg.MetadataResponse).ThrottleMillis > 0 {
			h.throttled++
		}
	}
	return h
}

// A request_percentage quota of 0.2% (a five-hundredth of one handler
// thread) on one client id slows franz-go hammering cheap Metadata requests well below
// an unquoted client id hammering beside it, with throttle_time_ms in the
// responses; the other client id gets none. Lifted, it throttles no more.
func TestRequestQuotaSlowsAClient(t *testing.T) {
	node := kafkaNode(t)
	// Partitions make each Metadata cost the broker more than the round
	// trip costs the client, so the quota, not the client, sets the pace.
	createTopic(t, node, "q-requests", 256)
	cli(t, node, "", "quotas", "set", "--entity-type", "clients", "--entity-name", "busy", "--add-config", "request_percentage=0.2")
	if got := squeeze(cli(t, node, "", "quotas", "list")); got != "client-id 'busy' request_percentage=0.2\n" {
		t.Fatalf("list: %q", got)
	}
	var busyHook, freeHook throttleHook
	busy := franz(t, node, kgo.ClientID("busy"), kgo.WithHooks(&busyHook))
	free := franz(t, node, kgo.ClientID("free"), kgo.WithHooks(&freeHook))

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	results := make(chan *metadataHammer, 2)
	go func() { results <- hammerMetadata(ctx, busy, "q-requests") }()
	freeRes := hammerMetadata(ctx, free, "q-requests")
	busyRes := <-results
	t.Logf("busy (request_percentage=0.2): %d requests served, %d throttled (%d throttle hooks); free: %d served, %d throttled",
		busyRes.served, busyRes.throttled, busyHook.throttled.Load(), freeRes.served, freeRes.throttled)
	if busyRes.err != nil || freeRes.err != nil {
		t.Fatalf("requests failed: busy %v, free %v", busyRes.err, freeRes.err)
	}
	if busyRes.throttled == 0 || busyHook.throttled.Load() == 0 {
		t.Error("no response to the quota'd client id carried a throttle time")
	}
	if freeRes.throttled != 0 || freeHook.throttled.Load() != 0 {
		t.Errorf("the unquoted client id got %d throttled responses", freeRes.throttled)
	}
	if freeRes.served < 100 || busyRes.served*4 > freeRes.served {
		t.Errorf("busy served %d requests, free %d in the same interval: want busy below a quarter of free", busyRes.served, freeRes.served)
	}
	m := scrapeMetrics(t, node)
	if m.value("ferry_client_quota_throttled_responses_total", "quota=request", "client_id=busy", "user=") == 0 {
		t.Error("client id busy's request throttling is not counted")
	}

	cli(t, node, "", "quotas", "remove", "--entity-type", "clients", "--entity-name", "busy", "--delete-config", "request_percentage")
	lifted := franz(t, node, kgo.ClientID("busy"))
	ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	if res := hammerMetadata(ctx2, lifted, "q-requests"); res.err != nil || res.served == 0 || res.throttled != 0 {
		t.Errorf("after the quota was removed: %d served, %d throttled, err %v", res.served, res.throttled, res.err)
	}
}

// connectionBurst opens 20 connections from ip as fast as it can, then
// sends each an ApiVersions request, and returns how many were answered
// (the others the broker closed unanswered).
func connectionBurst(t *testing.T, node *harness.Node, ip string) int {
	t.Helper()
	conns := make([]net.Conn, 20)
	for i := range conns {
		conns[i] = dialKafkaFrom(t, node, ip)
	}
	answered := make([]bool, len(conns))
	var wg sync.WaitGroup
	for i, nc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answered[i] = apiVersionsAnswered(t, nc)
			nc.Close()
		}()
	}
	wg.Wait()
	n := 0
	for _, ok := range answered {
		if ok {
			n++
		}
	}
	return n
}

// KIP-612 against a real `ferry serve`: connection_creation_rate=2 on
// 127.0.0.1, set with the CLI as kafka-configs.sh sets it, leaves most
// of a burst of 20 connections unanswered and closed, counted in
// /metrics; 127.0.0.2 has no quota of its own and is not held. The quota
// survives a restart; removed (by a CLI connecting from the limited
// address, which retries its way in), every connection is served.
func TestIPConnectionQuota(t *testing.T) {
	node := kafkaNode(t)
	cli(t, node, "", "quotas", "set", "--entity-type", "ips", "--entity-name", "127.0.0.1", "--add-config", "connection_creation_rate=2")
	cli(t, node, "", "quotas", "set", "--entity-type", "ips", "--entity-default", "--add-config", "connection_creation_rate=1000")
	if got := squeeze(cli(t, node, "", "quotas", "list", "--entity-type", "ips")); got != "ip '127.0.0.1' connection_creation_rate=2\nip '<default>' connection_creation_rate=1000\n" {
		t.Fatalf("list ips: %q", got)
	}
	for _, args := range [][]string{
		{"--entity-type", "ips", "--entity-name", "127.0.0.1", "--entity-type", "users", "--entity-name", "a", "--add-config", "connection_creation_rate=1"},
		{"--entity-type", "ips", "--entity-name", "not-an-ip", "--add-config", "connection_creation_rate=1"},
		{"--entity-type", "ips", "--entity-default", "--add-config", "producer_byte_rate=1024"},
		{"--entity-type", "ips", "--entity-default", "--add-config", "connection_creation_rate=0.5"},
	} {
		res := runCLI(t, "", nil, append(append([]string{"quotas", "set"}, args...), "--bootstrap", node.KafkaAddr)...)
		if res.code != 1 || !strings.Contains(res.stderr, "INVALID_REQUEST") {
			t.Errorf("quotas set %v: exit %d, want 1 with INVALID_REQUEST\n%s", args, res.code, res.stderr)
		}
	}
	before := scrapeMetrics(t, node).value("ferry_connections_rejected_total", "reason=connection_creation_rate")
	limited := connectionBurst(t, node, "127.0.0.1")
	refused := scrapeMetrics(t, node).value("ferry_connections_rejected_total", "reason=connection_creation_rate") - before
	other := connectionBurst(t, node, "127.0.0.2")
	t.Logf("connection_creation_rate=2: %d of 20 from 127.0.0.1 answered (%v refusals counted), %d of 20 from 127.0.0.2", limited, refused, other)
	if limited > 5 {
		t.Fatalf("127.0.0.1 at 2/s: %d of 20 connections answered, want most refused", limited)
	}
	if refused < float64(20-limited) {
		t.Fatalf("%v refusals counted, want at least %d", refused, 20-limited)
	}
	if other != 20 {
		t.Fatalf("127.0.0.2 (the default's 1000/s): %d of 20 answered", other)
	}

	node.Stop()
	node.Restart()
	node.WaitKafka()
	if n := connectionBurst(t, node, "127.0.0.1"); n > 5 {
		t.Fatalf("after a restart: %d of 20 answered, the quota is gone", n)
	}
	cli(t, node, "", "quotas", "remove", "--entity-type", "ips", "--entity-name", "127.0.0.1", "--delete-config", "connection_creation_rate")
	if n := connectionBurst(t, node, "127.0.0.1"); n != 20 {
		t.Fatalf("quota removed: %d of 20 answered", n)
	}
}
