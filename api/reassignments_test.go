package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

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
