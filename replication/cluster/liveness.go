package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/wire"
	"github.com/ferry-mq/ferry/replication/zookeeper"
)

// Liveness probes: evidence that a broker's process is gone, found before
// its ZooKeeper session expires (see the package doc, Fencing).
//
// A connect refused (ECONNREFUSED) by the address a broker registered
// means nothing listens there: a process that died (kill -9 closes its
// sockets, and the kernel refuses what follows) or a broker that closed
// its listener. A timeout or an unreachable host is no such evidence: a
// frozen or partitioned broker looks like that, and it must wait for its
// session to expire.

// probeOutcome is what one connect to a listener found.
type probeOutcome int

const (
	probeAccepted probeOutcome = iota
	probeRefused
	probeInconclusive
)

func classifyProbe(err error) probeOutcome {
	switch {
	case err == nil:
		return probeAccepted
	case errors.Is(err, syscall.ECONNREFUSED):
		// A RST answering the SYN, or an ICMP port unreachable. Nothing
		// else counts, not even a reset: a live broker may send one.
		return probeRefused
	default:
		return probeInconclusive
	}
}

// startupGrace: refusals from a broker registered less long ago, and never
// seen accepting, are no evidence. A starting broker registers before it
// opens its listeners (its logs are opened in between).
const startupGrace = 5 * time.Second

// probeDialTimeout bounds one probe's connect; one that runs out is no
// evidence either way.
const probeDialTimeout = time.Second

// probeAnswerTimeout bounds the dial and the ApiVersions round trip that
// unfence a broker.
const probeAnswerTimeout = 2 * time.Second

// minRefusals is the fewest refused probes, spanning FenceAfter, that
// confirm a listener is gone.
const minRefusals = 3

// refusals judges one broker's probes under one registration. It does no
// I/O: it is fed outcomes and their times.
type refusals struct {
	registeredAt time.Time
	fenceAfter   time.Duration
	seenUp       bool
	first        time.Time // the first refusal of the current run; zero: none
	count        int
}

// sightings remember one registration (broker → epoch) per broker: the
// driver's seenUp (a listener a probe found accepting, in any term or
// campaign: its refusals count at once, without the startup grace) and
// deposed (controllers this broker deposed). Safe for concurrent use; a
// nil *sightings remembers nothing.
type sightings struct {
	mu sync.Mutex
	m  map[int32]int64
}

func (s *sightings) mark(broker int32, epoch int64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[int32]int64{}
	}
	s.m[broker] = epoch
}

func (s *sightings) seen(broker int32, epoch int64) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[broker]
	return ok && e == epoch
}

// observe records one probe's outcome at now and says whether the
// refusals now confirm that nothing listens: at least minRefusals refused
// connects in a row over at least fenceAfter, from a broker that was seen
// accepting under this registration or registered before startupGrace.
// An accepted or inconclusive probe ends the run.
func (r *refusals) observe(o probeOutcome, now time.Time) bool {
	if o != probeRefused {
		r.first, r.count = time.Time{}, 0
		r.seenUp = r.seenUp || o == probeAccepted
		return false
	}
	if r.count == 0 {
		r.first = now
	}
	r.count++
	established := r.seenUp || now.Sub(r.registeredAt) >= startupGrace
	return established && r.count >= minRefusals && now.Sub(r.first) >= r.fenceAfter
}

// listenerProbe probes one broker's listener for the controller's driver.
type listenerProbe struct {
	cfg  *Config
	addr func() string
	quit <-chan struct{}
	// broker and epoch name the registration probed, for seen.
	broker int32
	epoch  int64
	seen   *sightings
}

// awaitGone probes every ProbeInterval until the refusals confirm the
// listener is gone (true) or quit closes (false).
func (p listenerProbe) awaitGone(r *refusals) bool {
	for p.wait() {
		if p.observe(r) {
			return true
		}
	}
	return false
}

// observe is one probe judged by r, remembering a listener seen up.
func (p listenerProbe) observe(r *refusals) bool {
	o := p.connect()
	if o == probeAccepted {
		p.seen.mark(p.broker, p.epoch)
	}
	r.seenUp = r.seenUp || p.seen.seen(p.broker, p.epoch)
	return r.observe(o, p.cfg.Now())
}

// awaitBack probes every ProbeInterval until the listener accepts a
// connection and answers ApiVersions (true) or quit closes (false).
func (p listenerProbe) awaitBack() bool {
	for p.wait() {
		if p.connect() == probeAccepted && p.answers() == nil {
			return true
		}
	}
	return false
}

func (p listenerProbe) wait() bool {
	t := time.NewTimer(p.cfg.ProbeInterval)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.quit:
		return false
	}
}

// connect opens a TCP connection and closes it at once: the kernel's
// answer is what counts, not the broker's.
func (p listenerProbe) connect() probeOutcome {
	addr := p.addr()
	if addr == "" {
		return probeInconclusive
	}
	ctx, cancel := p.context(probeDialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		nc.Close()
	}
	return classifyProbe(err)
}

