package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
)

// The admin page's cluster view and move flow on a three-broker cluster:
// what the page counts per broker is what the API describes, the plan it
// shows is the one it executes, and after the move the topic's replicas
// are the proposed ones with every record still there.
func TestUIMovePartitions(t *testing.T) {
	b := newBrowser(t)
	nodes := startUICluster(t)
	const topic, perPartition = "ui-move", 300
	createSyncedTopic(t, nodes[0], topic, 3, 2)
	for p := int32(0); p < 3; p++ {
		produceAtLeader(t, nodes, topic, p, perPartition, 64)
	}
	page := nodes[0]

	// The brokers table and the chart count what GET /topics/{t} says, over
	// every topic the page's broker knows.
	b.run("open the cluster view",
		chromedp.Navigate(page.URL+"/ui/#/cluster"),
		chromedp.WaitVisible(chromedp.CSS(`#broker-chart .chart-row[data-broker="3"]`)))
	var want map[int32][2]int
	harness.WaitFor(t, "the page counts the partitions and leaders the API describes", uiTimeout, func() bool {
		want = brokerCounts(t, page)
		for id := int32(1); id <= 3; id++ {
			got := eval[[]string](b, "read broker "+strconv.Itoa(int(id)), fmt.Sprintf(`[
				'#view table.brokers tr[data-broker="%[1]d"] [data-count="replicas"]',
				'#view table.brokers tr[data-broker="%[1]d"] [data-count="leaders"]',
				'#broker-chart .chart-row[data-broker="%[1]d"] [data-count="replicas"]',
				'#broker-chart .chart-row[data-broker="%[1]d"] [data-count="leaders"]',
			].map((s) => document.querySelector(s)?.textContent ?? '')`, id))
			w := []string{strconv.Itoa(want[id][0]), strconv.Itoa(want[id][1])}
			if !slices.Equal(got, append(w, w...)) {
				t.Logf("broker %d: page %v, API %v", id, got, w)
				return false
			}
		}
		return true
	})
	if total := want[1][0] + want[2][0] + want[3][0]; total != 6 {
		t.Fatalf("the brokers hold %d replicas of %s, want 6 (3 partitions × 2)", total, topic)
	}
	label := eval[string](b, "read the chart's label", `document.querySelector('#broker-chart .chart-row[data-broker="1"]').getAttribute('aria-label')`)
	if !strings.Contains(label, fmt.Sprintf("Broker 1: %d partition", want[1][0])) || !strings.Contains(label, fmt.Sprintf("%d leader", want[1][1])) {
		t.Fatalf("the chart's row for broker 1 is labelled %q, want its counts %v", label, want[1])
	}
	b.waitText(`#view table.brokers tbody`, "controller")
	b.waitText(`#view table.troubled`, "None: every partition has a leader")
	b.screenshot("cluster-view")

	// Move the topic off the broker holding most of it: at least one
	// partition changes.
	before := topicPartitions(t, page, topic)
	var dropped int32 = 1
	for id := int32(2); id <= 3; id++ {
		if want[id][0] > want[dropped][0] {
			dropped = id
		}
	}
	var targets []int32
	for id := int32(1); id <= 3; id++ {
		if id != dropped {
			targets = append(targets, id)
		}
	}
	b.run("open the move flow and propose with nothing picked",
		chromedp.Click(chromedp.CSS("#move-partitions")),
		chromedp.WaitVisible(chromedp.CSS("#move-propose")),
		chromedp.Click(chromedp.CSS("#move-propose")))
	b.waitText("form .error", "Pick at least one topic. Pick at least one target broker.")
	b.run("pick the topic and the brokers",
		chromedp.Click(chromedp.CSS(`input[name="move-topic"][value="`+topic+`"]`)),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="move-broker"][value="%d"]`, targets[0]))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="move-broker"][value="%d"]`, targets[1]))),
		chromedp.Click(chromedp.CSS("#move-propose")),
		chromedp.WaitVisible(chromedp.CSS(`table.plan tr[data-partition="2"]`)))
	plan := readPlan(b)
	if len(plan) != 3 {
		t.Fatalf("the plan shows %d partitions, want 3: %+v", len(plan), plan)
	}
	changed := 0
	for _, p := range before {
		row := plan[p.Partition]
		if !slices.Equal(row.current, p.Replicas) {
			t.Fatalf("partition %d: the plan's current replicas %v, the API's %v", p.Partition, row.current, p.Replicas)
		}
		if len(row.proposed) != 2 || slices.Contains(row.proposed, dropped) {
			t.Fatalf("partition %d: proposed %v, want 2 replicas on %v", p.Partition, row.proposed, targets)
		}
		// A partition that keeps its brokers may still get a new order
		// (a new preferred leader): highlighted, but not a move.
		moves := slices.Contains(p.Replicas, dropped)
		wantChange := "move"
		if !moves {
			wantChange = "same"
			if !slices.Equal(row.current, row.proposed) {
				wantChange = "reorder"
			}
		}
		if row.change != wantChange || row.highlighted != (wantChange != "same") {
			t.Fatalf("partition %d: %v → %v shown as %q (highlighted %v), want %q", p.Partition, row.current, row.proposed, row.change, row.highlighted, wantChange)
		}
		if moves {
			changed++
		}
	}
	if changed == 0 {
		t.Fatalf("no partition of %v holds broker %d", before, dropped)
	}
	reordered := 0
	for _, row := range plan {
		if row.change == "reorder" {
			reordered++
		}
	}
	b.waitText("#plan-summary", fmt.Sprintf("%d of 3 partitions change", changed+reordered))
	b.screenshot("move-plan")

	b.run("execute the plan", chromedp.Click(chromedp.CSS("#move-execute")), chromedp.WaitVisible(chromedp.CSS("#move-started table.outcomes")))
	if n := eval[int](b, "count the started moves", `document.querySelectorAll('#move-started tr[data-code="0"]').length`); n != 3 {
		t.Fatalf("%d moves started, want 3:\n%s", n, eval[string](b, "read the results", `document.querySelector('#move-started').textContent`))
	}
	b.run("scroll to the results", chromedp.ScrollIntoView(chromedp.CSS("#move-started")))
	b.screenshot("move-progress")
	b.waitText("#moves-done", "Done")
	b.run("scroll to the verdict", chromedp.ScrollIntoView(chromedp.CSS("#move-progress")))
	b.screenshot("move-done")

	harness.WaitFor(t, "the topic's replicas are the proposed ones, all in sync", uiTimeout, func() bool {
		for _, p := range topicPartitions(t, page, topic) {
			if !slices.Equal(p.Replicas, plan[p.Partition].proposed) || len(p.ISR) != 2 || !slices.Contains(p.Replicas, p.Leader) {
				return false
			}
		}
		return true
	})
	var moving struct {
		Reassignments []json.RawMessage `json:"reassignments"`
	}
	if uiGetJSON(t, page.URL+"/admin/reassignments", &moving); len(moving.Reassignments) != 0 {
		t.Fatalf("moves still listed after Done: %s", moving.Reassignments)
	}
	for p := int32(0); p < 3; p++ {
		if n := countAtLeader(t, nodes, topic, p); n != perPartition {
			t.Fatalf("partition %d has %d records after the move, want %d", p, n, perPartition)
		}
	}

	// The election over every partition: each is elected or not needed.
	b.run("run a preferred leader election",
		chromedp.Navigate(page.URL+"/ui/#/cluster"),
		// The view is drawn when the chart is: until then the page still
		// grows and the button may move under the click.
		chromedp.WaitVisible(chromedp.CSS("#broker-chart")),
		chromedp.Click(chromedp.CSS("#elect-preferred")),
		chromedp.WaitVisible(chromedp.CSS("dialog[open] button[type=submit]")))
	b.screenshot("election-confirm")
	b.run("confirm the election",
		chromedp.Click(chromedp.CSS("dialog[open] button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#election-summary")))
	b.waitText("#election-summary", "0 failed.")
	summary := eval[string](b, "read the election summary", `document.querySelector('#election-summary').textContent`)
	var elected, notNeeded int
	if _, err := fmt.Sscanf(summary[strings.Index(summary, ": ")+2:], "%d partition", &elected); err != nil {
		t.Fatalf("summary %q: %v", summary, err)
	}
	if i := strings.Index(summary, " not needed"); i < 0 {
		t.Fatalf("summary %q says nothing of elections not needed", summary)
	} else {
		fields := strings.Fields(summary[:i])
		notNeeded, _ = strconv.Atoi(fields[len(fields)-1])
	}
	if elected+notNeeded != 3 {
		t.Fatalf("election summary %q: %d elected + %d not needed, want the 3 partitions", summary, elected, notNeeded)
	}
	b.screenshot("election-result")
	for _, p := range topicPartitions(t, page, topic) {
		if p.Leader != p.Replicas[0] {
			t.Fatalf("after the election partition %d is led by %d, not its preferred replica %d", p.Partition, p.Leader, p.Replicas[0])
		}
	}
}

