package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
)

// zks is this binary's ZooKeeper, started by the first test that needs one.
var zks zkserver.Shared

func TestMain(m *testing.M) { os.Exit(zks.Main(m)) }

// The admin page on a three-broker cluster shows the cluster, not the node
// it is served by: a broker that does not lead a partition shows its
// leader and three in-sync replicas, the brokers panel lists the three
// with the controller marked; when a follower is frozen and falls out of
// the ISR, the leader's page highlights the partition as under-replicated
// and marks the replica out of sync.
func TestUIClusterViews(t *testing.T) {
	b := newBrowser(t)
	nodes := startUICluster(t)
	status, body := restCall(t, http.MethodPost, nodes[0].URL+"/topics", "application/json", "",
		`{"name":"ui-rf3","partitions":1,"replication_factor":3}`)
	if status != http.StatusCreated {
		t.Fatalf("create ui-rf3: %d %s", status, body)
	}
	var leader, controller int32
	harness.WaitFor(t, "ui-rf3 has a leader, an ISR of 3 and a controller", 30*time.Second, func() bool {
		p, ok := uiPartition(nodes[0], "ui-rf3")
		var c struct {
			ControllerID int32 `json:"controller_id"`
		}
		if !ok || p.Leader < 1 || len(p.ISR) != 3 || getQuiet(nodes[0].URL+"/cluster", &c) != nil || c.ControllerID < 1 {
			return false
		}
		leader, controller = p.Leader, c.ControllerID
		return true
	})
	// The frozen follower is not the controller, so the shrink is written
	// and spread; the page is served by the other broker that does not lead.
	var frozen, page int32
	for id := int32(1); id <= 3; id++ {
		switch {
		case id != leader && id != controller && frozen == 0:
			frozen = id
		case id != leader:
			page = id
		}
	}
	pageNode, leaderNode := nodes[page-1], nodes[leader-1]
	harness.WaitFor(t, "the page's broker describes ui-rf3 with an ISR of 3", 20*time.Second, func() bool {
		p, ok := uiPartition(pageNode, "ui-rf3")
		return ok && p.Leader == leader && len(p.ISR) == 3
	})

	b.run("open ui-rf3 on a broker that does not lead it",
		chromedp.Navigate(pageNode.URL+"/ui/#/topics/ui-rf3"),
		chromedp.WaitVisible(chromedp.CSS(`table.partitions tr[data-partition="0"]`)))
	row := `table.partitions tr[data-partition="0"]`
	if got := eval[string](b, "read the leader cell", `document.querySelector('`+row+` td:nth-child(2)').textContent`); got != strconv.Itoa(int(leader)) {
		t.Fatalf("the page shows leader %q, want %d", got, leader)
	}
	if n := eval[int](b, "count the in-sync chips", `document.querySelectorAll('`+row+` .chip:not(.oos)').length`); n != 3 {
		t.Fatalf("%d in-sync replica chips, want 3", n)
	}
	b.screenshot("cluster-topic")

	b.run("open the overview", chromedp.Navigate(pageNode.URL+"/ui/#/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-broker="3"]`)))
	b.waitText(fmt.Sprintf(`tr[data-broker="%d"]`, controller), "controller")
	if n := eval[int](b, "count the controller badges", `[...document.querySelectorAll('tr[data-broker]')].filter((r) => r.textContent.includes('controller')).length`); n != 1 {
		t.Fatalf("%d brokers marked controller, want 1", n)
	}
	b.waitText("#overview-stats", "Brokers3")
	b.screenshot("cluster-overview")

	nodes[frozen-1].Freeze()
	defer nodes[frozen-1].Thaw()
	// An HTTP produce is acks=all: answered once the leader dropped the frozen follower.
	if status, body := restCall(t, http.MethodPost, leaderNode.URL+"/kafka/ui-rf3", "application/json", "", `{"n":1}`); status != http.StatusOK {
		t.Fatalf("produce while a follower is frozen: %d %s", status, body)
	}
	harness.WaitFor(t, "the leader describes ui-rf3 under-replicated", 30*time.Second, func() bool {
		p, ok := uiPartition(leaderNode, "ui-rf3")
		if ok && p.UnderReplicated && len(p.ISR) == 2 {
			return true
		}
		// The follower may have fetched the first record before it stopped:
		// records written after the freeze leave it behind.
		restCall(t, http.MethodPost, leaderNode.URL+"/kafka/ui-rf3", "application/json", "", `{"n":2}`)
		return false
	})
	b.run("open ui-rf3 on its leader",
		chromedp.Navigate(leaderNode.URL+"/ui/#/topics/ui-rf3"),
		chromedp.WaitVisible(chromedp.CSS(row+".warn-row")))
	b.waitText(row, "under-replicated")
	b.waitText(row+" .chip.oos", strconv.Itoa(int(frozen)))
	b.screenshot("cluster-under-replicated")
	b.run("open the leader's overview", chromedp.Navigate(leaderNode.URL+"/ui/#/"), chromedp.WaitVisible(chromedp.CSS("#overview-stats .stat.warn")))
	b.waitText("#overview-stats .stat.warn", "Under-replicated partitions1")
}

// startUICluster starts three brokers (ids 1..3) on a fresh chroot of the
// shared ZooKeeper, with replica.lag.time.max.ms short enough for a
// frozen follower to leave the ISR well within its session timeout.
func startUICluster(t *testing.T) []*harness.Node {
	t.Helper()
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("replica.lag.time.max.ms=1500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	connect := zks.Require(t).Addr() + "/" + t.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	nodes := make([]*harness.Node, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i] = harness.Start(t, "--broker-id", strconv.Itoa(i+1), "--zookeeper", connect,
				"--zookeeper-session-timeout-ms", "20000", "--config", props)
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		if n == nil {
			t.FailNow() // a broker did not start; harness logged why
		}
	}
	return nodes
}

type uiPartitionState struct {
	Leader          int32   `json:"leader"`
	ISR             []int32 `json:"isr"`
	UnderReplicated bool    `json:"under_replicated"`
}

// uiPartition is partition 0 of topic as n's GET /topics/{t} describes it.
func uiPartition(n *harness.Node, topic string) (uiPartitionState, bool) {
	var info struct {
		Partitions []uiPartitionState `json:"partitions"`
	}
	if getQuiet(n.URL+"/topics/"+topic, &info) != nil || len(info.Partitions) == 0 {
		return uiPartitionState{}, false
	}
	return info.Partitions[0], true
}

func getQuiet(url string, v any) error {
	res, err := http.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	return json.NewDecoder(res.Body).Decode(v)
}
