package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// postWithKey sends a produce with an Idempotency-Key.
func postWithKey(url, key, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res, data, err
}

// Requests with keys stream into a node that is killed with -9 mid-stream;
// after the restart every request is retried with its key. An
// acknowledged request answers its original offsets (replayed) and writes
// nothing; one in flight at the kill is replayed (recorded, not received),
// run now (its start was not recorded, so it wrote nothing) or refused as
// in doubt (40908); no record
// is in the log twice and every acknowledged one is.
func TestIdempotencyKeysSurviveKill9(t *testing.T) {
	node := harness.Start(t, "--http-idempotency-window", "10m")
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"keyed","partitions":3}`, 201)

	const requests, perRequest, workers = 300, 5, 4
	bodyOf := func(n int) string {
		var b bytes.Buffer
		b.WriteString(`{"records":[`)
		for i := range perRequest {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"key":"k%d","value":{"id":%d}}`, n*perRequest+i, n*perRequest+i)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	var (
		mu       sync.Mutex
		acked    = map[int]string{} // request → its answer
		next     atomic.Int64
		killOnce sync.Once
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= requests {
					return
				}
				res, data, err := postWithKey(node.URL+"/kafka/keyed", fmt.Sprintf("req-%d", n), bodyOf(n))
				if err != nil {
					return // killed
				}
				if res.StatusCode != 200 {
					t.Errorf("request %d: %d %s", n, res.StatusCode, data)
					return
				}
				mu.Lock()
				acked[n] = string(data)
				done := len(acked)
				mu.Unlock()
				if done >= requests/2 {
					killOnce.Do(node.Kill)
				}
			}
		})
	}
	wg.Wait()
	killOnce.Do(node.Kill)
	if t.Failed() {
		return
	}
	if len(acked) < requests/2 || len(acked) >= requests {
		t.Fatalf("the kill did not land mid-stream: %d of %d acknowledged", len(acked), requests)
	}
	node.Restart()

	inDoubt, rerun, unseen := 0, 0, 0
	for n := range requests {
		res, data, err := postWithKey(node.URL+"/kafka/keyed", fmt.Sprintf("req-%d", n), bodyOf(n))
		if err != nil {
			t.Fatal(err)
		}
		original, wasAcked := acked[n]
		switch {
		case wasAcked:
			if res.StatusCode != 200 || string(data) != original || res.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("acknowledged request %d retried: %d %s (%q), original %s", n, res.StatusCode, data, res.Header.Get("Idempotent-Replayed"), original)
			}
		case res.StatusCode == 409:
			var e struct {
				ErrorCode int `json:"error_code"`
			}
			if json.Unmarshal(data, &e) != nil || e.ErrorCode != 40908 {
				t.Fatalf("request %d: %d %s, want 40908", n, res.StatusCode, data)
			}
			inDoubt++
		case res.StatusCode == 200 && res.Header.Get("Idempotent-Replayed") == "":
			rerun++
		case res.StatusCode == 200:
			unseen++ // recorded just before the kill, never received
		default:
			t.Fatalf("unacknowledged request %d retried: %d %s", n, res.StatusCode, data)
		}
	}
	t.Logf("%d acknowledged before kill -9, %d recorded but not received, %d in doubt, %d run after the restart", len(acked), unseen, inDoubt, rerun)

	seen := map[int]bool{}
	for p := range 3 {
		ids, _ := readPartition(t, node.URL, "keyed", p)
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("record %d is in the log twice", id)
			}
			seen[id] = true
		}
	}
	for n := range acked {
		for i := range perRequest {
			if !seen[n*perRequest+i] {
				t.Fatalf("acknowledged record %d of request %d is missing", n*perRequest+i, n)
			}
		}
	}
}

// A short window: inside it a retry is replayed, after it the same key is
// a new request.
func TestIdempotencyKeyWindowFlag(t *testing.T) {
	node := harness.Start(t, "--http-idempotency-window", "2s")
	res, first, err := postWithKey(node.URL+"/kafka/win", "k", `{"id":1}`)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("original: %v %v %s", res, err, first)
	}
	start := time.Now()
	res, again, _ := postWithKey(node.URL+"/kafka/win", "k", `{"id":1}`)
	if time.Since(start) < time.Second && (res.Header.Get("Idempotent-Replayed") != "true" || string(again) != string(first)) {
		t.Fatalf("inside the window: %d %s", res.StatusCode, again)
	}
	harness.WaitFor(t, "the window to pass", 10*time.Second, func() bool {
		res, data, err := postWithKey(node.URL+"/kafka/win", "k", `{"id":1}`)
		return err == nil && res.StatusCode == 200 && res.Header.Get("Idempotent-Replayed") == "" && strings.Contains(string(data), `"offset":1`)
	})
}
