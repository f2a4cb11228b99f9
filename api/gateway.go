package api

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/schemaregistry"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/idempotency"
	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/quota"
	"github.com/ferry-mq/ferry/web"
)

// Config bounds what one HTTP request may cost. The zero value plus
// Defaults is a sane public listener.
type Config struct {
	// MaxRequestBytes caps a request body; larger bodies get 413 before
	// anything is decoded. Default 16 MiB.
	MaxRequestBytes int64
	// MaxRecordsPerRequest caps the records of one produce body; the
	// request is refused with 413 while being scanned. Default 100000.
	MaxRecordsPerRequest int
	// MaxFetchWait caps timeout_ms of a long-polling read. Default 30 s.
	MaxFetchWait time.Duration
	// MaxFetchBytes caps max_bytes of a read. Default 16 MiB.
	MaxFetchBytes int
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout guard against slow
	// clients. Defaults 10 s, 60 s, 120 s. The write timeout is derived
	// from MaxFetchWait so long polls can finish.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
	// MaxHeaderBytes caps a request's header block. Default 64 KiB.
	MaxHeaderBytes int
	// MaxConnections caps open HTTP connections (LimitListener). Default 1024.
	MaxConnections int
	// AllowedHosts are the Host names (port optional; "*" for any) browsers
	// may reach this node by, against DNS rebinding (webguard.go). Empty:
	// localhost, *.localhost, IP literals and HostNames.
	AllowedHosts []string
	// HostNames are the node's own names, allowed by the default list.
	HostNames []string
	// AdvertisedKafkaAddr is what /brokers and /cluster report.
	AdvertisedKafkaAddr string
	Logger              *slog.Logger
	// Idempotency holds the Idempotency-Key answers of POST /kafka/{topic}
	// (idempotency.go); nil: a request with the header answers 503.
	Idempotency *idempotency.Store
	// Groups is the group coordinator behind /consumers, /groups and
	// /kafka/{topic}/stream; without it those routes answer 503.
	Groups *group.Coordinator
	// Schemas is the schema registry behind /subjects, /schemas, /config,
	// /compatibility and /mode; without it those routes answer 503.
	Schemas *schemaregistry.Registry
	// Admin is the core's admin operations behind
	// /admin/preferred-leader-election and /admin/reassignments (the
	// ones the Kafka listener's ElectLeaders and reassignment APIs use);
	// nil: those routes answer 503.
	Admin *server.Admin
	// PeerHTTP, on a cluster, finds the other brokers' gateways: a group's
	// requests go to its coordinator's (handon.go). Nil: served here.
	PeerHTTP PeerHTTPFunc
	// ACLs serve /admin/acls (the same bindings the Kafka listener
	// enforces); nil: ACLs are off and those routes answer 501.
	ACLs *acl.Manager
	// PeerDialTLS, when set, reaches the other brokers' gateways over
	// https through it (ferry.http.tls.enable; it verifies their
	// certificates); nil: plain http.
	PeerDialTLS func(ctx context.Context, network, addr string) (net.Conn, error)
	// Metrics is served at /metrics and counts requests per route; nil:
	// no /metrics (observe.go).
	Metrics *metrics.Metrics
	// Auth requires every request but the health checks to authenticate
	// (authn.go); nil: none, every request runs as User:ANONYMOUS.
	Auth *HTTPAuth
	// Authorizer decides every request's actions (authz.go), the same one
	// the Kafka listener asks; nil: everything is allowed.
	Authorizer auth.Authorizer
	// Tokens keeps API tokens for /admin/tokens (tokens.go); nil: those
	// routes answer 503. Auth.Tokens looks them up.
	Tokens auth.TokenStore
	// TxnAdmin serves /admin/transactions (admintxn.go); nil: those
	// routes answer 503.
	TxnAdmin TxnAdmin
	// Transactor writes POST /kafka's all-or-nothing batches
	// (transactions.go); nil: that route answers 503.
	Transactor Transactor
	// RequestsPerSecond limits each principal's requests (ratelimit.go);
	// 0: no limit.
	RequestsPerSecond int64
}

