package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/pgserver"
)

type readiness struct {
	Code   int
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

func getReadyz(t *testing.T, node *harness.Node) readiness {
	t.Helper()
	res, err := http.Get(node.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := readiness{Code: res.StatusCode}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		t.Fatalf("/readyz body: %v", err)
	}
	return r
}

// TestReadyzEmbedded: a node on the embedded stores is ready at once.
func TestReadyzEmbedded(t *testing.T) {
	node := harness.Start(t)
	r := getReadyz(t, node)
	if r.Code != 200 || r.Status != "ready" || r.Checks["storage"] != "ok" || r.Checks["schema_store"] != "ok" {
		t.Fatalf("/readyz = %+v, want 200 ready with storage and schema_store ok", r)
	}
}

// TestReadyzFollowsPostgres: with the schema registry on PostgreSQL,
// /readyz answers 503 naming schema_store while PostgreSQL is down and
// 200 again once it is back; /healthz stays 200 throughout (the process is
// up), and ferry_schema_store_up follows.
func TestReadyzFollowsPostgres(t *testing.T) {
	pg := pgserver.Start(t)
	node := harness.Start(t, "--schema-store", pg.DSN())
	if r := getReadyz(t, node); r.Code != 200 || r.Checks["schema_store"] != "ok" {
		t.Fatalf("/readyz with PostgreSQL up = %+v", r)
	}

	pg.Stop()
	var down readiness
	harness.WaitFor(t, "/readyz to answer 503 with PostgreSQL stopped", 30*time.Second, func() bool {
		down = getReadyz(t, node)
		return down.Code == http.StatusServiceUnavailable
	})
	if down.Status != "not ready" || down.Checks["storage"] != "ok" ||
		down.Checks["schema_store"] == "ok" || down.Checks["schema_store"] == "" {
		t.Fatalf("/readyz with PostgreSQL stopped = %+v, want not ready naming schema_store", down)
	}
	t.Logf("schema_store check while PostgreSQL is down: %s", down.Checks["schema_store"])
	if up := scrapeMetrics(t, node).value("ferry_schema_store_up"); up != 0 {
		t.Errorf("ferry_schema_store_up = %v with PostgreSQL stopped, want 0", up)
	}
	res, err := http.Get(node.URL + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("/healthz with PostgreSQL stopped: %v %v", err, res)
	}
	res.Body.Close()

	pg.Restart()
	harness.WaitFor(t, "/readyz to answer 200 after PostgreSQL restarted", 30*time.Second, func() bool {
		return getReadyz(t, node).Code == 200
	})
	if r := getReadyz(t, node); r.Status != "ready" || r.Checks["schema_store"] != "ok" {
		t.Fatalf("/readyz after restart = %+v", r)
	}
	if up := scrapeMetrics(t, node).value("ferry_schema_store_up"); up != 1 {
		t.Errorf("ferry_schema_store_up = %v after PostgreSQL restarted, want 1", up)
	}
}
