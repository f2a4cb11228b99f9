package zookeeper

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Errors callers tell apart. Every error this package returns wraps one
// of these or a ZooKeeper failure (ErrConnectionLoss).
var (
	// ErrNotFound: the znode does not exist.
	ErrNotFound = errors.New("zookeeper: znode does not exist")
	// ErrBrokerIDTaken: another live session holds /brokers/ids/<id>.
	ErrBrokerIDTaken = errors.New("zookeeper: broker id is registered by another live session")
	// ErrTopicExists: /brokers/topics/<t> exists already.
	ErrTopicExists = errors.New("zookeeper: topic exists")
	// ErrStalePartitionState: the partition state znode's version is not
	// the expected one (someone else wrote it since it was read).
	ErrStalePartitionState = errors.New("zookeeper: stale partition state version")
	// ErrStaleTopic: a topic znode changed since the version a
	// conditional write expected.
	ErrStaleTopic = errors.New("zookeeper: stale topic version")
	// ErrControllerMoved: the /controller_epoch version check failed, so
	// a newer controller was elected and this writer is fenced.
	ErrControllerMoved = errors.New("zookeeper: controller moved")
	// ErrNotElected: TryElect found another live controller.
	ErrNotElected = errors.New("zookeeper: another broker is the controller")
	// ErrCorrupt: a znode's bytes are not what Kafka writes there.
	ErrCorrupt = errors.New("zookeeper: malformed znode data")
	// ErrConnectionLoss: ZooKeeper could not be reached (or the session
	// was lost) within the operation timeout.
	ErrConnectionLoss = errors.New("zookeeper: connection lost")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("zookeeper: client closed")
)

// SessionState is what happened to the client's ZooKeeper session.
type SessionState int

const (
	// Disconnected: the connection dropped; the session (and its
	// ephemerals and watches) lives on if it reconnects in time.
	Disconnected SessionState = iota + 1
	// Reconnected: the same session is connected again.
	Reconnected
	// Expired: the server expired the session: this broker's ephemeral
	// znodes (registration, /controller) are gone.
	Expired
	// NewSession: a new session replaced an expired one. The client has
	// re-registered the broker (SessionEvent.Err says if that failed);
	// the caller re-runs what it owns, such as the controller election.
	NewSession
)

func (s SessionState) String() string {
	switch s {
	case Disconnected:
		return "disconnected"
	case Reconnected:
		return "reconnected"
	case Expired:
		return "expired"
	case NewSession:
		return "new-session"
	}
	return fmt.Sprintf("SessionState(%d)", int(s))
}

// SessionEvent is delivered on Client.Events.
type SessionEvent struct {
	State     SessionState
	SessionID int64
	Err       error // NewSession: the re-registration's failure, if any
}

// Client is one ZooKeeper session under a chroot. Its methods are safe
// for concurrent use.
type Client struct {
	conn      *zk.Conn
	chroot    string // "" or "/a/b"
	timeout   time.Duration
	opTimeout time.Duration
	log       *slog.Logger

	events chan SessionEvent
	quit   chan struct{}
	// lastRead is when bytes last came from a ZooKeeper server (unix
	// nanoseconds): pings answer every third of the session timeout, so
	// it is the session's last contact (LastContact).
	lastRead atomic.Int64
	// socket is the connection the library dialed last: Close shuts it
	// itself when the library's close request does not end its loops.
	socket atomic.Pointer[net.Conn]
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		queue      []zk.Event  // session events the handler has not seen
		registered *BrokerInfo // re-created after an expiry
		closed     bool
	}
	wake chan struct{} // one pending signal that queue grew
}

