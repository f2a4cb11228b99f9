package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/test/harness"
)

func TestClassifyProbe(t *testing.T) {
	for _, c := range []struct {
		err  error
		want probeOutcome
	}{
		{nil, probeAccepted},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, probeRefused},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), probeInconclusive},
		{&net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, probeInconclusive},
		{os.NewSyscallError("connect", syscall.EHOSTUNREACH), probeInconclusive},
		{errors.New("tls: handshake failure"), probeInconclusive},
	} {
		if got := classifyProbe(c.err); got != c.want {
			t.Errorf("classifyProbe(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// Refusals confirm a death only in a run of at least three spanning the
// window, from a listener seen up or registered before the startup grace;
// an accepted or inconclusive probe (a timeout: frozen, partitioned)
// starts over.
func TestRefusalsConfirmDeath(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct {
		name         string
		registeredAt time.Time
		probes       []probeOutcome
		every        int // ms between probes
		want         int // index of the probe that confirms; -1: none
	}{
		{"seen up, then refused", at(-60_000), []probeOutcome{probeAccepted, probeRefused, probeRefused, probeRefused, probeRefused}, 200, 3},
		{"old registration, refused from the start", at(-60_000), []probeOutcome{probeRefused, probeRefused, probeRefused}, 200, 2},
		{"three refusals too quick", at(-60_000), []probeOutcome{probeRefused, probeRefused, probeRefused, probeRefused}, 150, 3},
		{"timeouts are no evidence", at(-60_000), []probeOutcome{probeInconclusive, probeInconclusive, probeInconclusive, probeInconclusive}, 200, -1},
		{"a timeout breaks the run", at(-60_000), []probeOutcome{probeRefused, probeRefused, probeInconclusive, probeRefused, probeRefused}, 200, -1},
		{"an accept breaks the run", at(-60_000), []probeOutcome{probeRefused, probeRefused, probeAccepted, probeRefused, probeRefused, probeRefused}, 200, 5},
		{"starting broker, never seen up", at(0), []probeOutcome{probeRefused, probeRefused, probeRefused, probeRefused, probeRefused}, 200, -1},
		{"starting broker, grace over", at(0), []probeOutcome{probeRefused, probeRefused, probeRefused}, 2500, 2},
		{"starting broker seen up", at(0), []probeOutcome{probeAccepted, probeRefused, probeRefused, probeRefused}, 200, 3},
	} {
		r := &refusals{registeredAt: c.registeredAt, fenceAfter: 400 * time.Millisecond}
		got := -1
		for i, o := range c.probes {
			if r.observe(o, at(i*c.every)) {
				got = i
				break
			}
		}
		if got != c.want {
			t.Errorf("%s: confirmed at probe %d, want %d", c.name, got, c.want)
		}
	}
}

// A broker's listener that stops accepting (nothing listens: the kernel
// refuses) gets the broker fenced; listening and answering ApiVersions
// again at the same address unfences it. A live listener is never fenced.
func TestProbeFencesAGoneListenerAndUnfencesItsReturn(t *testing.T) {
	events := make(chan controller.Event, 8)
	report := func(ev controller.Event, quit <-chan struct{}) {
		select {
		case events <- ev:
		case <-quit:
		}
	}
	cfg := testSenderConfig()
	cfg.ProbeInterval, cfg.FenceAfter = 20*time.Millisecond, 100*time.Millisecond
	seen := &sightings{}
	s := newSenders(cfg, testLogger(t), &sendMetrics{}, report, seen)
	defer s.stopAll()
	f := newFakeBroker(t, 0, nil)
	b := f.broker(1)
	b.Epoch = time.Now().UnixMilli() // just registered: only a sighting lifts the grace
	frozen := newFakeBroker(t, 0, nil)
	frozen.silent = true
	s.setBrokers([]controller.Broker{b, frozen.broker(2)})

	harness.WaitFor(t, "a probe sees broker 1 up", 5*time.Second, func() bool { return seen.seen(1, b.Epoch) })
	addr := f.ln.Addr().String()
	f.ln.Close()
	select {
	case ev := <-events:
		if ev != (controller.BrokerFenced{Broker: 1, Epoch: b.Epoch}) {
			t.Fatalf("got %#v, want broker 1 fenced", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("broker 1 not fenced after its listener closed")
	}
	newFakeBrokerAt(t, addr, 0, nil)
	select {
	case ev := <-events:
		if ev != (controller.BrokerUnfenced{Broker: 1, Epoch: b.Epoch}) {
			t.Fatalf("got %#v, want broker 1 unfenced", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("broker 1 not unfenced after it listened again")
	}
	select {
	case ev := <-events:
		t.Fatalf("unexpected %#v", ev)
	case <-time.After(10 * cfg.ProbeInterval):
	}
}