// Defaults fills zero fields.
func (c *Config) Defaults() {
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = 16 << 20
	}
	if c.MaxRecordsPerRequest == 0 {
		c.MaxRecordsPerRequest = 100000
	}
	if c.MaxFetchWait == 0 {
		c.MaxFetchWait = 30 * time.Second
	}
	if c.MaxFetchBytes == 0 {
		c.MaxFetchBytes = 16 << 20
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = 10 * time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 60 * time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 120 * time.Second
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = 64 << 10
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = 1024
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	if c.MaxRequestBytes < 1024 {
		return fmt.Errorf("max request bytes %d: must be >= 1024", c.MaxRequestBytes)
	}
	if c.MaxFetchWait < 0 || c.MaxFetchBytes < 1 {
		return fmt.Errorf("fetch limits must be positive")
	}
	return nil
}

// Gateway serves the HTTP API over one broker.
type Gateway struct {
	broker *server.Broker
	groups *group.Coordinator
	cfg    Config
	logger *slog.Logger
	obs    *observer
	guard  *webGuard
	// authn is Config.Auth in use; nil when authentication is off.
	authn *authenticator
	// limiter is Config.RequestsPerSecond in use; nil: no limit.
	limiter *quota.PrincipalRates
	// peers carries hand-ons to the other gateways; peerScheme is http
	// or https.
	peers      *http.Transport
	peerScheme string
}

// New builds a gateway; mount Handler on an http.Server (see NewHTTPServer).
func New(b *server.Broker, cfg Config) (*Gateway, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Gateway{broker: b, groups: cfg.Groups, cfg: cfg, logger: cfg.Logger.With("component", "http"),
		obs: newObserver(cfg.Metrics), guard: newWebGuard(cfg), peers: peerTransport, peerScheme: "http"}
	if cfg.PeerDialTLS != nil {
		g.peers, g.peerScheme = newPeerTransport(), "https"
		g.peers.DialTLSContext = cfg.PeerDialTLS
	}
	if cfg.RequestsPerSecond > 0 {
		g.limiter = quota.NewPrincipalRates(cfg.RequestsPerSecond)
	}
	if cfg.Auth != nil {
		a, err := newAuthenticator(*cfg.Auth)
		if err != nil {
			return nil, err
		}
		g.authn = a
	}
	return g, nil
}

// Handler is the whole route tree.
func (g *Gateway) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(g.observe, g.limitBody, g.guard.middleware, g.authenticate, g.rateLimit)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, codeNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path)
	})

	// The routes' own middleware runs once chi has matched the route, so
	// the authorizer sees its pattern and parameters.
	r.Group(func(r chi.Router) {
		r.Use(g.routed)
		g.routes(r)
	})
	return r
}