// Open connects to "host:port[,host:port…][/chroot]", waits for a
// session (up to the session timeout, at least 5 s), and creates the
// chroot if it is missing, as Kafka does. The caller must drain Events.
func Open(connect string, sessionTimeout time.Duration, logger *slog.Logger) (*Client, error) {
	servers, chroot, err := ParseConnect(connect)
	if err != nil {
		return nil, err
	}
	if sessionTimeout <= 0 {
		return nil, fmt.Errorf("zookeeper: session timeout %v must be positive", sessionTimeout)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		chroot:    chroot,
		timeout:   sessionTimeout,
		opTimeout: max(2*sessionTimeout, 5*time.Second),
		log:       logger.With("component", "zookeeper"),
		events:    make(chan SessionEvent, 64),
		quit:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
	}
	conn, zkEvents, err := zk.Connect(servers, sessionTimeout, zk.WithLogger(zkLogger{c.log}), zk.WithLogInfo(false),
		zk.WithDialer(c.dial))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: connect %s: %w", connect, err)
	}
	c.conn = conn
	c.wg.Add(2)
	go c.readEvents(zkEvents)
	go c.handleEvents()
	if err := c.waitSession(max(sessionTimeout, 5*time.Second)); err != nil {
		c.Close()
		return nil, fmt.Errorf("zookeeper: connect %s: %w", connect, err)
	}
	if err := c.createChroot(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.createTopLevelPaths(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// topLevelPaths are the persistent znodes a Kafka 2.8 broker creates at
// startup (ZkData.PersistentZkPaths), so tools find them present.
var topLevelPaths = []string{
	"/consumers", brokerIDsPath, topicsPath, configChangesPath, deleteTopicsPath, "/brokers/seqid",
	isrChangesPath, "/latest_producer_id_block", "/log_dir_event_notification",
	topicConfigsPath, "/config/clients", "/config/users", "/config/brokers", "/config/ips",
}

func (c *Client) createTopLevelPaths() error {
	for _, p := range topLevelPaths {
		if err := c.do(func(bool) error { return c.ensurePath(p) }); err != nil {
			return fmt.Errorf("zookeeper: create %s: %w", p, err)
		}
	}
	return nil
}

// ParseConnect splits Kafka's zookeeper.connect into servers and chroot.
func ParseConnect(connect string) (servers []string, chroot string, err error) {
	hosts := connect
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], strings.TrimRight(connect[i:], "/")
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("zookeeper: connect string %q names no server", connect)
	}
	if chroot != "" {
		if err := validatePath(chroot); err != nil {
			return nil, "", fmt.Errorf("zookeeper: chroot of %q: %w", connect, err)
		}
	}
	return servers, chroot, nil
}

func validatePath(p string) error {
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") && p != "/" || strings.Contains(p, "//") {
		return fmt.Errorf("invalid znode path %q", p)
	}
	for _, part := range strings.Split(p[1:], "/") {
		if part == "." || part == ".." {
			return fmt.Errorf("invalid znode path %q", p)
		}
	}
	return nil
}

// dial is net.DialTimeout with reads timed (LastContact).
func (c *Client) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	var live net.Conn = &contactConn{Conn: conn, last: &c.lastRead}
	c.socket.Store(&live)
	return live, nil
}

// contactConn records when bytes were last read.
type contactConn struct {
	net.Conn
	last *atomic.Int64
}

