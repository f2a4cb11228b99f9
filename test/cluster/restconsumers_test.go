package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

type restRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`
}

func rest(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.kafka.v2+json")
	req.Header.Set("Accept", "application/vnd.kafka.json.v2+json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

func mustREST(t *testing.T, want int, method, url, body string) []byte {
	t.Helper()
	status, data := rest(t, method, url, body)
	if status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, status, data, want)
	}
	return data
}

// pollUntil reads an instance's records through node until it has n more.
func pollUntil(t *testing.T, node *harness.Node, path string, n int) []restRecord {
	t.Helper()
	var got []restRecord
	for deadline := time.Now().Add(45 * time.Second); len(got) < n && time.Now().Before(deadline); {
		status, data := rest(t, "GET", node.URL+path+"/records?timeout=1000&max_bytes=2000", "")
		if status != 200 {
			t.Logf("records through %s: %d %s", node.URL, status, data)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		var batch []restRecord
		if err := json.Unmarshal(data, &batch); err != nil {
			t.Fatal(err)
		}
		got = append(got, batch...)
	}
	if len(got) < n {
		t.Fatalf("read %d records through %s, want %d", len(got), node.URL, n)
	}
	return got
}

// A REST consumer instance is not bound to a node: created through broker
// 1 (its group's coordinator), it is subscribed, polled and committed
// through broker 2; broker 1 is killed, and the instance goes on through
// broker 3 from the committed offset, with the next coordinator, each
// record once.
func TestRESTConsumerInstanceOutlivesItsNode(t *testing.T) {
	nodes := startCluster(t, 3)
	adm := clusterAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "rest-any"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.DefaultProduceTopic("rest-any"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const total = 120
	for i := 0; i < total; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf(`"v%03d"`, i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A group broker 1 coordinates.
	var groupID string
	for i := 0; i < 200 && groupID == ""; i++ {
		name := fmt.Sprintf("rest-any-%d", i)
		if coordinatorOf(ctx, t, adm, name) == 1 {
			groupID = name
		}
	}
	if groupID == "" {
		t.Fatal("no group name among 200 is coordinated by broker 1")
	}
	path := "/consumers/" + groupID + "/instances/c1"
	// Until the coordinator has loaded the group's partition it answers
	// 503 (50305), as a client is told to retry.
	var created []byte
	harness.WaitFor(t, "the instance is created", 30*time.Second, func() bool {
		status, data := rest(t, "POST", nodes[0].URL+"/consumers/"+groupID,
			`{"name":"c1","format":"json","auto.offset.reset":"earliest","auto.commit.enable":"false"}`)
		if status != 200 && (status != 503 || !strings.Contains(string(data), "50305")) {
			t.Fatalf("create: %d %s", status, data)
		}
		created = data
		return status == 200
	})
	if !strings.Contains(string(created), nodes[0].URL+path) {
		t.Fatalf("created: %s; want the base_uri on the node asked", created)
	}
	mustREST(t, 204, "POST", nodes[1].URL+path+"/subscription", `{"topics":["rest-any"]}`)
	first := pollUntil(t, nodes[1], path, 50)
	last := first[len(first)-1]
	mustREST(t, 200, "POST", nodes[1].URL+path+"/offsets",
		fmt.Sprintf(`{"offsets":[{"topic":"rest-any","partition":%d,"offset":%d}]}`, last.Partition, last.Offset))

	// Any node lists the cluster's groups and describes this one (its
	// coordinator answers).
	var listed struct {
		Groups []struct {
			Group   string `json:"group"`
			Members int    `json:"members"`
		} `json:"groups"`
		Unreachable []int32 `json:"unreachable_brokers"`
	}
	if err := json.Unmarshal(mustREST(t, 200, "GET", nodes[2].URL+"/groups", ""), &listed); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range listed.Groups {
		found = found || g.Group == groupID && g.Members == 1
	}
	if !found || len(listed.Unreachable) != 0 {
		t.Fatalf("GET /groups on broker 3: %+v; want %s with its member", listed, groupID)
	}
	if d := mustREST(t, 200, "GET", nodes[2].URL+"/groups/"+groupID, ""); !strings.Contains(string(d), "rest-any") {
		t.Fatalf("GET /groups/%s on broker 3: %s", groupID, d)
	}
	// A request one node already handed on is not handed on again: the
	// node answers it, 503 naming the coordinator.
	req, _ := http.NewRequest("GET", nodes[1].URL+path+"/subscription", nil)
	req.Header.Set("X-Ferry-Forwarded-By", "3")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 503 || !strings.Contains(string(body), `"error_code":50305`) || !strings.Contains(string(body), "broker 1") {
		t.Fatalf("a handed-on request for another node's group: %d %s", res.StatusCode, body)
	}

	nodes[0].Kill()
	survivors := kadm.NewClient(liveClient(t, nodes[1:]))
	harness.WaitFor(t, "another broker coordinates the group", 60*time.Second, func() bool {
		return coordinatorOf(ctx, t, survivors, groupID) > 1
	})
	rest := pollUntil(t, nodes[2], path, total-int(last.Offset)-1)
	if rest[0].Offset != last.Offset+1 {
		t.Fatalf("after the failover the instance read from offset %d; it had committed %d", rest[0].Offset, last.Offset)
	}
	for i, r := range rest {
		if want := last.Offset + 1 + int64(i); r.Offset != want || r.Value != fmt.Sprintf("v%03d", want) {
			t.Fatalf("record %d after the failover: offset %d value %q, want offset %d", i, r.Offset, r.Value, want)
		}
	}
	// Still one instance, served through either survivor.
	mustREST(t, 200, "GET", nodes[1].URL+path+"/subscription", "")
	mustREST(t, 204, "DELETE", nodes[2].URL+path, "")
	mustREST(t, 404, "GET", nodes[1].URL+path+"/subscription", "")
}

func liveClient(t *testing.T, nodes []*harness.Node) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// A group's coordinator that stops answering — frozen, so its kernel
// still accepts connections — does not hold the requests another node
// hands it: through broker 2, a request to the instance answers 503 50305
// with Retry-After once the relay's bound is up, and GET /groups answers
// the other brokers' groups with broker 1 under unreachable_brokers.
// Both are asked at once, right after the freeze, before ZooKeeper would
// expire broker 1's session and move its groups.
func TestRESTGroupRequestsWhileTheCoordinatorIsFrozen(t *testing.T) {
	nodes := startCluster(t, 3)
	adm := clusterAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var groupID string
	for i := 0; i < 200 && groupID == ""; i++ {
		if name := fmt.Sprintf("rest-frozen-%d", i); coordinatorOf(ctx, t, adm, name) == 1 {
			groupID = name
		}
	}
	if groupID == "" {
		t.Fatal("no group name among 200 is coordinated by broker 1")
	}
	harness.WaitFor(t, "the instance is created", 30*time.Second, func() bool {
		status, data := rest(t, "POST", nodes[1].URL+"/consumers/"+groupID, `{"name":"c1","format":"json"}`)
		if status != 200 && (status != 503 || !strings.Contains(string(data), "50305")) {
			t.Fatalf("create: %d %s", status, data)
		}
		return status == 200
	})

	t.Logf("group %s, coordinated by broker 1", groupID)
	nodes[0].Freeze()
	defer nodes[0].Thaw()
	type answer struct {
		status     int
		retryAfter string
		body       []byte
		took       time.Duration
		err        error
	}
	get := func(url string) answer {
		start := time.Now()
		res, err := http.Get(url)
		if err != nil {
			return answer{err: err}
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return answer{res.StatusCode, res.Header.Get("Retry-After"), body, time.Since(start), nil}
	}
	var relayed, listed answer
	var wg sync.WaitGroup
	wg.Go(func() { relayed = get(nodes[1].URL + "/consumers/" + groupID + "/instances/c1/subscription") })
	wg.Go(func() { listed = get(nodes[1].URL + "/groups") })
	wg.Wait()

	if relayed.err != nil || relayed.status != http.StatusServiceUnavailable || relayed.retryAfter == "" ||
		!strings.Contains(string(relayed.body), "50305") || !strings.Contains(string(relayed.body), "broker 1") {
		t.Fatalf("relayed to the frozen coordinator: %d Retry-After %q %s (%v) after %v; want 503 50305 naming broker 1",
			relayed.status, relayed.retryAfter, relayed.body, relayed.err, relayed.took)
	}
	var groups struct {
		UnreachableBrokers []int32 `json:"unreachable_brokers"`
	}
	if listed.err != nil || listed.status != http.StatusOK || json.Unmarshal(listed.body, &groups) != nil ||
		!slices.Equal(groups.UnreachableBrokers, []int32{1}) {
		t.Fatalf("GET /groups with broker 1 frozen: %d %s (%v); want 200 naming broker 1 unreachable", listed.status, listed.body, listed.err)
	}
	t.Logf("relay answered 503 after %v, GET /groups after %v", relayed.took.Round(time.Millisecond), listed.took.Round(time.Millisecond))
}
