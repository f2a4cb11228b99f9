package cluster_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// httpLoad is an HTTP producer behind a naive load balancer: each request
// goes to the next node of its list, and a node that refuses connections
// is dropped from it. It records what was acknowledged and every 5xx.
type httpLoad struct {
	mu        sync.Mutex
	targets   []*harness.Node
	next      int
	acked     map[[2]int64]string // (partition, offset) → value
	fivexx    []time.Time         // when each 5xx request started
	transport int
	stop      chan struct{}
	done      sync.WaitGroup
	client    *http.Client
}

func startHTTPLoad(t *testing.T, targets []*harness.Node, topic string, workers int) *httpLoad {
	t.Helper()
	l := &httpLoad{targets: slices.Clone(targets), acked: map[[2]int64]string{}, stop: make(chan struct{}),
		client: &http.Client{Timeout: 60 * time.Second}}
	for w := range workers {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			for i := 0; i < 100000; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.request(t, topic, fmt.Sprintf("w%d-%d", w, i))
			}
		}()
	}
	return l
}

func (l *httpLoad) target() *harness.Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.targets[l.next%len(l.targets)]
	l.next++
	return n
}

// add puts a node (back) into the list.
func (l *httpLoad) add(n *harness.Node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.targets, n) {
		l.targets = append(l.targets, n)
	}
}

func (l *httpLoad) drop(n *harness.Node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.Index(l.targets, n); i >= 0 && len(l.targets) > 1 {
		l.targets = slices.Delete(l.targets, i, i+1)
	}
}