// routes mounts every route.
func (g *Gateway) routes(r chi.Router) {
	r.Get("/healthz", g.healthz)
	g.sessionRoutes(r)       // /auth/login, /auth/logout, /auth/whoami
	g.tokenRoutes(r)         // /admin/tokens
	g.observabilityRoutes(r) // /readyz, /metrics
	r.Get("/brokers", g.listBrokers)
	r.Get("/cluster", g.describeCluster)

	r.Post("/kafka", g.idempotent(g.produceTransaction))
	r.Post("/kafka/{topic}", g.idempotent(g.avroOr(g.produce)))
	r.Get("/kafka/{topic}/partitions/{partition}/records", g.avroReadOr(g.readRecords))
	r.Get("/kafka/{topic}/partitions/{partition}/offsets", g.listOffset)
	r.Get("/kafka/{topic}/search", g.searchRecords)
	r.Get("/kafka/{topic}/export", g.exportRecords)
	r.Post("/kafka/{topic}/republish", g.republishRecords)

	r.Get("/topics", g.listTopics)
	r.Post("/topics", g.createTopic)
	r.Get("/topics/{topic}", g.describeTopic)
	r.Post("/topics/{topic}", g.idempotent(g.avroOr(g.produceRestProxy)))
	r.Delete("/topics/{topic}", g.deleteTopic)
	r.Post("/topics/{topic}/partitions", g.createPartitions)
	r.Put("/topics/{topic}/configs", g.alterConfigs)
	r.Post("/admin/partitions/{topic}/{partition}/recover", g.recoverPartition)
	r.Post("/admin/preferred-leader-election", g.preferredLeaderElection)
	r.Post("/admin/reassignments", g.createReassignment)
	r.Get("/admin/reassignments", g.listReassignments)
	r.Delete("/admin/reassignments", g.cancelReassignments)
	r.Delete("/admin/reassignments/throttle", g.removeReplicationThrottle)
	r.Get("/admin/transactions", g.listTransactions)
	r.Post("/admin/transactions/abort", g.abortTransaction)
	r.Get("/admin/acls", g.listACLs)
	r.Post("/admin/acls", g.createACLs)
	r.Delete("/admin/acls", g.deleteACLs)

	gr := g.requireGroups
	// A group's routes are served by its coordinator, wherever asked.
	byPath := func(h http.HandlerFunc) http.HandlerFunc {
		return gr(g.atGroupCoordinator(func(r *http.Request) string { return pathParam(r, "group") }, h))
	}
	r.Get("/kafka/{topic}/stream", gr(g.atGroupCoordinator(streamGroup, g.stream)))
	r.Get("/groups", gr(g.listGroups))
	r.Get("/groups/{group}", byPath(g.describeGroup))
	r.Get("/groups/{group}/lag/history", byPath(g.groupLagHistory))
	r.Post("/groups/{group}/offsets/reset", byPath(g.resetGroupOffsets))
	r.Post("/consumers/{group}", byPath(g.createConsumer))
	r.Delete("/consumers/{group}/instances/{instance}", byPath(g.deleteConsumer))
	r.Post("/consumers/{group}/instances/{instance}/subscription", byPath(g.subscribe))
	r.Get("/consumers/{group}/instances/{instance}/subscription", byPath(g.subscription))
	r.Delete("/consumers/{group}/instances/{instance}/subscription", byPath(g.unsubscribe))
	r.Get("/consumers/{group}/instances/{instance}/assignments", byPath(g.assignments))
	r.Get("/consumers/{group}/instances/{instance}/records", byPath(g.consumeRecords))
	r.Post("/consumers/{group}/instances/{instance}/offsets", byPath(g.commitOffsets))
	r.Get("/consumers/{group}/instances/{instance}/offsets", byPath(g.committedOffsets))

	g.schemaRoutes(r)
	openapi.Register(r) // /openapi.json, /openapi.yaml, /docs

	r.Handle("/ui/*", web.Handler())
	r.Get("/ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusMovedPermanently) })
}

// limitBody caps every request body; reading past it fails with
// *http.MaxBytesError, which writeCoreError turns into 413. Other read
// failures are the client's: see bodyfault.go.
func (g *Gateway) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > g.cfg.MaxRequestBytes {
			writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge,
				fmt.Sprintf("request body of %d bytes is over the %d byte limit", r.ContentLength, g.cfg.MaxRequestBytes))
			return
		}
		gw, body := guard(w, http.MaxBytesReader(w, r.Body, g.cfg.MaxRequestBytes))
		r.Body = body
		next.ServeHTTP(gw, r)
	})
}

// NewHTTPServer wraps a handler in a server with the gateway's timeouts.
func NewHTTPServer(addr string, h http.Handler, cfg Config) *http.Server {
	cfg.Defaults()
	var connState func(net.Conn, http.ConnState)
	if cfg.Metrics != nil {
		connState = newConnTracker(cfg.Metrics.Listener(metrics.ListenerHTTP)).track
	}
	return &http.Server{
		ConnState:         connState,
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.MaxFetchWait + 30*time.Second,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
}
