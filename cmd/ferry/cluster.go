package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/cluster"
	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/wire"
	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/quota"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterNode is this broker's membership of a cluster coordinated by
// ZooKeeper (--zookeeper): its session, the cluster's metadata, its
// registration under /brokers/ids.
type clusterNode struct {
	zk       *zookeeper.Client
	meta     *zookeeper.Metadata
	logger   *slog.Logger
	brokerID int32
	// sessions forwards the session's events to the controller driver.
	sessions chan zookeeper.SessionEvent
	ctl      *cluster.Controller
	stopCtl  context.CancelFunc
	ctlDone  chan struct{}
	// configChanges follows /config/changes from before the broker opened
	// its topics, so no change made meanwhile is missed.
	configChanges *zookeeper.Watch[[]string]
	configCursor  *zookeeper.ConfigChanges
	// users is the cluster's SCRAM credentials, read at join and
	// refreshed by followConfigChanges; usersStale: some could not be
	// read, so every change re-reads them all until that succeeds (only
	// followConfigChanges' goroutine touches it once started).
	users      *auth.ZKUserStore
	usersStale bool
	// quotas is the cluster's client quotas, read at join and refreshed
	// by followConfigChanges like users (quotasStale likewise).
	quotas      *quota.Manager
	quotasStale bool
	// disconnected: the ZooKeeper session has no connection now.
	disconnected atomic.Bool
	// session feeds the leaders' self-fencing (replication/fence) with
	// the session's events.
	session *replication.SessionGuard
	// interBroker is inter.broker.listener.name; interDial connects to it
	// (nil: plain TCP).
	interBroker string
	interDial   wire.DialFunc
	// peers maps each registered broker to its HTTP gateway, following
	// /brokers/ids.
	peers atomic.Pointer[map[int32]string]
}

// followPeers keeps peers current until the ZooKeeper client closes.
func (n *clusterNode) followPeers() {
	w := n.zk.WatchBrokers()
	go func() {
		for bs := range w.C {
			m := make(map[int32]string, len(bs))
			for _, b := range bs {
				if b.HTTP != "" {
					m[b.ID] = b.HTTP
				}
			}
			n.peers.Store(&m)
		}
	}()
}

// peerHTTP is a broker's HTTP gateway, as it registered it.
func (n *clusterNode) peerHTTP(id int32) (string, bool) {
	m := n.peers.Load()
	if m == nil {
		return "", false
	}
	addr, ok := (*m)[id]
	return addr, ok
}

// joinCluster connects to ZooKeeper, takes (or creates) the cluster id,
// checks the data dir belongs to this cluster and broker, and points the
// broker's config at the cluster's metadata.
func joinCluster(s *serveSettings, logger *slog.Logger) (*clusterNode, error) {
	zk, err := zookeeper.Open(s.zookeeper, s.zkSessionTimeout, logger)
	if err != nil {
		return nil, fmt.Errorf("--zookeeper %s: %w", s.zookeeper, err)
	}
	n := &clusterNode{zk: zk, logger: logger.With("component", "cluster"), brokerID: s.broker.BrokerID,
		sessions: make(chan zookeeper.SessionEvent, 64), interBroker: s.interBroker, interDial: s.broker.InterBrokerDial,
		session: replication.NewSessionGuard(s.zkSessionTimeout)}
	s.broker.ZooKeeperSession = n.session
	go n.watchSession()
	clusterID, err := zk.GetOrCreateClusterID(replication.NewTopicID())
	if err != nil {
		zk.Close()
		return nil, fmt.Errorf("cluster id: %w", err)
	}
	n.configChanges = zk.WatchConfigChanges()
	names, ok := <-n.configChanges.C
	if !ok {
		zk.Close()
		return nil, fmt.Errorf("--zookeeper %s: closed while reading /config/changes", s.zookeeper)
	}
	n.configCursor = zk.ConfigChangesAfter(names)
	if n.users, err = auth.OpenZKUserStore(zk, n.logger); err != nil {
		n.logger.Warn("reading the users' credentials", "err", err) // the readable ones are served
		n.usersStale = true
	}
	n.quotas = quota.NewManager()
	if err := n.quotas.Load(quota.NewZKStore(zk)); err != nil {
		n.logger.Warn("reading the client quotas", "err", err) // the readable ones hold
		n.quotasStale = true
	}
	n.meta = zookeeper.NewMetadata(zk, clusterID)
	s.broker.Metadata, s.broker.ISRStore, s.broker.AwaitRoles = n.meta, n.meta, true
	s.broker.ProducerIDs = zk
	s.broker.BrokerConfigs = zk
	n.logger.Info("joined cluster", "cluster_id", clusterID, "zookeeper", s.zookeeper)
	return n, nil
}

