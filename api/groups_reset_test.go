package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// resetEnv: topic rs with partition 0 at timestamps 1000, 2000, 3000 and
// partition 1 at 1000, 5000; group g Empty with commits 1 and 2.
func newResetEnv(t *testing.T) *groupsEnv {
	t.Helper()
	e := newGroupsEnv(t)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "rs", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	var recs []server.ProduceRecord
	for p, stamps := range [][]int64{{1000, 2000, 3000}, {1000, 5000}} {
		for _, ts := range stamps {
			recs = append(recs, server.ProduceRecord{Partition: int32(p), Record: records.Record{Value: []byte(`{}`), Timestamp: ts}})
		}
	}
	if _, err := e.broker.Produce(context.Background(), &server.ProduceRequest{Topic: "rs", Records: recs}); err != nil {
		t.Fatal(err)
	}
	a := e.do(t, "POST", "/groups/g/offsets/reset", "application/json", `{"topic":"rs","to":"offset","offset":0}`)
	if a.status != http.StatusNotFound { // the group does not exist yet: reset does not create it
		t.Fatalf("reset of an unknown group: %d %s", a.status, a.body)
	}
	commitAsAdmin(t, e, "g", map[int32]int64{0: 1, 1: 2})
	return e
}

func commitAsAdmin(t *testing.T, e *groupsEnv, group string, offsets map[int32]int64) {
	t.Helper()
	var parts []resetPartition
	for p, o := range offsets {
		parts = append(parts, resetPartition{Partition: p, Offset: o})
	}
	req, _ := http.NewRequest("POST", "/", nil)
	gw, _ := New(e.broker, Config{Groups: e.groups})
	if status, _, msg := gw.commitReset(req, group, "rs", parts); status != 0 {
		t.Fatalf("commit: %d %s", status, msg)
	}
}

func TestResetGroupOffsets(t *testing.T) {
	e := newResetEnv(t)
	cases := []struct {
		body string
		want []int64 // per partition
	}{
		{`{"topic":"rs","to":"earliest"}`, []int64{0, 0}},
		{`{"topic":"rs","to":"latest"}`, []int64{3, 2}},
		{`{"topic":"rs","to":"timestamp","timestamp":1500}`, []int64{1, 1}},
		{`{"topic":"rs","to":"timestamp","timestamp":4000}`, []int64{3, 1}}, // nothing that recent in p0: its end
		{`{"topic":"rs","to":"offset","offset":2}`, []int64{2, 2}},
		{`{"topic":"rs","to":"offset","offset":99}`, []int64{3, 2}}, // clamped
		{`{"topic":"rs","to":"earliest","partitions":[1]}`, []int64{3, 0}},
	}
	prev := []int64{1, 2}
	for _, c := range cases {
		a := e.do(t, "POST", "/groups/g/offsets/reset", "application/json", c.body)
		var ans resetOffsetsAnswer
		a.decode(t, &ans)
		if a.status != http.StatusOK {
			t.Fatalf("%s: %d %s", c.body, a.status, a.body)
		}
		for _, p := range ans.Offsets {
			if p.Previous != prev[p.Partition] {
				t.Errorf("%s: partition %d previous %d, want %d", c.body, p.Partition, p.Previous, prev[p.Partition])
			}
		}
		lag, _ := e.groups.Lag("g")
		for _, l := range lag {
			if l.Committed != c.want[l.Partition] {
				t.Errorf("%s: partition %d committed %d, want %d", c.body, l.Partition, l.Committed, c.want[l.Partition])
			}
			prev[l.Partition] = l.Committed
		}
	}

	// A dry run reports without committing.
	a := e.do(t, "POST", "/groups/g/offsets/reset", "application/json", `{"topic":"rs","to":"latest","dry_run":true}`)
	var ans resetOffsetsAnswer
	a.decode(t, &ans)
	if !ans.DryRun || len(ans.Offsets) != 2 || ans.Offsets[0].Offset != 3 || ans.Offsets[1].Offset != 2 {
		t.Fatalf("dry run: %d %s", a.status, a.body)
	}
	if lag, _ := e.groups.Lag("g"); lag[1].Committed != 0 {
		t.Fatalf("the dry run committed: %+v", lag)
	}
}

func TestResetGroupOffsetsErrors(t *testing.T) {
	e := newResetEnv(t)
	for _, c := range []struct {
		body         string
		status, code int
	}{
		{`{"to":"earliest"}`, 400, codeBadParam},
		{`{"topic":"rs","to":"yesterday"}`, 400, codeBadParam},
		{`{"topic":"rs","to":"timestamp"}`, 400, codeBadParam},
		{`{"topic":"rs","to":"offset"}`, 400, codeBadParam},
		{`{"topic":"rs","to":"earliest","partitions":[5]}`, 404, codePartitionNotFound},
		{`{"topic":"nope","to":"earliest"}`, 404, codeTopicNotFound},
		{`{"topic":"rs","to":"earliest","extra":1}`, 400, codeMalformed},
	} {
		e.do(t, "POST", "/groups/g/offsets/reset", "application/json", c.body).wantError(t, c.status, c.code)
	}
}

func TestResetGroupOffsetsRefusedWhileMembers(t *testing.T) {
	e := newResetEnv(t)
	ci := e.newInstance(t, "g", `{"name":"c1"}`)
	e.subscribe(t, "g", ci.InstanceID, `["rs"]`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, _ := e.groups.Describe("g")
		if len(d.Members) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consumer never joined: %+v", d)
		}
		e.get(t, "/consumers/g/instances/"+ci.InstanceID+"/records?timeout=100", typeRestV2+"", "")
	}
	a := e.do(t, "POST", "/groups/g/offsets/reset", "application/json", `{"topic":"rs","to":"earliest"}`)
	a.wantError(t, http.StatusConflict, codeGroupNotEmpty)
	if lag, _ := e.groups.Lag("g"); lag[0].Committed != 1 || lag[1].Committed != 2 {
		t.Fatalf("a refused reset changed offsets: %+v", lag)
	}
	// Once the consumer leaves, the group is Empty and the reset goes through.
	if a := e.do(t, "DELETE", "/consumers/g/instances/"+ci.InstanceID, typeRestV2, ""); a.status != http.StatusNoContent {
		t.Fatalf("delete consumer: %d %s", a.status, a.body)
	}
	if a := e.do(t, "POST", "/groups/g/offsets/reset", "application/json", `{"topic":"rs","to":"earliest"}`); a.status != http.StatusOK {
		t.Fatalf("reset after the consumer left: %d %s", a.status, a.body)
	}
}
