package cluster_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// The message browser on a cluster (issue 28): every node searches every
// partition, those it holds no replica of through their leaders; a cursor
// made by one node resumes on another with neither gaps nor duplicates;
// republish on a node leading neither topic's partitions writes through
// the leaders.
func TestSearchAndRepublishOnEveryNode(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "browse"
	createAssigned(t, nodes, topic, [][]int32{{1, 2}, {2, 3}, {3, 1}}, nil)
	createAssigned(t, nodes, "browse-copy", [][]int32{{1, 2}}, nil)
	var recs []string
	for i := range 30 {
		recs = append(recs, fmt.Sprintf(`{"key":"k%d","partition":%d,"value":{"n":%d,"even":%v},"headers":{"i":"%d"}}`, i, i%3, i, i%2 == 0, i))
	}
	produceOK(t, nodes[0].URL+"/kafka/"+topic, "application/json", `{"records":[`+strings.Join(recs, ",")+`]}`)
	// A follower reads up to its own high watermark, at most a fetch
	// behind the leader's; a search starting there would not see the
	// newest records yet (its cursor keeps the range it started with).
	harness.WaitFor(t, "every node reads every partition to offset 10", 30*time.Second, func() bool {
		for _, n := range nodes {
			for p := range 3 {
				var o struct{ Offset int64 }
				if getJSONQuiet(fmt.Sprintf("%s/kafka/%s/partitions/%d/offsets?timestamp=latest", n.URL, topic, p), &o) != nil || o.Offset != 10 {
					return false
				}
			}
		}
		return true
	})

	type answer struct {
		Records []struct {
			Partition int32           `json:"partition"`
			Offset    int64           `json:"offset"`
			Key       string          `json:"key"`
			Value     json.RawMessage `json:"value"`
		} `json:"records"`
		Cursor   string `json:"cursor"`
		Progress struct {
			Done           bool  `json:"done"`
			ScannedRecords int64 `json:"scanned_records"`
		} `json:"progress"`
	}
	for _, order := range []string{"newest", "oldest"} {
		q := url.Values{"json": {"$.even == true"}, "order": {order}, "max_scan_records": {"4"}}
		seen := map[string]int{}
		for page := 0; ; page++ {
			n := nodes[page%len(nodes)] // each page from another node
			res, err := http.Get(n.URL + "/kafka/" + topic + "/search?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var ans answer
			if res.StatusCode != http.StatusOK || json.Unmarshal(body, &ans) != nil {
				t.Fatalf("search on %s: %d %s", n.URL, res.StatusCode, body)
			}
			if ans.Progress.ScannedRecords > 4 {
				t.Fatalf("scanned %d over a budget of 4", ans.Progress.ScannedRecords)
			}
			for _, r := range ans.Records {
				seen[r.Key]++
			}
			if ans.Progress.Done {
				break
			}
			if page > 20 {
				t.Fatal("no end")
			}
			q.Set("cursor", ans.Cursor)
		}
		for i := range 30 {
			if want := 1 - i%2; seen[fmt.Sprintf("k%d", i)] != want {
				t.Fatalf("%s: record %d seen %d times, want %d (%v)", order, i, seen[fmt.Sprintf("k%d", i)], want, seen)
			}
		}
	}

	// Node 3 leads partition 2 of browse, not browse-copy's only partition:
	// it reads partition 0 (led by 1) and writes through broker 1.
	a := httpPost(t, nodes[2].URL+"/kafka/"+topic+"/republish", "application/json",
		`{"target":"browse-copy","records":[{"partition":0,"offset":3},{"partition":2,"offset":0}]}`)
	if a.status != http.StatusOK {
		t.Fatalf("republish: %d %s", a.status, a.body)
	}
	harness.WaitFor(t, "node 2 reads browse-copy to offset 2", 30*time.Second, func() bool {
		var o struct{ Offset int64 }
		return getJSONQuiet(nodes[1].URL+"/kafka/browse-copy/partitions/0/offsets?timestamp=latest", &o) == nil && o.Offset == 2
	})
	res, err := http.Get(nodes[1].URL + "/kafka/browse-copy/search?order=oldest")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var copied answer
	if err := json.NewDecoder(res.Body).Decode(&copied); err != nil {
		t.Fatal(err)
	}
	if len(copied.Records) != 2 || copied.Records[0].Key != "k9" || copied.Records[1].Key != "k2" {
		t.Fatalf("browse-copy holds %+v", copied.Records)
	}
}
