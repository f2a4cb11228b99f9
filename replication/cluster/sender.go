package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/wire"
)

// The versions sent: the newest each kmsg encodes that carries nothing
// the controller lacks (LeaderAndIsr v5 wants topic ids, UpdateMetadata v7
// too; the decision code does not carry them yet).
const (
	leaderAndIsrVersion   = 4
	updateMetadataVersion = 6
	stopReplicaVersion    = 3
	maxResponseFrame      = 16 << 20
)

// senders is the controller's ControllerChannelManager: one queue and one
// goroutine (a RequestSendThread) per live broker. It lives for one
// controller epoch; the driver's goroutine alone calls its methods.
type senders struct {
	cfg     *Config
	log     *slog.Logger
	byID    map[int32]*brokerSender
	metrics *sendMetrics
	// report takes the liveness probes' BrokerFenced and BrokerUnfenced
	// to the term's loop, giving up when quit (the sender's) closes; nil:
	// no probing.
	report reportFunc
	seen   *sightings
}

// reportFunc hands ev to the term's loop unless quit closes first.
type reportFunc func(ev controller.Event, quit <-chan struct{})

func newSenders(cfg *Config, log *slog.Logger, m *sendMetrics, report reportFunc, seen *sightings) *senders {
	return &senders{cfg: cfg, log: log, byID: map[int32]*brokerSender{}, metrics: m, report: report, seen: seen}
}

// setBrokers starts a sender for each new broker, points a moved one at
// its new address, and stops (dropping what it had queued) those that
// left /brokers/ids or registered again with a new epoch, as Kafka's
// removeBroker does: a returning broker gets its roles anew.
func (s *senders) setBrokers(live []controller.Broker) {
	seen := map[int32]bool{}
	for _, b := range live {
		seen[b.ID] = true
		addr := brokerAddr(b, s.cfg.Listener)
		bs, ok := s.byID[b.ID]
		if ok && bs.epoch != b.Epoch {
			bs.stop()
			ok = false
		}
		if !ok {
			s.byID[b.ID] = startBrokerSender(s.cfg, s.log, s.metrics, b.ID, b.Epoch, addr, s.probes(b.ID), s.seen)
			continue
		}
		bs.setAddr(addr)
	}
	for id, bs := range s.byID {
		if !seen[id] {
			bs.stop()
			delete(s.byID, id)
		}
	}
}

// enqueue queues req for broker; a broker without a sender (not live) is
// skipped, as Kafka drops requests to brokers it does not know.
func (s *senders) enqueue(broker int32, req queued) {
	bs, ok := s.byID[broker]
	if !ok {
		// Rare and worth seeing: the decision code addressed a broker the
		// senders do not know (a stall of its partitions would follow).
		s.log.Warn("dropping a request to a broker that is not live", "broker", broker, "request", req.kind())
		return
	}
	bs.enqueue(req)
}

// probes is the report function for broker id's listener probes, nil for
// none: probing is off, or id is this broker (the controller is alive).
func (s *senders) probes(id int32) reportFunc {
	if s.report == nil || s.cfg.ProbeInterval < 0 || id == s.cfg.BrokerID {
		return nil
	}
	return s.report
}

func (s *senders) stopAll() {
	for id, bs := range s.byID {
		bs.stop()
		delete(s.byID, id)
	}
}

// queuedCount is the number of requests waiting, over all brokers.
func (s *senders) queuedCount() int {
	n := 0
	for _, bs := range s.byID {
		n += bs.queueLen()
	}
	return n
}

// brokerSender sends one broker its requests in order, one at a time,
// retrying each with backoff until delivered or stopped.
type brokerSender struct {
	cfg     *Config
	log     *slog.Logger
	metrics *sendMetrics
	id      int32
	epoch   int64
	wake    chan struct{} // capacity 1: something was queued or the address moved
	quit    chan struct{}
	done    chan struct{}
	// watchDone closes when the listener probe (liveness.go) has stopped;
	// seen is the driver's sightings of listeners up.
	watchDone chan struct{}
	seen      *sightings

	mu struct {
		sync.Mutex
		addr    string
		queue   []queued
		dropped int
		conn    *wire.Conn // the open connection, for stop to cut
	}
}

