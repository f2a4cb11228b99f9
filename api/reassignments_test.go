package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/server"
)

// refusingController fails the test when a request that should have
// been refused reaches the controller.
type refusingController struct{ t *testing.T }

func (r refusingController) ElectLeaders(context.Context, controller.ElectionType, []controller.TopicPartition) (map[controller.TopicPartition]error, error) {
	r.t.Error("election run for a refused request")
	return nil, nil
}

func (r refusingController) AlterReassignments(context.Context, map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	r.t.Error("reassignment started for a refused request")
	return nil, nil
}

func (r refusingController) Reassignments(context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	return nil, nil
}

// Malformed reassignment and election requests get 400 with a JSON
// error_code and reach nothing; without the core's Admin the routes answer 503.
func TestReassignmentRoutesRefuseBadRequests(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := server.Open(server.Config{DataDir: t.TempDir()}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	g, err := New(b, Config{Logger: logger, Admin: server.NewAdmin(b, server.AdminConfig{Controller: refusingController{t}})})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := New(b, Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gw           *Gateway
		method, path string
		body         string
		status, code int
	}{
		{g, "POST", "/admin/reassignments", "", 400, codeMalformed},
		{g, "POST", "/admin/reassignments", `{"partitions":[{"topic":"t","partition":0,"replicas":[1]}],"topics":["t"]}`, 400, codeMalformed},
		{g, "POST", "/admin/reassignments", `{"topics":["t"]}`, 400, codeMalformed},
		{g, "POST", "/admin/reassignments", `{"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}`, 400, codeMalformed},
		{g, "POST", "/admin/reassignments", `{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`, 400, codeMalformed},
		{g, "POST", "/admin/reassignments", `{"partitions":`, 400, codeMalformed},
		{g, "POST", "/admin/reassignments", `{"partitions":[{"topic":"t","partition":0,"replicas":[1]}],"throttle_bytes_per_sec":-1}`, 400, codeMalformed},
		{bare, "DELETE", "/admin/reassignments/throttle", "", 503, codeUnavailable},
		{g, "POST", "/admin/preferred-leader-election", `{"partitions":[{"topic":"","partition":0}]}`, 400, codeMalformed},
		{bare, "GET", "/admin/reassignments", "", 503, codeUnavailable},
		{bare, "POST", "/admin/preferred-leader-election", "", 503, codeUnavailable},
	} {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		tc.gw.Handler().ServeHTTP(rec, req)
		var body struct {
			ErrorCode int    `json:"error_code"`
			Message   string `json:"message"`
		}
		json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != tc.status || body.ErrorCode != tc.code || body.Message == "" {
			t.Errorf("%s %s %s: %d %s, want %d with error_code %d", tc.method, tc.path, tc.body, rec.Code, rec.Body, tc.status, tc.code)
		}
	}
}

// lostController is a cluster whose controller, another broker, cannot be
// reached: this broker's driver answers NOT_CONTROLLER, the peers nothing.
type lostController struct{}

func (lostController) ElectLeaders(context.Context, controller.ElectionType, []controller.TopicPartition) (map[controller.TopicPartition]error, error) {
	return nil, controller.ErrNotController
}

func (lostController) AlterReassignments(context.Context, map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	return nil, controller.ErrNotController
}

func (lostController) Reassignments(context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	return nil, controller.ErrNotController
}

func (lostController) Controller(int32) server.ControllerAdmin { return unreachableController{} }

func (lostController) LogDirSizes(context.Context, int32, []controller.TopicPartition) (map[controller.TopicPartition]int64, error) {
	return nil, server.ErrControllerNotAvailable
}

type unreachableController struct{}

func (unreachableController) ElectLeaders(context.Context, controller.ElectionType, []controller.TopicPartition) (map[controller.TopicPartition]error, error) {
	return nil, server.ErrControllerNotAvailable
}

func (unreachableController) AlterReassignments(context.Context, map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	return nil, server.ErrControllerNotAvailable
}

func (unreachableController) Reassignments(context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	return nil, server.ErrControllerNotAvailable
}

// When the controller cannot be reached the admin routes answer, within
// the core's bound, 503 with Retry-After and error_code 50301.
func TestAdminRoutesWithoutAController(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := server.Open(server.Config{DataDir: t.TempDir(), BrokerID: 1}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.ApplyUpdateMetadata(2, 1, []server.ClusterBroker{{ID: 1}, {ID: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	adm := server.NewAdmin(b, server.AdminConfig{Controller: lostController{}, Peers: lostController{}, ForwardTimeout: 200 * time.Millisecond})
	g, err := New(b, Config{Logger: logger, Admin: adm})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/admin/preferred-leader-election", ""},
		{"GET", "/admin/reassignments", ""},
		{"DELETE", "/admin/reassignments", ""},
		{"POST", "/admin/reassignments", `{"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}`},
	} {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		start := time.Now()
		g.Handler().ServeHTTP(rec, req)
		var body struct {
			ErrorCode int    `json:"error_code"`
			Message   string `json:"message"`
		}
		json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != 503 || body.ErrorCode != codeUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(body.Message, "controller not available") {
			t.Errorf("%s %s: %d %s (Retry-After %q), want 503 with error_code %d", tc.method, tc.path, rec.Code, rec.Body, rec.Header().Get("Retry-After"), codeUnavailable)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s %s took %v", tc.method, tc.path, took)
		}
	}
}

// A single node's admin routes answer from the core: its one replica
// leads every partition, moves to it change nothing, nothing moves.
func TestAdminRoutesOnASingleNode(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := server.Open(server.Config{DataDir: t.TempDir()}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic(server.TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	g, err := New(b, Config{Logger: logger, Admin: server.NewAdmin(b, server.AdminConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		g.Handler().ServeHTTP(rec, req)
		return rec
	}
	var elected electionAnswer
	rec := serve("POST", "/admin/preferred-leader-election", "")
	if json.Unmarshal(rec.Body.Bytes(), &elected); rec.Code != 200 || len(elected.Results) != 1 || elected.Results[0].ErrorCode != 84 {
		t.Fatalf("election: %d %s", rec.Code, rec.Body)
	}
	var started reassignAnswer
	rec = serve("POST", "/admin/reassignments", `{"topics":["t"],"brokers":[0],"execute":true}`)
	if json.Unmarshal(rec.Body.Bytes(), &started); rec.Code != 200 || started.Plan == nil || len(started.Results) != 1 || started.Results[0].ErrorCode != 0 {
		t.Fatalf("plan and move: %d %s", rec.Code, rec.Body)
	}
	rec = serve("POST", "/admin/reassignments", `{"topics":["t"],"brokers":[5]}`)
	if rec.Code != 422 {
		t.Fatalf("a plan on a broker not in the cluster: %d %s", rec.Code, rec.Body)
	}
	if rec = serve("GET", "/admin/reassignments", ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"reassignments":[]`) {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	if rec = serve("DELETE", "/admin/reassignments/throttle", ""); rec.Code != 204 {
		t.Fatalf("remove the throttle: %d %s", rec.Code, rec.Body)
	}
}
