package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/storage/errorfs"
)

type readyAnswer struct {
	Status            string                    `json:"status"`
	Checks            map[string]string         `json:"checks"`
	OfflinePartitions []server.OfflinePartition `json:"offline_partitions"`
}

func (e *testEnv) readyz(t *testing.T) (int, readyAnswer) {
	t.Helper()
	a := e.do(t, "GET", "/readyz", "", "")
	var r readyAnswer
	a.decode(t, &r)
	return a.status, r
}

func (e *testEnv) produceTo(t *testing.T, topic string, partition int, value string) answer {
	t.Helper()
	return e.do(t, "POST", "/kafka/"+topic, "application/json",
		fmt.Sprintf(`{"records":[{"value":%q,"partition":%d}]}`, value, partition))
}

// TestReadyzAndAdminRecoverWithFailedPartition: a disk-full produce answers
// a storage error; /readyz then says degraded (200) naming the partition,
// and not ready (503) once every partition is offline; the recover call
// answers a JSON error while the disk is full and brings the partitions
// back once it is not, after which /readyz is ready and the records read
// back once each.
func TestReadyzAndAdminRecoverWithFailedPartition(t *testing.T) {
	fs := errorfs.New(nil)
	e := newTestEnv(t, func(c *server.Config, _ *Config) {
		c.LogFS, c.FailedLogProbeInterval = fs, time.Hour
	})
	if a := e.do(t, "POST", "/topics", "application/json", `{"name":"t","partitions":2}`); a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	for p := range 2 {
		if a := e.produceTo(t, "t", p, "before"); a.status != 200 {
			t.Fatalf("produce: %d %s", a.status, a.body)
		}
	}
	fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, Err: errorfs.ENOSPC})
	e.produceTo(t, "t", 0, "lost").wantError(t, 500, codeStorage)

	status, r := e.readyz(t)
	if status != 200 || r.Status != "degraded" || len(r.OfflinePartitions) != 1 ||
		r.OfflinePartitions[0].Partition != 0 || !strings.Contains(r.OfflinePartitions[0].Error, "no space left") ||
		!strings.Contains(r.Checks["storage"], "1 of 2 partitions offline") || !strings.Contains(r.Checks["storage"], "t-0") {
		t.Fatalf("/readyz with t-0 offline = %d %+v", status, r)
	}
	e.produceTo(t, "t", 1, "lost").wantError(t, 500, codeStorage)
	if status, r = e.readyz(t); status != 503 || r.Status != "not ready" || len(r.OfflinePartitions) != 2 {
		t.Fatalf("/readyz with every partition offline = %d %+v", status, r)
	}
	e.do(t, "POST", "/admin/partitions/t/0/recover", "", "").wantError(t, 500, codeStorage)
	e.do(t, "POST", "/admin/partitions/t/x/recover", "", "").wantError(t, 400, codeBadParam)
	e.do(t, "POST", "/admin/partitions/t/9/recover", "", "").wantError(t, 404, codePartitionNotFound)
	e.do(t, "POST", "/admin/partitions/nope/0/recover", "", "").wantError(t, 404, codeTopicNotFound)

	fs.Clear()
	for p := range 2 {
		a := e.do(t, "POST", fmt.Sprintf("/admin/partitions/t/%d/recover", p), "", "")
		var ra recoverAnswer
		a.decode(t, &ra)
		if a.status != 200 || !ra.Recovered || ra.LogEndOffset != 1 {
			t.Fatalf("recover t-%d: %d %s", p, a.status, a.body)
		}
	}
	a := e.do(t, "POST", "/admin/partitions/t/0/recover", "", "")
	if a.status != 200 || !strings.Contains(string(a.body), `"recovered":false`) {
		t.Fatalf("recover of an online partition: %d %s", a.status, a.body)
	}
	// An escaped topic name (%74 is "t") is decoded as on every other route.
	if a := e.do(t, "POST", "/admin/partitions/%74/0/recover", "", ""); a.status != 200 || !strings.Contains(string(a.body), `"topic":"t"`) {
		t.Fatalf("recover with an escaped topic: %d %s", a.status, a.body)
	}
	if status, r = e.readyz(t); status != 200 || r.Status != "ready" || r.Checks["storage"] != "ok" || r.OfflinePartitions != nil {
		t.Fatalf("/readyz after recovery = %d %+v", status, r)
	}
	for p := range 2 {
		if a := e.produceTo(t, "t", p, "after"); a.status != 200 {
			t.Fatalf("produce after recovery: %d %s", a.status, a.body)
		}
		var got []string
		for _, rec := range e.readAll(t, "t", p).Records {
			got = append(got, string(rec.Value))
		}
		if strings.Join(got, ",") != `"before","after"` {
			t.Fatalf("t-%d holds %v", p, got)
		}
	}
}