// startBrokerSender starts the broker's sender and, when report is not
// nil, its listener probe (liveness.go).
func startBrokerSender(cfg *Config, log *slog.Logger, m *sendMetrics, id int32, epoch int64, addr string, report reportFunc, seen *sightings) *brokerSender {
	bs := &brokerSender{cfg: cfg, log: log.With("to_broker", id), metrics: m, id: id, epoch: epoch, seen: seen,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}), watchDone: make(chan struct{})}
	bs.mu.addr = addr
	go bs.run()
	if report != nil {
		go bs.watchListener(report)
	} else {
		close(bs.watchDone)
	}
	return bs
}

func (bs *brokerSender) setAddr(addr string) {
	bs.mu.Lock()
	moved := bs.mu.addr != addr
	bs.mu.addr = addr
	bs.mu.Unlock()
	if moved {
		bs.poke()
	}
}

// enqueue appends req, merged into the last queued request when both are
// of a kind that merges (see queued.merge). The queue is bounded: a broker
// that stays unreachable while requests of alternating kinds pile up loses
// the oldest ones past MaxQueuedRequests, with an error logged; its
// partitions are resent in full when it registers again.
func (bs *brokerSender) enqueue(req queued) {
	bs.mu.Lock()
	q := bs.mu.queue
	if n := len(q); n > 0 && q[n-1].merge(req) {
		bs.mu.Unlock()
		bs.poke()
		return
	}
	q = append(q, req)
	over := len(q) - bs.cfg.MaxQueuedRequests
	if over > 0 {
		clear(q[:over])
		q = q[over:]
		bs.mu.dropped += over
	}
	bs.mu.queue = q
	dropped := bs.mu.dropped
	bs.mu.Unlock()
	if over > 0 && dropped&(dropped-1) == 0 { // the 1st, 2nd, 4th, … drop: the log stays small
		bs.log.Error("controller request queue full; dropping the oldest requests", "dropped_total", dropped, "limit", bs.cfg.MaxQueuedRequests)
	}
	bs.poke()
}

func (bs *brokerSender) poke() {
	select {
	case bs.wake <- struct{}{}:
	default:
	}
}

func (bs *brokerSender) queueLen() int {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return len(bs.mu.queue)
}

// next takes the head of the queue; a request taken is no longer merged
// into, so what goes on the wire is what was taken.
func (bs *brokerSender) next() (queued, string, bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if len(bs.mu.queue) == 0 {
		return nil, bs.mu.addr, false
	}
	req := bs.mu.queue[0]
	bs.mu.queue[0] = nil
	bs.mu.queue = bs.mu.queue[1:]
	return req, bs.mu.addr, true
}

// stop ends the sender at once: closing its connection cuts short a
// request the broker does not answer (a frozen broker would otherwise
// hold the controller's loop for RequestTimeout).
func (bs *brokerSender) stop() {
	close(bs.quit)
	bs.mu.Lock()
	if bs.mu.conn != nil {
		bs.mu.conn.Close()
	}
	bs.mu.Unlock()
	<-bs.done
	<-bs.watchDone
}

// setConn records the open connection; false when stop came first (the
// connection is then closed here).
func (bs *brokerSender) setConn(c *wire.Conn) bool {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	select {
	case <-bs.quit:
		if c != nil {
			c.Close()
		}
		return false
	default:
	}
	bs.mu.conn = c
	return true
}

func (bs *brokerSender) run() {
	defer close(bs.done)
	var c *wire.Conn
	var connAddr string
	var versions apiVersions
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for {
		req, addr, ok := bs.next()
		if !ok {
			select {
			case <-bs.wake:
				continue
			case <-bs.quit:
				return
			}
		}
		for attempt := 0; ; attempt++ {
			if c != nil && connAddr != addr {
				c.Close()
				c = nil
			}
			var err error
			if c == nil {
				c, versions, err = bs.connect(addr)
				connAddr = addr
				if errors.Is(err, errStopped) {
					return
				}
			}
			if err == nil {
				if !versions.serves(req) {
					bs.log.Error("broker does not serve this controller request; dropped", "request", req.kind(), "version", req.version())
					break
				}
				err = bs.send(c, req)
				if err != nil {
					c.Close()
					c = nil
				}
			}
			if err == nil {
				break
			}
			bs.log.Warn("controller request not delivered; retrying", "request", req.kind(), "addr", addr, "attempt", attempt+1, "err", err)
			if !bs.backoff(attempt) {
				return
			}
			bs.mu.Lock()
			addr = bs.mu.addr
			bs.mu.Unlock()
		}
	}
}