// A move started from the page with a throttle copies at it, and the
// page shows its progress in bytes and the rate; cancelling from the page
// returns it to its original replicas, keeps every record, and the page
// removes the throttle once no move is left.
func TestUIMovePartitionsCancel(t *testing.T) {
	b := newBrowser(t)
	nodes := startUICluster(t)
	const topic, records = "ui-cancel", 1000
	createSyncedTopic(t, nodes[0], topic, 1, 1)
	produceAtLeader(t, nodes, topic, 0, records, 8<<10) // about 8 MB: 16 s at the page's throttle
	var controller int32
	harness.WaitFor(t, "a controller", uiTimeout, func() bool {
		var c struct {
			ControllerID int32 `json:"controller_id"`
		}
		if getQuiet(nodes[0].URL+"/cluster", &c) != nil {
			return false
		}
		controller = c.ControllerID
		return controller > 0
	})
	original := topicPartitions(t, nodes[0], topic)[0].Replicas
	// The target is neither the replica's broker nor the controller (which
	// answers the page's calls), and the page is served by another broker.
	var target, page int32
	for id := int32(1); id <= 3; id++ {
		if id != original[0] && id != controller && target == 0 {
			target = id
		}
	}
	for id := int32(1); id <= 3; id++ {
		if id != target && page == 0 {
			page = id
		}
	}
	pageNode := nodes[page-1]

	b.run("propose moving the topic to the target broker, throttled to 0.5 MiB/s",
		chromedp.Navigate(pageNode.URL+"/ui/#/cluster/move"),
		chromedp.WaitVisible(chromedp.CSS("#move-propose")),
		chromedp.SendKeys(chromedp.CSS("#move-throttle"), "0.5"),
		chromedp.Click(chromedp.CSS(`input[name="move-topic"][value="`+topic+`"]`)),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="move-broker"][value="%d"]`, target))),
		chromedp.Click(chromedp.CSS("#move-propose")),
		chromedp.WaitVisible(chromedp.CSS(`table.plan tr[data-partition="0"]`)))
	if got := readPlan(b)[0]; !slices.Equal(got.proposed, []int32{target}) || !slices.Equal(got.current, original) {
		t.Fatalf("plan %+v, want %v → [%d]", got, original, target)
	}

	b.run("execute and wait for the move to be listed",
		chromedp.Click(chromedp.CSS("#move-execute")),
		chromedp.WaitVisible(chromedp.CSS(`#move-progress table.moving tr[data-topic="`+topic+`"]`)))
	// The throttle holds the copy to 0.5 MiB/s: the page shows the bytes
	// copied of the leader's, per partition and in total, and the rate.
	b.waitText("#move-progress table.moving", "iB of")
	b.waitText("#move-total", "throttled to 512")
	var moving struct {
		Reassignments []struct {
			Progress *struct {
				Copied int64 `json:"bytes_copied"`
				ToCopy int64 `json:"bytes_to_copy"`
			} `json:"progress"`
		} `json:"reassignments"`
		Throttle int64 `json:"throttle_bytes_per_sec"`
	}
	if err := getQuiet(pageNode.URL+"/admin/reassignments", &moving); err != nil || len(moving.Reassignments) != 1 ||
		moving.Reassignments[0].Progress == nil || moving.Reassignments[0].Progress.Copied >= moving.Reassignments[0].Progress.ToCopy ||
		moving.Throttle != 512<<10 {
		t.Fatalf("GET /admin/reassignments while the page shows the move: %+v %v", moving, err)
	}
	b.run("scroll to the moves", chromedp.ScrollIntoView(chromedp.CSS("#move-progress")))
	b.screenshot("cancel-moving")
	b.run("cancel the moves",
		chromedp.Click(chromedp.CSS("#cancel-moves")),
		chromedp.WaitVisible(chromedp.CSS("dialog[open] button.danger")))
	if focus := eval[string](b, "read the focus", `document.activeElement.textContent`); focus != "Keep moving" {
		t.Fatalf("the cancel confirmation opens with the focus on %q, want Keep moving", focus)
	}
	b.run("confirm the cancel",
		chromedp.Click(chromedp.CSS("dialog[open] button.danger")),
		chromedp.WaitVisible(chromedp.CSS("#cancel-result table.outcomes")))
	if code := eval[string](b, "read the cancel's result", `document.querySelector('#cancel-result tr[data-topic="`+topic+`"]')?.dataset.code ?? 'none'`); code != "0" {
		t.Fatalf("the cancel answered error_code %s for %s-0, want 0:\n%s", code, topic,
			eval[string](b, "read the cancel result", `document.querySelector('#cancel-result').textContent`))
	}
	b.waitText("#cancel-result", "1 move cancelled")
	b.waitText("#moves-done", "the moves were cancelled")
	b.run("scroll to the verdict", chromedp.ScrollIntoView(chromedp.CSS("#move-progress")))
	b.screenshot("cancel-done")

	harness.WaitFor(t, "the topic is back on its original replica with no move listed", uiTimeout, func() bool {
		var moving struct {
			Reassignments []json.RawMessage `json:"reassignments"`
		}
		p := topicPartitions(t, pageNode, topic)[0]
		return getQuiet(pageNode.URL+"/admin/reassignments", &moving) == nil && len(moving.Reassignments) == 0 &&
			slices.Equal(p.Replicas, original) && p.Leader == original[0]
	})
	if n := countAtLeader(t, nodes, topic, 0); n != records {
		t.Fatalf("%d records after the cancel, want %d", n, records)
	}
	// The page removed the throttle it had set once no move was left.
	harness.WaitFor(t, "the throttle is removed", uiTimeout, func() bool {
		var left struct {
			Throttle int64 `json:"throttle_bytes_per_sec"`
		}
		return getQuiet(pageNode.URL+"/admin/reassignments", &left) == nil && left.Throttle == 0
	})
}