func (c *contactConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// LastContact is when the client last read from a ZooKeeper server: a
// session whose connection dropped counts its timeout from there, as the
// server does (replication/fence). The zero time before any read.
func (c *Client) LastContact() time.Time {
	if n := c.lastRead.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Events delivers the session's state changes, in order. The channel is
// closed by Close.
func (c *Client) Events() <-chan SessionEvent { return c.events }

// SessionID is the current session's id (0 while there is none).
func (c *Client) SessionID() int64 { return c.conn.SessionID() }

// Close ends the session (its ephemerals go at once) and waits for the
// client's goroutines.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	c.mu.Unlock()
	close(c.quit)
	c.conn.Close()
	// The library ends its loops only when the server answers the close
	// request by closing the connection; its pinger keeps a connection
	// whose close request was lost alive for ever, and a process that
	// waits for it never exits. After a grace period the socket is shut
	// from this side, which ends them.
	if !waitGroupWithin(&c.wg, closeGrace) {
		if live := c.socket.Load(); live != nil {
			(*live).Close()
		}
		if !waitGroupWithin(&c.wg, c.opTimeout) {
			c.log.Warn("zookeeper client goroutines still running after close", "waited", closeGrace+c.opTimeout)
			return nil
		}
	}
	close(c.events)
	return nil
}

// closeGrace is how long Close lets the server answer the close request
// (the library itself waits up to a second to send it).
const closeGrace = 3 * time.Second

func waitGroupWithin(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// readEvents moves the library's session events into the queue, so its
// small channel never fills while the handler does I/O.
func (c *Client) readEvents(in <-chan zk.Event) {
	defer c.wg.Done()
	for ev := range in {
		if ev.Type != zk.EventSession {
			continue
		}
		c.mu.Lock()
		c.mu.queue = append(c.mu.queue, ev)
		c.mu.Unlock()
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// handleEvents turns library states into SessionEvents; after a new
// session it re-registers the broker first, as Kafka's session handler
// does.
func (c *Client) handleEvents() {
	defer c.wg.Done()
	var session int64 // the session the caller last heard of
	connected := false
	for {
		select {
		case <-c.quit:
			return
		case <-c.wake:
		}
		for _, ev := range c.takeQueue() {
			out, ok := c.translate(ev, &session, &connected)
			if !ok {
				continue
			}
			select {
			case c.events <- out:
			case <-c.quit:
				return
			}
		}
	}
}

func (c *Client) takeQueue() []zk.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.mu.queue
	c.mu.queue = nil
	return q
}

func (c *Client) translate(ev zk.Event, session *int64, connected *bool) (SessionEvent, bool) {
	switch ev.State {
	case zk.StateHasSession:
		id := c.conn.SessionID()
		wasConnected := *connected
		*connected = true
		switch {
		case *session == 0: // the first session, which Open waited for
			*session = id
			return SessionEvent{}, false
		case id == *session:
			if wasConnected {
				return SessionEvent{}, false
			}
			return SessionEvent{State: Reconnected, SessionID: id}, true
		default:
			*session = id
			c.log.Info("new zookeeper session", "session", fmt.Sprintf("0x%x", id))
			return SessionEvent{State: NewSession, SessionID: id, Err: c.reregister()}, true
		}
	case zk.StateDisconnected, zk.StateConnecting:
		if !*connected {
			return SessionEvent{}, false
		}
		*connected = false
		return SessionEvent{State: Disconnected, SessionID: *session}, true
	case zk.StateExpired:
		*connected = false
		c.log.Warn("zookeeper session expired", "session", fmt.Sprintf("0x%x", *session))
		return SessionEvent{State: Expired, SessionID: *session}, true
	}
	return SessionEvent{}, false
}

func (c *Client) waitSession(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for c.conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: no session after %v", ErrConnectionLoss, timeout)
		}
		select {
		case <-c.quit:
			return ErrClosed
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// do runs op, retrying while the connection is lost (the library fails
// queued requests then), until the operation timeout, as Kafka's
// retryRequestsUntilConnected does. retried tells op that an earlier
// attempt may have been applied.
func (c *Client) do(op func(retried bool) error) error {
	deadline := time.Now().Add(c.opTimeout)
	for attempt := 0; ; attempt++ {
		err := op(attempt > 0)
		if !isConnectionError(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %v", ErrConnectionLoss, err)
		}
		if err := c.waitSession(time.Until(deadline)); err != nil {
			return err
		}
	}
}

func isConnectionError(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}

// abs is the server-side path of a path under the chroot.
func (c *Client) abs(p string) string {
	if p == "/" && c.chroot != "" {
		return c.chroot
	}
	return c.chroot + p
}

var openACL = zk.WorldACL(zk.PermAll)

func (c *Client) createChroot() error {
	if c.chroot == "" {
		return nil
	}
	if err := c.do(func(bool) error { return c.ensurePathAbs(c.chroot) }); err != nil {
		return fmt.Errorf("zookeeper: create chroot %s: %w", c.chroot, err)
	}
	return nil
}

// ensurePath creates p and its missing parents (persistent, no data).
func (c *Client) ensurePath(p string) error { return c.ensurePathAbs(c.abs(p)) }

func (c *Client) ensurePathAbs(abs string) error {
	for i := 1; i <= len(abs); i++ {
		if i < len(abs) && abs[i] != '/' {
			continue
		}
		_, err := c.conn.Create(abs[:i], nil, 0, openACL)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// get reads a znode's data and version.
func (c *Client) get(p string) (data []byte, version int32, err error) {
	err = c.do(func(bool) error {
		var st *zk.Stat
		data, st, err = c.conn.Get(c.abs(p))
		if err == nil {
			version = st.Version
		}
		return err
	})
	return data, version, mapNotFound(err, p)
}

// children lists a znode's children, sorted as ZooKeeper returns them.
func (c *Client) children(p string) (names []string, err error) {
	err = c.do(func(bool) error {
		names, _, err = c.conn.Children(c.abs(p))
		return err
	})
	return names, mapNotFound(err, p)
}

func mapNotFound(err error, p string) error {
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %s", ErrNotFound, p)
	}
	if err != nil {
		return fmt.Errorf("zookeeper: %s: %w", p, err)
	}
	return nil
}

// multiError is the first failed operation's error of a Multi (the ones
// after it report a runtime inconsistency, the ones before none).
func multiError(res []zk.MultiResponse, err error) (int, error) {
	for i, r := range res {
		if r.Error != nil {
			return i, r.Error
		}
	}
	return -1, err
}

type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}