var errStopped = errors.New("sender stopped")

// apiVersions is what a broker answered ApiVersions with: each key's
// highest version.
type apiVersions map[int16]int16

// serves reports whether the broker takes req at the version the driver
// encodes. One it does not serve could never be delivered, and would
// hold up every request behind it.
func (v apiVersions) serves(req queued) bool {
	max, ok := v[req.key()]
	return ok && req.version() <= max
}

// connect dials and asks the broker's API versions, as Kafka's
// NetworkClient does on every new connection.
func (bs *brokerSender) connect(addr string) (*wire.Conn, apiVersions, error) {
	c, err := bs.dial(addr)
	if err != nil {
		return nil, nil, err
	}
	if !bs.setConn(c) {
		return nil, nil, errStopped
	}
	req := kmsg.NewPtrApiVersionsRequest() // v0: the one every broker answers
	resp := req.ResponseKind()
	if err := c.RoundTrip(req, resp, bs.cfg.RequestTimeout); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("ApiVersions: %w", err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 {
		c.Close()
		return nil, nil, fmt.Errorf("ApiVersions: error code %d", av.ErrorCode)
	}
	versions := apiVersions{}
	for _, k := range av.ApiKeys {
		versions[k.ApiKey] = k.MaxVersion
	}
	return c, versions, nil
}

func (bs *brokerSender) dial(addr string) (*wire.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bs.cfg.RequestTimeout)
	defer cancel()
	go func() { // a stop cuts a dial short
		select {
		case <-bs.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	return wire.DialWith(ctx, bs.cfg.Dial, addr, "ferry-controller-"+strconv.Itoa(int(bs.cfg.BrokerID)), bs.cfg.RequestTimeout, maxResponseFrame)
}

// backoff waits RetryBackoff doubled per attempt, up to MaxRetryBackoff;
// false when stopped meanwhile.
func (bs *brokerSender) backoff(attempt int) bool {
	d := bs.cfg.RetryBackoff << min(attempt, 10)
	d = min(d, bs.cfg.MaxRetryBackoff)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-bs.quit:
		return false
	}
}

// send delivers one request and logs the errors its answer carries: a
// broker that refuses a partition has been told; resending would not
// change its mind (Kafka logs them too).
func (bs *brokerSender) send(c *wire.Conn, q queued) error {
	req := q.request(bs.cfg.BrokerID, bs.cfg.Listener)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	start := time.Now()
	if err := c.RoundTrip(req, resp, bs.cfg.RequestTimeout); err != nil {
		return err
	}
	bs.metrics.delivered(q.kind(), bs.id)
	bs.log.Debug("controller request delivered", "request", q.kind(), "took", time.Since(start))
	for _, e := range responseErrors(resp) {
		bs.log.Warn("broker refused part of a controller request", "request", q.kind(), "what", e.what, "error_code", e.code)
	}
	if sr, ok := q.(*stopReplica); ok && sr.answered != nil {
		sr.answered(bs.id, sr.ControllerEpoch, resp.(*kmsg.StopReplicaResponse))
	}
	return nil
}

// brokerAddr is the host:port the controller connects to.
func brokerAddr(b controller.Broker, listener string) string {
	host, port := endpoint(b, listener)
	if port < 0 {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// sendMetrics counts deliveries per request kind and broker, for tests
// and for the broker's metrics later.
type sendMetrics struct {
	mu       sync.Mutex
	delivers map[deliveryKey]int
}

type deliveryKey struct {
	kind   string
	broker int32
}

func (m *sendMetrics) delivered(kind string, broker int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.delivers == nil {
		m.delivers = map[deliveryKey]int{}
	}
	m.delivers[deliveryKey{kind, broker}]++
}

// count is the deliveries of kind to broker (-1: to any broker).
func (m *sendMetrics) count(kind string, broker int32) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, v := range m.delivers {
		if k.kind == kind && (broker < 0 || k.broker == broker) {
			n += v
		}
	}
	return n
}