// TestUIClusterModules runs the cluster and move pages' pure functions in the browser.
func TestUIClusterModules(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)
	b.run("open the page", chromedp.Navigate(node.URL+"/ui/#/cluster"), chromedp.WaitVisible(chromedp.CSS("#broker-chart")))
	const topics = `[{name: 'a', partitions: [
		{partition: 0, leader: 1, replicas: [1, 2], isr: [1, 2]},
		{partition: 1, leader: 1, replicas: [2, 1], isr: [1]},
		{partition: 2, leader: -1, replicas: [4], isr: []}]},
		{name: 'gone', error: new Error('x')}]`
	cases := []struct{ expr, want string }{
		{`JSON.stringify((await import('./js/cluster.js')).brokerLoad(
			[{broker_id: 2, host: 'h2', port: 9, controller: false}, {broker_id: 1, host: 'h1', port: 9, rack: 'r1'}], 1, ` + topics + `)
			.map((b) => [b.id, b.live, b.controller, b.replicas, b.leaders, b.preferred, b.rack]))`,
			`[[1,true,true,2,2,1,"r1"],[2,true,false,2,0,1,""],[4,false,false,1,0,1,""]]`},
		{`JSON.stringify((await import('./js/cluster.js')).leaderSpread([{id: 1, live: true, replicas: 2, leaders: 2}, {id: 2, live: true, replicas: 2, leaders: 0},
			{id: 3, live: true, replicas: 0, leaders: 0}, {id: 4, live: false, replicas: 1, leaders: 0}], ` + topics + `))`,
			`{"min":0,"minBroker":2,"max":2,"maxBroker":1,"imbalanced":true,"notPreferred":1}`},
		{`(await import('./js/cluster.js')).leaderSpread([{id: 1, live: true, replicas: 2, leaders: 1}, {id: 2, live: true, replicas: 0, leaders: 0}], []).imbalanced`, `false`},
		{`JSON.stringify((await import('./js/cluster.js')).troubledPartitions(` + topics + `).map((p) => [p.topic, p.partition, p.offline, p.under]))`,
			`[["a",1,false,true],["a",2,true,true]]`},
		{`JSON.stringify((await import('./js/cluster.js')).electionSummary([{error_code: 0}, {error_code: 84}, {error_code: 84}, {error_code: 80, topic: 't', partition: 3}]))`,
			`{"elected":1,"notNeeded":2,"failed":[{"error_code":80,"topic":"t","partition":3}]}`},
		{`JSON.stringify((await import('./js/moves.js')).planRows({
			current: [{topic: 'b', partition: 0, replicas: [1, 2]}, {topic: 'a', partition: 1, replicas: [1, 2]}, {topic: 'a', partition: 0, replicas: [3]}],
			proposed: [{topic: 'b', partition: 0, replicas: [2, 1]}, {topic: 'a', partition: 1, replicas: [2, 3]}, {topic: 'a', partition: 0, replicas: [3]}]})
			.map((r) => [r.topic, r.partition, r.kind, r.added, r.removed]))`,
			`[["a",0,"same",[],[]],["a",1,"move",[3],[1]],["b",0,"reorder",[],[]]]`},
		{`JSON.stringify((await import('./js/moves.js')).throttleRate(' 10 '))`, `{"rate":10485760,"problem":""}`},
		{`JSON.stringify((await import('./js/moves.js')).throttleRate(''))`, `{"rate":0,"problem":""}`},
		{`(await import('./js/moves.js')).throttleRate('-1').problem !== ''`, `true`},
		{`(await import('./js/moves.js')).throttleRate('fast').problem !== ''`, `true`},
		{`(await import('./js/moves.js')).progressText((await import('./js/moves.js')).progressOf({progress: {bytes_copied: 13107200, bytes_to_copy: 41943040}}))`,
			`12.5 MiB of 40.0 MiB (31%)`},
		{`(await import('./js/moves.js')).progressText((await import('./js/moves.js')).progressOf({topic: 'a'}))`, `copying…`},
		{`JSON.stringify((await import('./js/moves.js')).totalProgress({reassignments: [{progress: {bytes_copied: 5, bytes_to_copy: 10}}], total: {bytes_copied: 5, bytes_to_copy: 10}}))`,
			`{"copied":5,"toCopy":10}`},
		{`JSON.stringify((await import('./js/moves.js')).totalProgress({reassignments: [{topic: 'a'}], total: {bytes_copied: 0, bytes_to_copy: 0}}))`, `null`},
		{`JSON.stringify((await import('./js/moves.js')).totalProgress({reassignments: [{progress: {bytes_copied: 0, bytes_to_copy: 0}}]}))`, `{"copied":0,"toCopy":0}`},
		{`JSON.stringify((await import('./js/moves.js')).outcomeSummary([{error_code: 0}, {error_code: 85}, {error_code: 39, message: 'bad'}]))`,
			`{"ok":1,"notMoving":1,"failed":[{"error_code":39,"message":"bad"}]}`},
	}
	for _, c := range cases {
		got := evalAsync[string](b, c.expr, `(async () => String(%s))()`)
		if got != c.want {
			t.Errorf("%s\n got %q\nwant %q", c.expr, got, c.want)
		}
	}
	// A single node: one broker, the controller, live, holding nothing yet.
	b.waitText(`#view table.brokers tr[data-broker]`, "controller")
	b.waitText(`#view table.brokers tr[data-broker]`, "live")
}

