package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestTxnKcatIsolation: librdkafka (kcat), whose default isolation is
// read_committed, reads a partition holding an aborted, a committed and an
// open transaction written by franz-go transactional producers through the
// coordinator: it skips the aborted records and stops at the last stable
// offset; with isolation.level=read_uncommitted it reads them all; it never
// shows a marker.
func TestTxnKcatIsolation(t *testing.T) {
	kcatPath(t)
	node := kafkaNode(t)
	createTopic(t, node, "txk", 1)
	plain := franz(t, node, kgo.DefaultProduceTopic("txk"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(cl *kgo.Client, values ...string) int64 {
		t.Helper()
		var rs []*kgo.Record
		for _, v := range values {
			rs = append(rs, &kgo.Record{Topic: "txk", Value: []byte(v)})
		}
		res := cl.ProduceSync(ctx, rs...)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce %v: %v", values, err)
		}
		return res[len(res)-1].Record.Offset
	}
	transaction := func(id string, values ...string) (*kgo.Client, int64) {
		t.Helper()
		cl := franz(t, node, kgo.TransactionalID(id), kgo.TransactionTimeout(60*time.Second))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		return cl, produce(cl, values...)
	}
	end := func(cl *kgo.Client, commit kgo.TransactionEndTry) {
		t.Helper()
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end transaction: %v", err)
		}
	}
	adm := kadm.NewClient(plain)
	// Markers are written after EndTxn answers: wait for the LSO to reach
	// `want` so that kcat's read is deterministic.
	waitLSO := func(want int64) {
		t.Helper()
		harness.WaitFor(t, fmt.Sprintf("the last stable offset to reach %d", want), 30*time.Second, func() bool {
			offs, err := adm.ListCommittedOffsets(ctx, "txk")
			if err != nil {
				return false
			}
			o, ok := offs.Lookup("txk", 0)
			return ok && o.Err == nil && o.Offset == want
		})
	}

	produce(plain, "p0")
	aborted, _ := transaction("txk-aborted", "a1", "a2")
	end(aborted, kgo.TryAbort)
	committed, _ := transaction("txk-committed", "c1")
	end(committed, kgo.TryCommit)
	open, openAt := transaction("txk-open", "o1") // open: the LSO stays at its offset
	produce(plain, "p1")
	waitLSO(openAt)

	read := func(extra ...string) string {
		args := append([]string{"-b", node.KafkaAddr, "-C", "-t", "txk", "-o", "beginning", "-e", "-q", "-f", `%s\n`}, extra...)
		return strings.Join(strings.Fields(kcat(t, "", args...)), " ")
	}
	if got := read(); got != "p0 c1" {
		t.Fatalf("kcat read_committed read %q, want \"p0 c1\"", got)
	}
	if got := read("-X", "isolation.level=read_uncommitted"); got != "p0 a1 a2 c1 o1 p1" {
		t.Fatalf("kcat read_uncommitted read %q", got)
	}
	end(open, kgo.TryCommit)
	harness.WaitFor(t, "the last stable offset to pass the commit marker", 30*time.Second, func() bool {
		offs, err := adm.ListCommittedOffsets(ctx, "txk")
		if err != nil {
			return false
		}
		hw, err := adm.ListEndOffsets(ctx, "txk")
		if err != nil {
			return false
		}
		c, _ := offs.Lookup("txk", 0)
		h, _ := hw.Lookup("txk", 0)
		return c.Offset == h.Offset && c.Offset > openAt+1
	})
	if got := read(); got != "p0 c1 o1 p1" {
		t.Fatalf("kcat read_committed after the commit read %q", got)
	}
}
