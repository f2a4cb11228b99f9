package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.yaml.in/yaml/v4"
)

func deploymentsFile(t *testing.T, rel string) []byte {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "deployments", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// dashboardExprs returns every PromQL expression of a Grafana dashboard,
// by panel title, checking each panel has what Grafana needs to import it.
func dashboardExprs(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Inputs []struct {
			Name string `json:"name"`
		} `json:"__inputs"`
		Panels []struct {
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("grafana/ferry.json: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Inputs) != 1 || dash.Inputs[0].Name != "DS_PROMETHEUS" {
		t.Fatalf("grafana/ferry.json: want a title, a uid and one DS_PROMETHEUS input")
	}
	exprs := map[string]string{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${DS_PROMETHEUS}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: want the DS_PROMETHEUS datasource and at least one target", p.Title)
		}
		for i, tg := range p.Targets {
			exprs[p.Title+"#"+string(rune('A'+i))] = tg.Expr
		}
	}
	return exprs
}

var metricName = regexp.MustCompile(`\bferry_[a-zA-Z0-9_]+`)

// balanced reports whether (), [] and {} nest properly outside quotes.
func balanced(expr string) bool {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inQuote := false
	for _, r := range expr {
		switch {
		case r == '"':
			inQuote = !inQuote
		case inQuote:
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0 && !inQuote
}

// TestDashboardAndAlertsMatchExportedMetrics: the Grafana dashboard and
// the alert rules parse, and every ferry_ metric they name is exported by
// a running node (after the traffic that creates labelled series).
func TestDashboardAndAlertsMatchExportedMetrics(t *testing.T) {
	exprs := dashboardExprs(t, deploymentsFile(t, "grafana/ferry.json"))
	var rules alertRules
	if err := yaml.Unmarshal(deploymentsFile(t, "prometheus/alerts.yml"), &rules); err != nil {
		t.Fatalf("prometheus/alerts.yml: %v", err)
	}
	if len(rules.Groups) == 0 {
		t.Fatal("prometheus/alerts.yml: no rule groups")
	}
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v: want alert, expr, labels.severity and annotations.summary", r)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("rule %s: for %q: %v", r.Alert, r.For, err)
				}
			}
			alerts[r.Alert] = true
			exprs["alert "+r.Alert] = r.Expr
		}
	}
	for _, want := range []string{"FerryUnderReplicatedPartitions", "FerryOfflinePartitions", "FerryUncleanLeaderElection", "FerryConsumerLagHigh"} {
		if !alerts[want] {
			t.Errorf("alerts.yml has no %s", want)
		}
	}

	node := kafkaNode(t)
	// Traffic that creates every labelled series the files use.
	mustPost(t, node.URL+"/kafka/dash", "application/json", `{"records":[{"value":1},{"value":2}]}`, 200)
	mustPost(t, node.URL+"/kafka/dash", "application/json", `{"records":`, 400)
	restCall(t, "GET", node.URL+"/kafka/dash/partitions/0/records?offset=0", "", "", "")
	restCall(t, "GET", node.URL+"/subjects", "", "", "")
	cl := franz(t, node)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "dash-group", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "dash"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := commit.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	exported := scrapeMetrics(t, node)

	names := map[string][]string{}
	for where, expr := range exprs {
		if !balanced(expr) {
			t.Errorf("%s: unbalanced brackets or quotes in %q", where, expr)
		}
		found := metricName.FindAllString(expr, -1)
		if len(found) == 0 {
			t.Errorf("%s: names no ferry_ metric: %q", where, expr)
		}
		for _, n := range found {
			names[n] = append(names[n], where)
		}
	}
	var missing []string
	for n, where := range names {
		family := n
		if f := exported[n]; f == nil || len(f.Metric) == 0 {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				family = strings.TrimSuffix(family, suffix)
			}
			if f := exported[family]; f == nil || len(f.Metric) == 0 || (family != n && f.GetType() != dto.MetricType_HISTOGRAM) {
				missing = append(missing, n+" (used by "+strings.Join(where, ", ")+")")
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("metrics named in deployments/ but not exported:\n%s", strings.Join(missing, "\n"))
	}
	t.Logf("%d expressions name %d metrics, all exported", len(exprs), len(names))
}