type uiTopicPartition struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
}

func topicPartitions(t *testing.T, n *harness.Node, topic string) []uiTopicPartition {
	t.Helper()
	var info struct {
		Partitions []uiTopicPartition `json:"partitions"`
	}
	if st := uiGetJSON(t, n.URL+"/topics/"+topic, &info); st != http.StatusOK {
		t.Fatalf("GET /topics/%s: %d", topic, st)
	}
	return info.Partitions
}

// createSyncedTopic creates topic on n and waits until every partition has a
// leader and all its replicas in sync, as every broker describes it.
func createSyncedTopic(t *testing.T, n *harness.Node, topic string, partitions, rf int) {
	t.Helper()
	if st, body := restCall(t, http.MethodPost, n.URL+"/topics", "application/json", "",
		fmt.Sprintf(`{"name":%q,"partitions":%d,"replication_factor":%d}`, topic, partitions, rf)); st != http.StatusCreated {
		t.Fatalf("create %s: %d %s", topic, st, body)
	}
	harness.WaitFor(t, topic+" has leaders and full ISRs", uiTimeout, func() bool {
		var info struct {
			Partitions []uiTopicPartition `json:"partitions"`
		}
		if getQuiet(n.URL+"/topics/"+topic, &info) != nil || len(info.Partitions) != partitions {
			return false
		}
		for _, p := range info.Partitions {
			if p.Leader < 1 || len(p.ISR) != rf {
				return false
			}
		}
		return true
	})
}