// request posts one record to each of partitions 0 and 1.
func (l *httpLoad) request(t *testing.T, topic, id string) {
	n := l.target()
	values := []string{id + "-p0", id + "-p1"}
	body := fmt.Sprintf(`{"records":[{"partition":0,"value":%q},{"partition":1,"value":%q}]}`, values[0], values[1])
	started := time.Now()
	res, err := l.client.Post(n.URL+"/kafka/"+topic, "application/json", strings.NewReader(body))
	if err != nil {
		l.mu.Lock()
		l.transport++
		l.mu.Unlock()
		l.drop(n)
		time.Sleep(10 * time.Millisecond) // not a wait for a condition: a client's backoff
		return
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if res.StatusCode >= 500 {
		l.fivexx = append(l.fivexx, started)
		t.Logf("%s answered %d: %s", n.URL, res.StatusCode, data)
		return
	}
	var answer struct{ Offsets []producedOffset }
	if res.StatusCode != http.StatusOK || json.Unmarshal(data, &answer) != nil || len(answer.Offsets) != 2 {
		t.Errorf("%s answered %d: %s", n.URL, res.StatusCode, data)
		return
	}
	for i, o := range answer.Offsets {
		l.acked[[2]int64{int64(o.Partition), o.Offset}] = fmt.Sprintf("%q", values[i])
	}
}

func (l *httpLoad) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

func (l *httpLoad) finish() {
	close(l.stop)
	l.done.Wait()
}

// leadersIn reports whether every live node's view of topic names a
// leader among live for each of its partitions, with an ISR of live
// brokers only.
func leadersIn(nodes []*harness.Node, topic string, partitions int, live ...int32) bool {
	for _, n := range nodes {
		if !n.Running() {
			continue
		}
		var info topicView
		if getJSONQuiet(n.URL+"/topics/"+topic, &info) != nil || len(info.Partitions) != partitions {
			return false
		}
		for _, p := range info.Partitions {
			if !slices.Contains(live, p.Leader) || slices.ContainsFunc(p.ISR, func(id int32) bool { return !slices.Contains(live, id) }) {
				return false
			}
		}
	}
	return true
}

// Four brokers; both partitions of an RF3 topic are led by broker 2, and
// an HTTP client produces through broker 1, which holds no replica (every
// record forwarded), and the others. Brokers 1 and 2 are killed (kill -9)
// together; the client drops the dead nodes and goes on through 3 and 4.
// Once the survivors' views show the new leaders no request answers 5xx,
// and every acknowledged record is read back, at its offset, over Kafka
// and over HTTP from both survivors.
func TestGatewayProduceSurvivesKillOfItsNodeAndTheLeader(t *testing.T) {
	nodes := startCluster(t, 4)
	const topic = "gwkill"
	createAssigned(t, nodes, topic, [][]int32{{2, 3, 4}, {2, 4, 3}}, nil)
	load := startHTTPLoad(t, []*harness.Node{nodes[0], nodes[1], nodes[2], nodes[3]}, topic, 2)
	harness.WaitFor(t, "records acknowledged before the kills", 30*time.Second, func() bool { return load.ackedCount() >= 100 })
	before := load.ackedCount()
	killed := time.Now()
	nodes[0].Kill()
	nodes[1].Kill()
	took := harness.WaitFor(t, "leaders on the survivors", 60*time.Second, func() bool { return leadersIn(nodes, topic, 2, 3, 4) })
	failedOver := time.Now()
	acked := load.ackedCount()
	harness.WaitFor(t, "records acknowledged after the failover", 30*time.Second, func() bool { return load.ackedCount() >= acked+200 })
	load.finish()

	var after int
	for _, at := range load.fivexx {
		if at.After(failedOver) {
			after++
		}
	}
	t.Logf("%d records acknowledged before the kills, %d in all; failover seen %v after the kills; %d 5xx answers (%d after the failover), %d connection errors",
		before, len(load.acked), took.Round(time.Millisecond), len(load.fivexx), after, load.transport)
	if after > 0 {
		t.Fatalf("%d requests started after the failover (at %v) answered 5xx", after, failedOver.Sub(killed))
	}
	counts := map[int32]int{}
	for k := range load.acked {
		counts[int32(k[0])] = max(counts[int32(k[0])], int(k[1])+1)
	}
	fromKafka := readKafka(t, nodes, topic, counts)
	check := func(how string, p int32, off int64, value string) {
		if want, ok := load.acked[[2]int64{int64(p), off}]; ok && value != want {
			t.Fatalf("%s: partition %d offset %d holds %s, %s was acknowledged there", how, p, off, value, want)
		}
	}
	for p, recs := range fromKafka {
		for _, r := range recs {
			check("Kafka", p, r.offset, fmt.Sprintf("%q", strings.Trim(r.value, `"`)))
		}
	}
	for _, n := range nodes[2:] {
		for p, want := range counts {
			for _, rec := range readHTTP(t, n, topic, p, want) {
				check(n.URL, p, rec.Offset, string(rec.Value))
			}
		}
	}
}

// TestLongGatewaySurvivesLeaderKills (the long variant runs under make
// test-long; FERRY_LONG=1): an HTTP client spreads requests over three
// brokers while the leader of partition 0 is killed with kill -9 and
// restarted, again and again (10 times). The client drops a node that
// refuses connections and takes it back once it is in sync again. Every
// acknowledged record is then read back at its offset, no value stored
// twice.
func TestLongGatewaySurvivesLeaderKills(t *testing.T) {
	if os.Getenv("FERRY_LONG") == "" {
		t.Skip("long: set FERRY_LONG=1 (make test-long)")
	}
	nodes := startCluster(t, 3)
	const topic = "gwkills"
	createAssigned(t, nodes, topic, [][]int32{{1, 2, 3}, {2, 3, 1}}, nil)
	load := startHTTPLoad(t, nodes, topic, 4)
	harness.WaitFor(t, "records acknowledged before the kills", 30*time.Second, func() bool { return load.ackedCount() >= 100 })
	for k := range 10 {
		var info topicView
		if err := getJSONQuiet(nodes[0].URL+"/topics/"+topic, &info); err != nil || len(info.Partitions) != 2 {
			t.Fatalf("topic view: %v %+v", err, info)
		}
		victim := nodes[info.Partitions[0].Leader-1]
		var live []int32
		for i := range nodes {
			if nodes[i] != victim {
				live = append(live, int32(i+1))
			}
		}
		load.drop(victim)
		victim.Kill()
		harness.WaitFor(t, fmt.Sprintf("kill %d: leaders on %v", k+1, live), 60*time.Second, func() bool { return leadersIn(nodes, topic, 2, live...) })
		acked := load.ackedCount()
		harness.WaitFor(t, fmt.Sprintf("kill %d: records acknowledged after the failover", k+1), 60*time.Second, func() bool { return load.ackedCount() >= acked+100 })
		victim.Restart()
		harness.WaitFor(t, fmt.Sprintf("kill %d: the victim back in sync", k+1), 60*time.Second, func() bool { return leadersIn(nodes, topic, 2, 1, 2, 3) && inSync(nodes, topic, 3) })
		load.add(victim)
	}
	load.finish()
	counts := map[int32]int{}
	for k := range load.acked {
		counts[int32(k[0])] = max(counts[int32(k[0])], int(k[1])+1)
	}
	stored := map[string]bool{}
	for p, recs := range readKafka(t, nodes, topic, counts) {
		for _, r := range recs {
			if want, ok := load.acked[[2]int64{int64(p), r.offset}]; ok && r.value != want {
				t.Fatalf("partition %d offset %d holds %s, %s was acknowledged there", p, r.offset, r.value, want)
			}
			if stored[r.value] {
				t.Fatalf("%s stored twice", r.value)
			}
			stored[r.value] = true
		}
	}
	t.Logf("10 leader kills: %d records acknowledged and kept, %d 5xx answers, %d connection errors", len(load.acked), len(load.fivexx), load.transport)
}

// inSync reports whether every live node's view of topic has isr replicas
// in each partition's ISR.
func inSync(nodes []*harness.Node, topic string, isr int) bool {
	for _, n := range nodes {
		if !n.Running() {
			continue
		}
		var info topicView
		if getJSONQuiet(n.URL+"/topics/"+topic, &info) != nil {
			return false
		}
		for _, p := range info.Partitions {
			if len(p.ISR) != isr {
				return false
			}
		}
	}
	return true
}

// A partition without a leader (its only replica's broker killed): a
// request that includes it answers 503 with Retry-After and an error
// naming it, and writes nothing, not even to the partitions that have
// leaders; reads of it answer the same. Auto-creating a topic through a
// node still works and is readable from another.
func TestGatewayRefusesAPartitionWithoutALeader(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "gwnoleader"
	createAssigned(t, nodes, topic, [][]int32{{2}, {3}}, nil)
	nodes[2].Kill()
	harness.WaitFor(t, "node 1 sees partition 1 without a leader", 30*time.Second, func() bool {
		var info topicView
		return getJSONQuiet(nodes[0].URL+"/topics/"+topic, &info) == nil && len(info.Partitions) == 2 && info.Partitions[1].Leader == -1
	})
	both := `{"records":[{"partition":0,"value":"a"},{"partition":1,"value":"b"}]}`
	for _, route := range []struct{ path, contentType string }{
		{"/kafka/" + topic, "application/json"},
		{"/topics/" + topic, "application/vnd.kafka.json.v2+json"},
	} {
		a := httpPost(t, nodes[0].URL+route.path, route.contentType, both)
		var e struct {
			ErrorCode int    `json:"error_code"`
			Message   string `json:"message"`
		}
		json.Unmarshal(a.body, &e)
		if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || e.ErrorCode != 50306 ||
			!strings.Contains(e.Message, topic+"-1") {
			t.Fatalf("POST %s: %d Retry-After %q %s; want 503, Retry-After, 50306 naming %s-1", route.path, a.status, a.header.Get("Retry-After"), a.body, topic)
		}
	}
	if got := readHTTP(t, nodes[0], topic, 0, 0); len(got) != 0 {
		t.Fatalf("a refused request wrote %d records to partition 0", len(got))
	}
	res, err := http.Get(nodes[0].URL + "/kafka/" + topic + "/partitions/1/records")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("read of the leaderless partition: %d %s", res.StatusCode, body)
	}
	if o := produceOK(t, nodes[0].URL+"/kafka/"+topic, "application/json", `{"records":[{"partition":0,"value":"a"}]}`); o[0].Offset != 0 {
		t.Fatalf("the first record of partition 0 at %d", o[0].Offset)
	}

	o := produceOK(t, nodes[0].URL+"/kafka/gwauto", "application/json", `{"created":"on first produce"}`)
	if got := readHTTP(t, nodes[1], "gwauto", o[0].Partition, 1); string(got[0].Value) != `{"created":"on first produce"}` {
		t.Fatalf("auto-created topic read from node 2: %s", got[0].Value)
	}
}