// watchSession logs the session's changes and feeds them to the leaders'
// self-fencing; the zookeeper client registers the broker again after an
// expiry by itself.
func (n *clusterNode) watchSession() {
	defer close(n.sessions)
	for ev := range n.zk.Events() {
		n.disconnected.Store(ev.State == zookeeper.Disconnected || ev.State == zookeeper.Expired)
		attrs := []any{"state", ev.State.String(), "session", ev.SessionID, "err", ev.Err}
		switch ev.State {
		case zookeeper.Disconnected:
			last := n.zk.LastContact()
			if last.IsZero() {
				last = time.Now()
			}
			n.session.Disconnected(last)
			attrs = append(attrs, "last_contact_ago", time.Since(last).Round(time.Millisecond))
		case zookeeper.Expired:
			n.session.Expired()
		case zookeeper.Reconnected, zookeeper.NewSession:
			n.session.Connected()
		}
		n.logger.Info("zookeeper session", attrs...)
		n.sessions <- ev
	}
}

// followConfigChanges applies topic config changes made through any broker
// to this broker's replicas (Kafka's DynamicConfigManager), until the
// ZooKeeper client closes.
func (n *clusterNode) followConfigChanges(b *server.Broker) {
	if err := b.ReloadBrokerConfigs(); err != nil {
		n.logger.Warn("reading the dynamic broker configs", "err", err)
	}
	go func() {
		for names := range n.configChanges.C {
			changed, err := n.configCursor.Read(names)
			if err != nil {
				// The unread ones are read with the next change.
				n.logger.Warn("reading config change notifications", "err", err)
			}
			if changed.Brokers {
				if err := b.ReloadBrokerConfigs(); err != nil {
					n.logger.Warn("applying changed broker configs", "err", err)
				}
			}
			n.reloadUsers(changed.Users)
			n.reloadQuotas(changed.Quotas)
			for _, t := range changed.Topics {
				if err := b.ReloadTopicConfigs(t); err != nil {
					n.logger.Warn("applying a topic's changed configs", "topic", t, "err", err)
				}
			}
		}
	}()
}

// reloadUsers applies the credentials of the users a change names, or of
// everyone while an earlier read failed.
func (n *clusterNode) reloadUsers(changed []string) {
	if n.usersStale {
		if err := n.users.ReloadAll(); err != nil {
			n.logger.Warn("reading the users' credentials", "err", err)
			return
		}
		n.usersStale = false
		return
	}
	if len(changed) == 0 {
		return
	}
	if err := n.users.Reload(changed); err != nil {
		n.logger.Warn("applying changed user credentials", "err", err)
	}
}

// reloadQuotas applies the quotas of the entities a change names, or
// every entity's while an earlier read failed.
func (n *clusterNode) reloadQuotas(changed []string) {
	if n.quotasStale {
		if err := n.quotas.Load(quota.NewZKStore(n.zk)); err != nil {
			n.logger.Warn("reading the client quotas", "err", err)
			return
		}
		n.quotasStale = false
		return
	}
	if err := n.quotas.Reload(quota.NewZKStore(n.zk), changed); err != nil {
		n.logger.Warn("applying changed client quotas", "err", err)
	}
}

// runController campaigns for /controller and acts as the controller
// whenever this broker wins, until stopController.
func (n *clusterNode) runController(logger *slog.Logger, m *metrics.Metrics, s serveSettings, dial wire.DialFunc) error {
	cfg := cluster.Config{BrokerID: n.brokerID, ZK: n.zk, SessionEvents: n.sessions, Logger: logger,
		MaxLeaderImbalance: s.leaderImbalancePercent, Listener: s.interBroker, Dial: dial}
	if s.autoLeaderRebalance {
		cfg.LeaderImbalanceCheckInterval = s.leaderImbalanceInterval
	}
	ctl, err := cluster.New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.ctl, n.stopCtl, n.ctlDone = ctl, cancel, make(chan struct{})
	go func() {
		defer close(n.ctlDone)
		if err := ctl.Run(ctx); err != nil && ctx.Err() == nil {
			n.logger.Error("controller stopped", "err", err)
		}
	}()
	if m != nil {
		go reportControllerActive(ctx, ctl, m)
	}
	return nil
}

// reportControllerActive keeps ferry_controller_active (Kafka's
// ActiveControllerCount) following the driver, once a second.
func reportControllerActive(ctx context.Context, ctl *cluster.Controller, m *metrics.Metrics) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		m.SetControllerActive(ctl.Status().Active)
		select {
		case <-ctx.Done():
			m.SetControllerActive(false)
			return
		case <-tick.C:
		}
	}
}

// controlledShutdown is the controller's side of a broker's ControlledShutdown.
func (n *clusterNode) controlledShutdown(ctx context.Context, broker int32, brokerEpoch int64) ([]controller.TopicPartition, error) {
	return n.ctl.ControlledShutdown(ctx, broker, brokerEpoch)
}