// leaderOf is the node that leads topic's partition, as nodes[0] describes it.
func leaderOf(t *testing.T, nodes []*harness.Node, topic string, partition int32) *harness.Node {
	t.Helper()
	for _, p := range topicPartitions(t, nodes[0], topic) {
		if p.Partition == partition && p.Leader >= 1 && int(p.Leader) <= len(nodes) {
			return nodes[p.Leader-1]
		}
	}
	return nil
}

// produceAtLeader writes n records of about size bytes to one partition
// through its leader's HTTP gateway, in batches of 50.
func produceAtLeader(t *testing.T, nodes []*harness.Node, topic string, partition int32, n, size int) {
	t.Helper()
	pad := strings.Repeat("x", size)
	for sent := 0; sent < n; {
		var recs []string
		for i := sent; i < min(n, sent+50); i++ {
			recs = append(recs, fmt.Sprintf(`{"partition":%d,"value":{"i":%d,"pad":%q}}`, partition, i, pad))
		}
		body := `{"records":[` + strings.Join(recs, ",") + `]}`
		harness.WaitFor(t, fmt.Sprintf("%s-%d takes records %d..", topic, partition, sent), uiTimeout, func() bool {
			leader := leaderOf(t, nodes, topic, partition)
			if leader == nil {
				return false
			}
			st, _ := restCall(t, http.MethodPost, leader.URL+"/kafka/"+topic, "application/json", "", body)
			return st == http.StatusOK
		})
		sent += len(recs)
	}
}