type sseRecord struct {
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
	Value     json.RawMessage `json:"value"`
}

// readSSE reads a stream's events until it ends, sending records on recs
// and the data of error events on errs.
func readSSE(body io.Reader, recs chan<- sseRecord, errs chan<- string) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "record":
			var r sseRecord
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &r) == nil {
				recs <- r
			}
		case strings.HasPrefix(line, "data: ") && event == "error":
			errs <- line
		}
	}
	close(recs)
}

// groupCoordinatedBy finds a group name whose coordinator is broker id.
func groupCoordinatedBy(t *testing.T, adm *kadm.Client, id int32) string {
	t.Helper()
	var name string
	harness.WaitFor(t, fmt.Sprintf("a group coordinated by broker %d", id), 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var names []string
		for i := range 60 {
			names = append(names, fmt.Sprintf("sse-%d", i))
		}
		for g, c := range adm.FindGroupCoordinators(ctx, names...) {
			if c.Err == nil && c.NodeID == id {
				name = g
				return true
			}
		}
		return false
	})
	return name
}

// An SSE stream on broker 1 reads a topic whose two partitions are led by
// broker 2: partition 0 also has a replica on broker 1 (read here, as an
// in-sync follower), partition 1 on broker 3 only (read from its leader).
// Broker 2 is killed between records: the stream goes on, partition 0 now
// led here and partition 1 by broker 3, and delivers every record once,
// in order.
func TestGatewayStreamSurvivesALeaderChange(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "gwsse"
	createAssigned(t, nodes, topic, [][]int32{{2, 1}, {2, 3}}, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	group := groupCoordinatedBy(t, kadm.NewClient(cl), 1)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Until the coordinator has loaded the group's partition the stream
	// answers 503 with Retry-After, as a client is told to retry.
	var res *http.Response
	harness.WaitFor(t, "the stream opens", 30*time.Second, func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, nodes[0].URL+"/kafka/"+topic+
			"/stream?group="+group+"&from=earliest&heartbeat_ms=300&commit_interval_ms=1000&max_duration=180s", nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if r.StatusCode == http.StatusServiceUnavailable && r.Header.Get("Retry-After") != "" {
			r.Body.Close()
			time.Sleep(200 * time.Millisecond)
			return false
		}
		if r.StatusCode != http.StatusOK {
			t.Fatalf("stream: %v", r)
		}
		res = r
		return true
	})
	defer res.Body.Close()
	recs, errs := make(chan sseRecord, 1000), make(chan string, 10)
	go readSSE(res.Body, recs, errs)
	var got []sseRecord
	receive := func(want int) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for len(got) < want {
			select {
			case r, ok := <-recs:
				if !ok {
					t.Fatalf("the stream ended after %d records", len(got))
				}
				got = append(got, r)
			case e := <-errs:
				t.Fatalf("the stream sent an error: %s", e)
			case <-deadline:
				t.Fatalf("%d records streamed, want %d", len(got), want)
			}
		}
	}
	produce := func(node *harness.Node, phase string) {
		for i := range 10 {
			for p := range 2 {
				body := fmt.Sprintf(`{"records":[{"partition":%d,"value":"%s-%d-%d"}]}`, p, phase, p, i)
				for attempt := 0; ; attempt++ { // a 503 during the election says retry: do
					a := httpPost(t, node.URL+"/kafka/"+topic, "application/json", body)
					if a.status == http.StatusOK {
						break
					}
					if a.status != http.StatusServiceUnavailable || attempt == 30 {
						t.Fatalf("produce %s: %d %s", body, a.status, a.body)
					}
					time.Sleep(time.Second) // the answer's Retry-After
				}
			}
		}
	}
	produce(nodes[2], "before")
	receive(20)
	nodes[1].Kill()
	produce(nodes[0], "after")
	receive(40)
	select {
	case r := <-recs:
		t.Fatalf("a record beyond the 40 produced: %+v", r)
	case <-time.After(time.Second):
	}
	for p := range int32(2) {
		var values []string
		for _, r := range got {
			if r.Partition == p {
				if want := int64(len(values)); r.Offset != want {
					t.Fatalf("partition %d: offset %d streamed where %d was next", p, r.Offset, want)
				}
				values = append(values, string(r.Value))
			}
		}
		for i, v := range values {
			phase, n := "before", i
			if i >= 10 {
				phase, n = "after", i-10
			}
			if want := fmt.Sprintf(`"%s-%d-%d"`, phase, p, n); v != want {
				t.Fatalf("partition %d record %d: %s, want %s", p, i, v, want)
			}
		}
	}
	var info topicView
	getJSON(t, nodes[0].URL+"/topics/"+topic, &info)
	t.Logf("40 records streamed once each, in order, across the kill; leaders now %d and %d", info.Partitions[0].Leader, info.Partitions[1].Leader)
}

