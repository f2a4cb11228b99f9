package kafka

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/txn"
	"github.com/ferry-mq/ferry/server/txn/txntest"
)

// answerOf sends req at version v on c and delivers its response, or nil
// when none can be read (10 s) or decoded; c must carry no other request.
func answerOf(c *client, req kmsg.Request, v int16) <-chan kmsg.Response {
	req.SetVersion(v)
	corr := c.send(req)
	ch := make(chan kmsg.Response, 1)
	go func() {
		frame, err := c.readFrame()
		if err != nil || len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != corr {
			ch <- nil
			return
		}
		resp := req.ResponseKind()
		resp.SetVersion(v)
		body := frame[4:]
		if resp.IsFlexible() {
			body = body[1:] // empty header tags
		}
		if resp.ReadFrom(body) != nil {
			resp = nil
		}
		ch <- resp
	}()
	return ch
}

// within returns what ch delivers within d; false when nothing came.
func within(ch <-chan kmsg.Response, d time.Duration) (kmsg.Response, bool) {
	select {
	case r := <-ch:
		return r, true
	case <-time.After(d):
		return nil, false
	}
}

// brokerAddReq is AddPartitionsToTxn v4+'s batch of one transaction, as a
// partition leader sends it (transaction.version 2's add without
// verifyOnly, KIP-890 part 1's verification with it).
func brokerAddReq(id string, pid int64, epoch int16, verifyOnly bool, topic string, parts ...int32) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, verifyOnly
	rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rt.Topic, rt.Partitions = topic, parts
	tx.Topics = append(tx.Topics, rt)
	req.Transactions = append(req.Transactions, tx)
	return req
}

// addCode is the one partition's code of an AddPartitionsToTxn answer of
// any version (-2: no answer).
func addCode(r kmsg.Response) int16 {
	resp, ok := r.(*kmsg.AddPartitionsToTxnResponse)
	switch {
	case !ok:
		return -2
	case resp.Version < 4 && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1:
		return resp.Topics[0].Partitions[0].ErrorCode
	case resp.ErrorCode != 0:
		return resp.ErrorCode
	case len(resp.Transactions) == 1 && len(resp.Transactions[0].Topics) == 1 && len(resp.Transactions[0].Topics[0].Partitions) == 1:
		return resp.Transactions[0].Topics[0].Partitions[0].ErrorCode
	}
	return -2
}

// The listener sends a producer's AddPartitionsToTxn (v0–v3) adding a
// partition to an ongoing transaction to the coordinator's early answer
// (AddProducerPartitions): answered while __transaction_state's
// acknowledgement is held back. A partition leader's add (v4 without
// verifyOnly, transaction.version 2) and its verification (v4 with
// verifyOnly) of a partition so added wait for the acknowledgement: the
// leader appends the producer's data next. Swapping the listener's
// routing fails both halves.
func TestAddPartitionsToTxnEarlyAnswerByVersion(t *testing.T) {
	gate := &txntest.AckGate{}
	ts, _ := newTxnTestServerTuned(t, func(c *txn.Config) { c.StateAcknowledged = gate.Wait })
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "orders", Partitions: 8, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	c := ts.dial(t)
	pid, epoch := startTxn(t, c, "tx")
	expectCode(t, "the transaction's first partition", addCode(do[*kmsg.AddPartitionsToTxnResponse](c, addPartitionsReq("tx", pid, epoch, "orders", 0), 3)), 0)

	for v := int16(0); v <= 3; v++ {
		release := gate.HoldAcks()
		answer := answerOf(ts.dial(t), addPartitionsReq("tx", pid, epoch, "orders", int32(v)+1), v)
		r, ok := within(answer, 5*time.Second)
		release()
		if !ok {
			t.Fatalf("AddPartitionsToTxn v%d to an ongoing transaction was not answered before the state's acknowledgement", v)
		}
		expectCode(t, "early add", addCode(r), 0)
		// The next hold must not catch this record's acknowledgement,
		// which may not have reached the gate yet (its append answered
		// the add first); the state writer appends one group at a time,
		// so the next add would wait behind it. A leader's verification
		// of the partition is answered once the record is acknowledged.
		vr, ok := within(answerOf(ts.dial(t), brokerAddReq("tx", pid, epoch, true, "orders", int32(v)+1), 4), 10*time.Second)
		if !ok {
			t.Fatalf("the verification of orders-%d was not answered once its record was released", v+1)
		}
		expectCode(t, "verification once released", addCode(vr), 0)
	}

	release := gate.HoldAcks()
	defer release()
	answer := answerOf(ts.dial(t), brokerAddReq("tx", pid, epoch, false, "orders", 5), 4)
	if r, ok := within(answer, 300*time.Millisecond); ok {
		t.Fatalf("a leader's AddPartitionsToTxn v4 answered %s before the state's acknowledgement", codeName(addCode(r)))
	}
	release()
	r, ok := within(answer, 10*time.Second)
	if !ok {
		t.Fatal("a leader's AddPartitionsToTxn v4 was not answered once acknowledged")
	}
	expectCode(t, "a leader's add once acknowledged", addCode(r), 0)

	// A partition the producer added early is verified once its record is
	// acknowledged, not before.
	release = gate.HoldAcks()
	defer release()
	r, ok = within(answerOf(ts.dial(t), addPartitionsReq("tx", pid, epoch, "orders", 6), 3), 5*time.Second)
	if !ok {
		t.Fatal("AddPartitionsToTxn v3 to an ongoing transaction was not answered before the state's acknowledgement")
	}
	expectCode(t, "early add of orders-6", addCode(r), 0)
	verified := answerOf(ts.dial(t), brokerAddReq("tx", pid, epoch, true, "orders", 6), 4)
	if r, ok := within(verified, 300*time.Millisecond); ok {
		t.Fatalf("the verification of orders-6 answered %s before its record was acknowledged", codeName(addCode(r)))
	}
	release()
	r, ok = within(verified, 10*time.Second)
	if !ok {
		t.Fatal("the verification of orders-6 was not answered once acknowledged")
	}
	expectCode(t, "verification once acknowledged", addCode(r), 0)

	state := describeTxn(c, "tx")
	held := map[int32]bool{}
	for _, tp := range state.Topics {
		for _, p := range tp.Partitions {
			held[p] = true
		}
	}
	for p := int32(0); p <= 6; p++ {
		if !held[p] {
			t.Fatalf("orders-%d is not in the transaction: %+v", p, state.Topics)
		}
	}
}