// countAtLeader counts the records of a partition, read from its leader
// from the log start to the high watermark.
func countAtLeader(t *testing.T, nodes []*harness.Node, topic string, partition int32) int {
	t.Helper()
	var count int
	harness.WaitFor(t, fmt.Sprintf("read %s-%d from its leader", topic, partition), uiTimeout, func() bool {
		leader := leaderOf(t, nodes, topic, partition)
		if leader == nil {
			return false
		}
		count = 0
		for offset, page := int64(0), 0; page < 1000; page++ {
			var read struct {
				Records       []json.RawMessage `json:"records"`
				NextOffset    int64             `json:"next_offset"`
				HighWatermark int64             `json:"high_watermark"`
			}
			url := fmt.Sprintf("%s/kafka/%s/partitions/%d/records?offset=%d&max_records=10000", leader.URL, topic, partition, offset)
			if getQuiet(url, &read) != nil {
				return false
			}
			count += len(read.Records)
			if len(read.Records) == 0 || read.NextOffset >= read.HighWatermark {
				return true
			}
			offset = read.NextOffset
		}
		return false
	})
	return count
}

// brokerCounts is, per broker, the replicas it holds and the partitions it
// leads over every topic page knows.
func brokerCounts(t *testing.T, page *harness.Node) map[int32][2]int {
	t.Helper()
	var names []string
	if st := uiGetJSON(t, page.URL+"/topics", &names); st != http.StatusOK {
		t.Fatalf("GET /topics: %d", st)
	}
	counts := map[int32][2]int{1: {}, 2: {}, 3: {}}
	for _, name := range names {
		for _, p := range topicPartitions(t, page, name) {
			for _, r := range p.Replicas {
				c := counts[r]
				c[0]++
				counts[r] = c
			}
			if p.Leader >= 0 {
				c := counts[p.Leader]
				c[1]++
				counts[p.Leader] = c
			}
		}
	}
	return counts
}

type planRow struct {
	current, proposed []int32
	change            string
	highlighted       bool
}

// readPlan reads the plan table the page shows, by partition.
func readPlan(b *browser) map[int32]planRow {
	b.t.Helper()
	rows := eval[[]map[string]string](b, "read the plan", `[...document.querySelectorAll('table.plan tbody tr[data-partition]')].map((r) => ({
		partition: r.dataset.partition, current: r.dataset.current, proposed: r.dataset.proposed, change: r.dataset.change,
		highlighted: String(r.classList.contains('changed-row'))}))`)
	ids := func(s string) []int32 {
		var out []int32
		for _, f := range strings.Split(s, ",") {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, int32(n))
			}
		}
		return out
	}
	plan := map[int32]planRow{}
	for _, r := range rows {
		p, _ := strconv.Atoi(r["partition"])
		plan[int32(p)] = planRow{current: ids(r["current"]), proposed: ids(r["proposed"]), change: r["change"], highlighted: r["highlighted"] == "true"}
	}
	return plan
}