// A request whose partitions fare differently. Every partition's route is
// checked before anything is written (a leaderless or under-replicated
// partition refuses the whole request), so a request is only partly
// written when a partition fails on the way: here partition 1's only
// replica, broker 3, is frozen while broker 1 appends partition 0's
// records and forwards partition 1's. Both produce routes, at once,
// answer the records written with their offsets and the others as timed
// out (maybe written): POST /kafka/{t} with 503 50303, REST Proxy v2 with
// 200 and its retriable code 2 per record. After the thaw partition 0
// holds exactly the records answered with offsets, and partition 1 at
// most the timed-out ones, none twice.
func TestGatewayAnswersAPartialWrite(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "gwpartial"
	createAssigned(t, nodes, topic, [][]int32{{1}, {3}}, nil)
	nodes[2].Freeze()
	thawed := false
	defer func() {
		if !thawed {
			nodes[2].Thaw()
		}
	}()

	var kafkaAnswer, restAnswer httpAnswer
	var kafkaErr, restErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		kafkaAnswer, kafkaErr = post(nodes[0].URL+"/kafka/"+topic, "application/json",
			`{"records":[{"partition":0,"value":"a"},{"partition":1,"value":"b"},{"partition":0,"value":"c"}]}`)
	}()
	go func() {
		defer wg.Done()
		restAnswer, restErr = post(nodes[0].URL+"/topics/"+topic, "application/vnd.kafka.json.v2+json",
			`{"records":[{"partition":1,"value":"d"},{"partition":0,"value":"e"}]}`)
	}()
	wg.Wait()
	if err := cmp.Or(kafkaErr, restErr); err != nil {
		t.Fatal(err)
	}

	var kafkaRoute struct {
		ErrorCode int              `json:"error_code"`
		Message   string           `json:"message"`
		Offsets   []producedOffset `json:"offsets"`
	}
	a := kafkaAnswer
	if err := json.Unmarshal(a.body, &kafkaRoute); err != nil || a.status != http.StatusServiceUnavailable ||
		a.header.Get("Retry-After") == "" || kafkaRoute.ErrorCode != 50303 || len(kafkaRoute.Offsets) != 3 {
		t.Fatalf("POST /kafka/%s: %d Retry-After %q %s; want 503 50303 with 3 offsets", topic, a.status, a.header.Get("Retry-After"), a.body)
	}
	got := kafkaRoute.Offsets
	if got[0].Partition != 0 || got[0].Offset < 0 || got[0].ErrorCode != nil ||
		got[2].Partition != 0 || got[2].Offset != got[0].Offset+1 || got[2].ErrorCode != nil ||
		got[1].Partition != 1 || got[1].Offset != -1 || got[1].ErrorCode == nil || *got[1].ErrorCode != 50303 ||
		!strings.Contains(got[1].Error, "may have been written") {
		t.Fatalf("POST /kafka/%s: %s; want two consecutive offsets of partition 0 and a timed-out record of partition 1", topic, a.body)
	}
	written := map[int64]string{got[0].Offset: `"a"`, got[2].Offset: `"c"`}

	a = restAnswer
	var restRoute struct{ Offsets []producedOffset }
	if err := json.Unmarshal(a.body, &restRoute); err != nil || a.status != http.StatusOK || len(restRoute.Offsets) != 2 {
		t.Fatalf("POST /topics/%s: %d %s; want 200 with 2 offsets", topic, a.status, a.body)
	}
	got = restRoute.Offsets
	if got[0].Offset != -1 || got[0].ErrorCode == nil || *got[0].ErrorCode != 2 || got[0].Error == "" ||
		got[1].Partition != 0 || got[1].Offset < 0 || got[1].ErrorCode != nil {
		t.Fatalf("POST /topics/%s: %s; want -1 with REST Proxy's retriable code 2, then an offset of partition 0", topic, a.body)
	}
	written[got[1].Offset] = `"e"`

	for _, r := range readHTTP(t, nodes[1], topic, 0, 3) {
		if written[r.Offset] != string(r.Value) {
			t.Fatalf("partition 0 holds %s at %d; the answers gave %v", r.Value, r.Offset, written)
		}
	}
	nodes[2].Thaw()
	thawed = true
	harness.WaitFor(t, "broker 3 serving again", 30*time.Second, func() bool {
		var info topicView
		return getJSONQuiet(nodes[2].URL+"/topics/"+topic, &info) == nil && len(info.Partitions) == 2 && info.Partitions[1].Leader == 3
	})
	var info topicView
	if err := getJSONQuiet(nodes[2].URL+"/topics/"+topic, &info); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range readHTTP(t, nodes[2], topic, 1, int(info.Partitions[1].HighWatermark)) {
		v := string(r.Value)
		if v != `"b"` && v != `"d"` || seen[v] {
			t.Fatalf("partition 1 holds %s at %d (after %v): only the timed-out records, once each, may be there", v, r.Offset, seen)
		}
		seen[v] = true
	}
	t.Logf("partition 1 holds %d of the 2 timed-out records after the thaw", len(seen))
}