// shutdownControlled asks the controller to move this broker's
// leaderships away before it stops (Kafka's controlled.shutdown.enable),
// retrying while partitions remain, for at most maxWait.
func (n *clusterNode) shutdownControlled(maxWait time.Duration) {
	deadline := time.Now().Add(maxWait)
	for attempt := 1; time.Now().Before(deadline); attempt++ {
		if n.disconnected.Load() {
			// No controller can be found, nor move anything, without
			// ZooKeeper; the followers take over once this session expires.
			n.logger.Warn("controlled shutdown skipped: ZooKeeper is unreachable")
			return
		}
		remaining, err := n.askBounded(time.Until(deadline))
		if err == nil && remaining == 0 {
			n.logger.Info("controlled shutdown: no partition led here any more", "attempts", attempt)
			return
		}
		n.logger.Warn("controlled shutdown not complete yet", "attempt", attempt, "remaining", remaining, "err", err)
		time.Sleep(min(time.Second, time.Until(deadline)))
	}
	n.logger.Warn("controlled shutdown gave up; stopping with leaderships the controller did not move")
}

// askBounded is askControlledShutdown cut off at timeout: a ZooKeeper
// read waits for a session that may not come back.
func (n *clusterNode) askBounded(timeout time.Duration) (int, error) {
	type answer struct {
		remaining int
		err       error
	}
	done := make(chan answer, 1)
	go func() {
		remaining, err := n.askControlledShutdown(timeout)
		done <- answer{remaining, err}
	}()
	select {
	case a := <-done:
		return a.remaining, a.err
	case <-time.After(timeout):
		return 0, fmt.Errorf("no answer within %v", timeout)
	}
}

func (n *clusterNode) askControlledShutdown(timeout time.Duration) (int, error) {
	id, err := n.zk.Controller()
	if err != nil {
		return 0, fmt.Errorf("find the controller: %w", err)
	}
	if id == n.brokerID {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		remaining, err := n.ctl.ControlledShutdown(ctx, n.brokerID, -1)
		return len(remaining), err
	}
	info, err := n.zk.Broker(id)
	if err != nil {
		return 0, fmt.Errorf("controller %d's endpoint: %v", id, err)
	}
	i := slices.IndexFunc(info.Endpoints, func(e zookeeper.Endpoint) bool { return e.Listener == n.interBroker })
	if i < 0 {
		return 0, fmt.Errorf("controller %d has no endpoint on the inter-broker listener %s", id, n.interBroker)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ep := info.Endpoints[i]
	c, err := wire.DialWith(ctx, n.interDial, net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), "ferry-controlled-shutdown", timeout, 1<<20)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	req := kmsg.NewPtrControlledShutdownRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = n.brokerID, -1
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	if err := c.RoundTrip(req, resp, timeout); err != nil {
		return 0, err
	}
	if resp.ErrorCode != 0 {
		return len(resp.PartitionsRemaining), kerr.ErrorForCode(resp.ErrorCode)
	}
	return len(resp.PartitionsRemaining), nil
}

// controllerStopWait bounds the wait for the controller driver at
// shutdown: with ZooKeeper unreachable its writes block for a session
// timeout each; closing the session (next) ends them.
const controllerStopWait = 5 * time.Second

// stopController resigns (so another broker is elected at once) and
// waits for the driver, a bounded time.
func (n *clusterNode) stopController() {
	if n.stopCtl == nil {
		return
	}
	n.stopCtl()
	select {
	case <-n.ctlDone:
	case <-time.After(controllerStopWait):
		n.logger.Warn("the controller did not stop in time; closing the ZooKeeper session under it", "waited", controllerStopWait)
	}
}

// register creates /brokers/ids/<id> with every advertised Kafka listener
// (Kafka's endpoints and listener_security_protocol_map).
func (n *clusterNode) register(s serveSettings) error {
	eps, err := s.endpoints()
	if err != nil {
		return err
	}
	info := zookeeper.BrokerInfo{ID: s.broker.BrokerID, Rack: s.brokerRack, JMXPort: -1, Timestamp: time.Now().UnixMilli(), HTTP: s.advertisedHTTPAddr,
		Endpoints: eps, Features: supportedFeatures(s)}
	// A broker restarted right after a crash finds its old session's
	// registration still there until ZooKeeper expires that session: it
	// waits for the expiry rather than fail (Kafka's broker exits).
	deadline := time.Now().Add(2*s.zkSessionTimeout + 2*time.Second)
	for {
		err := n.zk.Register(info)
		if err == nil {
			break
		}
		if !errors.Is(err, zookeeper.ErrBrokerIDTaken) || time.Now().After(deadline) {
			return fmt.Errorf("register broker %d: %w", s.broker.BrokerID, err)
		}
		n.logger.Warn("broker id still registered by a previous session; waiting for it to expire", "err", err)
		time.Sleep(500 * time.Millisecond)
	}
	n.logger.Info("registered", "endpoints", fmt.Sprint(eps), "rack", s.brokerRack)
	return nil
}

func (n *clusterNode) close() {
	if err := n.zk.Close(); err != nil {
		n.logger.Warn("zookeeper close", "err", err)
	}
}
