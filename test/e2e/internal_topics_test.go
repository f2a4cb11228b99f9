package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// Clients cannot delete, produce to, repartition or reconfigure
// __consumer_offsets on either listener; committed offsets survive a
// restart after every attempt.
func TestInternalTopicIsProtected(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "data", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := franz(t, node)
	adm := kadm.NewClient(cl)
	commit := kadm.Offsets{}
	commit.AddOffset("data", 0, 42, -1)
	if err := adm.CommitAllOffsets(ctx, "g1", commit); err != nil {
		t.Fatalf("commit: %v", err)
	}

	const topic = "__consumer_offsets"
	for _, c := range []struct{ method, path, body string }{
		{http.MethodDelete, "/topics/" + topic, ""},
		{http.MethodPost, "/kafka/" + topic, `{"x":1}`},
		{http.MethodPost, "/topics/" + topic + "/partitions", `{"partitions":5}`},
		{http.MethodPut, "/topics/" + topic + "/configs", `{"configs":{"retention.ms":"1"}}`},
	} {
		status, code := httpErrorCode(t, node, c.method, c.path, c.body)
		if status != http.StatusForbidden || code != 40303 {
			t.Errorf("%s %s: %d error_code %d, want 403 / 40303", c.method, c.path, status, code)
		}
	}

	del, err := adm.DeleteTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := del[topic].Err; !isKafkaCode(got, 17) {
		t.Errorf("DeleteTopics: %v, want INVALID_TOPIC_EXCEPTION", got)
	}
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("v")})
	if err := res.FirstErr(); !isKafkaCode(err, 17) {
		t.Errorf("produce: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
	cp, err := adm.CreatePartitions(ctx, 4, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := cp[topic].Err; !isKafkaCode(got, 17) {
		t.Errorf("CreatePartitions: %v, want INVALID_TOPIC_EXCEPTION", got)
	}
	ms := "1"
	alt, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &ms}}, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(alt) != 1 || !isKafkaCode(alt[0].Err, 17) {
		t.Errorf("IncrementalAlterConfigs: %+v, want INVALID_TOPIC_EXCEPTION", alt)
	}

	node.Stop()
	node.Restart()
	node.WaitKafka()
	adm = kadm.NewClient(franz(t, node))
	got, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup("data", 0); !ok || o.At != 42 {
		t.Fatalf("committed offset after restart: %+v %v, want 42", o, ok)
	}
}

func isKafkaCode(err error, code int16) bool {
	return err != nil && strings.Contains(err.Error(), kafkaCodeName(code))
}

func kafkaCodeName(code int16) string {
	switch code {
	case 17:
		return "INVALID_TOPIC_EXCEPTION"
	case 40:
		return "INVALID_CONFIG"
	case 87:
		return "INVALID_RECORD"
	}
	return "?"
}

// httpErrorCode sends one request and returns the status and error_code.
func httpErrorCode(t *testing.T, node *harness.Node, method, path, body string) (int, int) {
	t.Helper()
	req, err := http.NewRequest(method, node.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var e struct {
		ErrorCode int `json:"error_code"`
	}
	json.Unmarshal(data, &e)
	return res.StatusCode, e.ErrorCode
}