// context bounds one probe by timeout and by quit, so stopping a sender
// never waits on a broker that accepts and then does not answer.
func (p listenerProbe) context(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-p.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// answers asks the broker ApiVersions over the inter-broker listener (TLS
// and SASL as configured): the broker itself serves it again.
func (p listenerProbe) answers() error {
	timeout := min(p.cfg.RequestTimeout, probeAnswerTimeout)
	ctx, cancel := p.context(2 * timeout)
	defer cancel()
	c, err := wire.DialWith(ctx, p.cfg.Dial, p.addr(), "ferry-controller-"+strconv.Itoa(int(p.cfg.BrokerID)), timeout, maxResponseFrame)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() }) // a stop cuts the round trip short
	defer stop()
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if err := c.RoundTrip(req, resp, timeout); err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions: error code %d", resp.ErrorCode)
	}
	return nil
}

// watchListener is a broker sender's second goroutine: it reports the
// broker fenced once its listener is confirmed gone, then unfenced once it
// answers again, and so on, until the sender stops. Reports go to the
// term's loop through report, which gives up when the term ends.
func (bs *brokerSender) watchListener(report reportFunc) {
	defer close(bs.watchDone)
	p := listenerProbe{cfg: bs.cfg, quit: bs.quit, broker: bs.id, epoch: bs.epoch, seen: bs.seen, addr: func() string {
		bs.mu.Lock()
		defer bs.mu.Unlock()
		return bs.mu.addr
	}}
	r := &refusals{registeredAt: time.UnixMilli(bs.epoch), fenceAfter: bs.cfg.FenceAfter}
	for {
		if !p.awaitGone(r) {
			return
		}
		bs.log.Warn("broker's listener refuses connections: fencing it before its session expires", "addr", p.addr(), "refused", r.count, "over", bs.cfg.Now().Sub(r.first).Round(time.Millisecond))
		report(controller.BrokerFenced{Broker: bs.id, Epoch: bs.epoch}, bs.quit)
		if !p.awaitBack() {
			return
		}
		bs.log.Info("fenced broker answers again under the same registration: unfencing it", "addr", p.addr())
		report(controller.BrokerUnfenced{Broker: bs.id, Epoch: bs.epoch}, bs.quit)
		*r = refusals{registeredAt: r.registeredAt, fenceAfter: r.fenceAfter, seenUp: true}
	}
}

// controllerProbe follows the broker holding /controller while this one
// campaigns, probing its listener, and deposes it (DeposeController) once
// the refusals confirm it is gone: the brokers elect a new controller at
// once instead of after its session expires, and the new controller's own
// probes fence the dead broker. The campaign's goroutine alone calls
// follow and stop.
type controllerProbe struct {
	c      *Controller
	holder int32 // -1: none followed
	quit   chan struct{}
	done   chan struct{}
}

func newControllerProbe(c *Controller) *controllerProbe {
	return &controllerProbe{c: c, holder: -1}
}

// follow probes holder from now on (-1, or this broker: nothing).
func (cp *controllerProbe) follow(holder int32) {
	if holder == cp.holder {
		return
	}
	cp.stop()
	cp.holder = holder
	if holder < 0 || holder == cp.c.cfg.BrokerID || cp.c.cfg.ProbeInterval < 0 {
		return
	}
	cp.quit, cp.done = make(chan struct{}), make(chan struct{})
	go cp.run(holder, cp.quit, cp.done)
}

func (cp *controllerProbe) stop() {
	if cp.quit != nil {
		close(cp.quit)
		<-cp.done
		cp.quit, cp.done = nil, nil
	}
	cp.holder = -1
}

func (cp *controllerProbe) run(holder int32, quit, done chan struct{}) {
	defer close(done)
	cfg, zk := &cp.c.cfg, cp.c.cfg.ZK
	log := cp.c.log.With("controller", holder)
	var addr string
	p := listenerProbe{cfg: cfg, quit: quit, broker: holder, seen: &cp.c.seenUp, addr: func() string { return addr }}
	var r *refusals
	for p.wait() {
		if r == nil { // the holder's registration, read once
			info, err := zk.Broker(holder)
			if err != nil {
				continue // not registered (yet): its session decides
			}
			b := toBrokers([]zookeeper.BrokerInfo{info})[0]
			if cp.c.deposed.seen(holder, b.Epoch) {
				// Deposed once under this registration and elected again:
				// it is alive, and the refusals were this broker's view of
				// the network. Its session decides from now on.
				return
			}
			addr, p.epoch = brokerAddr(b, cfg.Listener), b.Epoch
			r = &refusals{registeredAt: time.UnixMilli(b.Epoch), fenceAfter: cfg.FenceAfter}
		}
		if !p.observe(r) {
			continue
		}
		deposed, err := zk.DeposeController(holder)
		switch {
		case err != nil:
			log.Warn("deposing a controller whose listener refuses connections; retrying", "addr", addr, "err", err)
		case deposed:
			cp.c.deposed.mark(holder, p.epoch)
			log.Warn("controller's listener refuses connections: deposed it before its session expires", "addr", addr, "refused", r.count)
			return
		default:
			return // another controller already; the watch says who
		}
	}
}
