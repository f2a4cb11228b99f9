package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/wire"
	"github.com/ferry-mq/ferry/replication/zookeeper"
)

// Config configures a Controller. Zero values are defaults.
type Config struct {
	// BrokerID is this broker's id, the one it campaigns for /controller
	// with and puts in every request's controller id.
	BrokerID int32
	// ZK is this broker's ZooKeeper session.
	ZK *zookeeper.Client
	// SessionEvents is where the driver learns of session expiry. The
	// broker owns ZK.Events and forwards it here; nil: the driver drains
	// ZK.Events itself (then nobody else may).
	SessionEvents <-chan zookeeper.SessionEvent
	Logger        *slog.Logger
	// Listener is the endpoint (listener name) the controller connects to
	// on each broker; "": each broker's first endpoint.
	Listener string
	// Dial connects to that listener (nil: plain TCP; TLS when it is SSL).
	Dial wire.DialFunc
	// RequestTimeout bounds a dial and one request's round trip
	// (controller.socket.timeout.ms). Default 30 s.
	RequestTimeout time.Duration
	// RetryBackoff is the first wait before an undelivered request is sent
	// again, doubled per attempt up to MaxRetryBackoff. Defaults 100 ms, 5 s.
	RetryBackoff, MaxRetryBackoff time.Duration
	// ProbeInterval is how often the controller connects to each other
	// registered broker's listener, and every broker to the controller's,
	// looking for evidence that its process is gone (see the package doc,
	// Fencing). Default 200 ms; negative: no probing, a broker is dead
	// only once its session expires.
	ProbeInterval time.Duration
	// FenceAfter is how long a listener must refuse every connection (at
	// least 3 probes in a row) before its broker is fenced or, for the
	// controller, deposed. Default 400 ms.
	FenceAfter time.Duration
	// MaxQueuedRequests bounds each broker's queue, counted after merging
	// (see the package doc, Memory). Default 1024.
	MaxQueuedRequests int
	// MaxConcurrentWrites bounds the partition state writes out at once
	// (they are pipelined on the ZooKeeper session). Default 32.
	MaxConcurrentWrites int
	// Now is the clock for /controller's timestamp; default time.Now.
	Now func() time.Time
	// LeaderImbalanceCheckInterval is leader.imbalance.check.interval.seconds
	// when auto.leader.rebalance.enable is on (0: off); MaxLeaderImbalance
	// is leader.imbalance.per.broker.percentage (default 10).
	LeaderImbalanceCheckInterval time.Duration
	MaxLeaderImbalance           int
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.MaxLeaderImbalance <= 0 {
		c.MaxLeaderImbalance = 10
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 100 * time.Millisecond
	}
	if c.MaxRetryBackoff <= 0 {
		c.MaxRetryBackoff = 5 * time.Second
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = 200 * time.Millisecond
	}
	if c.FenceAfter <= 0 {
		c.FenceAfter = 400 * time.Millisecond
	}
	if c.MaxQueuedRequests <= 0 {
		c.MaxQueuedRequests = 1024
	}
	if c.MaxConcurrentWrites <= 0 {
		c.MaxConcurrentWrites = 32
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports a Config that cannot run.
func (c *Config) Validate() error {
	if c.ZK == nil {
		return errors.New("cluster: Config.ZK is nil")
	}
	if c.BrokerID < 0 {
		return fmt.Errorf("cluster: broker id %d is negative", c.BrokerID)
	}
	return nil
}

// Controller is the driver of one broker's controller: it campaigns for
// /controller and, while it holds it, owns a controller.Controller. Run it
// once; its other methods are safe for concurrent use.
type Controller struct {
	cfg  Config
	log  *slog.Logger
	asks chan shutdownAsk
	// elections carries ElectLeaders asks to the term's loop.
	elections chan electionAsk
	reassigns chan reassignAsk
	electID   atomic.Uint64
	metrics   sendMetrics

	active atomic.Bool
	epoch  atomic.Int32
	terms  atomic.Int32
	// stateWrites counts the state znode writes that applied.
	stateWrites atomic.Int64
	// seenUp: registrations (broker → epoch) whose listener a probe of
	// this driver found accepting, in any term or campaign: their
	// refusals count at once, without the startup grace (liveness.go).
	seenUp sightings
	// deposed: registrations of controllers this broker deposed
	// (liveness.go); one elected again is not deposed again.
	deposed sightings
}

// reassignAsk is an AlterPartitionReassignments (partitions, answer) or a
// ListPartitionReassignments (list).
type reassignAsk struct {
	partitions map[controller.TopicPartition][]int32
	answer     chan controller.AnswerReassignments // capacity 1
	list       chan map[controller.TopicPartition]controller.Assignment
}

type electionAsk struct {
	typ        controller.ElectionType
	partitions []controller.TopicPartition
	answer     chan controller.AnswerLeaderElection // capacity 1
}

type shutdownAsk struct {
	broker      int32
	brokerEpoch int64
	answer      chan controller.AnswerControlledShutdown // capacity 1
}

// New checks cfg and returns a driver that does nothing until Run.
func New(cfg Config) (*Controller, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg, log: cfg.Logger.With("component", "controller", "broker", cfg.BrokerID),
		asks: make(chan shutdownAsk), elections: make(chan electionAsk),
		reassigns: make(chan reassignAsk)}, nil
}

// RunController runs a driver for cfg until ctx ends.
func RunController(ctx context.Context, cfg Config) error {
	c, err := New(cfg)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// Status is what a driver is doing.
type Status struct {
	// Active: this broker is the controller now.
	Active bool
	// Epoch is the controller epoch of its last term (0: never elected).
	Epoch int32
	// Terms counts the times it was elected.
	Terms int
}

// Status reports whether this broker is the controller.
func (c *Controller) Status() Status {
	return Status{Active: c.active.Load(), Epoch: c.epoch.Load(), Terms: int(c.terms.Load())}
}

// ControlledShutdown is Kafka's ControlledShutdown, for the broker's
// handler: it asks the controller to move leadership off broker and
// returns the partitions it still leads (empty: the broker may stop; else
// it retries later). The answer comes once the moves are written to
// ZooKeeper; the LeaderAndIsr requests follow, as in Kafka.
// controller.ErrNotController when this broker is not the controller, or
// stops being it before answering; ErrBrokerNotAvailable for a broker not
// registered. brokerEpoch is -1 (unknown) or the broker's registration
// timestamp (see toBrokers). While Run is not running it waits for ctx.
func (c *Controller) ControlledShutdown(ctx context.Context, broker int32, brokerEpoch int64) ([]controller.TopicPartition, error) {
	ask := shutdownAsk{broker: broker, brokerEpoch: brokerEpoch, answer: make(chan controller.AnswerControlledShutdown, 1)}
	a, ok, err := roundTrip(ctx, c.asks, ask, ask.answer)
	if err != nil || !ok {
		return nil, cmp.Or(err, controller.ErrNotController)
	}
	return a.Remaining, a.Err
}

// roundTrip hands ask to the term's loop (or the campaign, which refuses
// it) on asks and waits for its answer, both bounded by ctx; ok is false
// when the answer channel was closed unanswered.
func roundTrip[A, R any](ctx context.Context, asks chan<- A, ask A, answer <-chan R) (r R, ok bool, err error) {
	select {
	case asks <- ask:
	case <-ctx.Done():
		return r, false, ctx.Err()
	}
	select {
	case r, ok = <-answer:
		return r, ok, nil
	case <-ctx.Done():
		return r, false, ctx.Err()
	}
}

// ElectLeaders is Kafka's ElectLeaders for the broker's handler: it asks
// the controller for preferred or unclean elections of partitions (nil:
// all) and returns each partition's outcome once the elections are
// written (nil: elected; controller.ErrElectionNotNeeded, …).
// controller.ErrNotController when this broker is not the controller.
func (c *Controller) ElectLeaders(ctx context.Context, typ controller.ElectionType, partitions []controller.TopicPartition) (map[controller.TopicPartition]error, error) {
	if !c.active.Load() {
		return nil, controller.ErrNotController
	}
	ask := electionAsk{typ: typ, partitions: partitions, answer: make(chan controller.AnswerLeaderElection, 1)}
	a, ok, err := roundTrip(ctx, c.elections, ask, ask.answer)
	if err != nil || !ok {
		return nil, cmp.Or(err, controller.ErrNotController)
	}
	return a.Results, a.Err
}

// AlterReassignments is Kafka's AlterPartitionReassignments for the
// broker's handler: a target per partition (nil cancels); each answer is
// nil (started, changed or cancelled) or why not, once the topic znodes
// hold the new replica sets.
func (c *Controller) AlterReassignments(ctx context.Context, partitions map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	if !c.active.Load() {
		return nil, controller.ErrNotController
	}
	ask := reassignAsk{partitions: partitions, answer: make(chan controller.AnswerReassignments, 1)}
	a, ok, err := roundTrip(ctx, c.reassigns, ask, ask.answer)
	if err != nil || !ok {
		return nil, cmp.Or(err, controller.ErrNotController)
	}
	return a.Results, a.Err
}

// Reassignments is Kafka's ListPartitionReassignments: the partitions
// being reassigned with their replicas, adding and removing replicas.
func (c *Controller) Reassignments(ctx context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	if !c.active.Load() {
		return nil, controller.ErrNotController
	}
	ask := reassignAsk{list: make(chan map[controller.TopicPartition]controller.Assignment, 1)}
	m, ok, err := roundTrip(ctx, c.reassigns, ask, ask.list)
	if err != nil || !ok {
		return nil, cmp.Or(err, controller.ErrNotController)
	}
	return m, nil
}

// Run campaigns for /controller and acts as controller whenever it wins,
// until ctx ends (then it gives /controller up, so another broker takes
// over at once). It returns nil after ctx ends, or the ZooKeeper client's
// ErrClosed.
func (c *Controller) Run(ctx context.Context) error {
	events := c.cfg.SessionEvents
	if events == nil {
		events = c.cfg.ZK.Events()
	}
	cw := c.cfg.ZK.WatchController()
	defer cw.Stop()
	backoff := c.cfg.RetryBackoff
	for {
		el, err := c.cfg.ZK.TryElect(c.cfg.BrokerID, c.cfg.Now().UnixMilli())
		switch {
		case err == nil:
			backoff = c.cfg.RetryBackoff
			c.lead(ctx, el, cw.C, events)
			if ctx.Err() != nil {
				return nil
			}
			continue
		case errors.Is(err, zookeeper.ErrClosed):
			return err
		case errors.Is(err, zookeeper.ErrNotElected):
			backoff = 0
		default:
			c.log.Warn("controller election failed; retrying", "err", err)
		}
		if !c.awaitVacancy(ctx, cw.C, events, backoff) {
			return nil
		}
		if backoff > 0 {
			backoff = min(2*backoff, c.cfg.MaxRetryBackoff)
		}
	}
}

// awaitVacancy waits until /controller is gone, a new session begins (its
// first act is an election), or retry passes (0: no retry timer); it
// answers controlled-shutdown asks meanwhile, and probes the holder's
// listener to depose a controller whose process is gone. False when ctx
// ended.
func (c *Controller) awaitVacancy(ctx context.Context, cw <-chan zookeeper.ControllerState, events <-chan zookeeper.SessionEvent, retry time.Duration) bool {
	probe := newControllerProbe(c)
	defer probe.stop()
	if id, err := c.cfg.ZK.Controller(); err == nil {
		probe.follow(id)
	}
	var timer <-chan time.Time
	if retry > 0 {
		t := time.NewTimer(retry)
		defer t.Stop()
		timer = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case st, ok := <-cw:
			if !ok || !st.Present {
				return ok || ctx.Err() == nil
			}
			probe.follow(st.ID)
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.State == zookeeper.NewSession {
				return true
			}
		case <-timer:
			return true
		case ask := <-c.asks:
			ask.answer <- controller.AnswerControlledShutdown{Broker: ask.broker, Err: controller.ErrNotController}
		case ask := <-c.elections:
			ask.answer <- controller.AnswerLeaderElection{Err: controller.ErrNotController}
		case ask := <-c.reassigns:
			if ask.list != nil {
				close(ask.list)
			} else {
				ask.answer <- controller.AnswerReassignments{Err: controller.ErrNotController}
			}
		}
	}
}
