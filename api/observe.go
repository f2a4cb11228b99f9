package api

import (
	"github.com/ferry-mq/ferry/server/auth"

	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/metrics"
)

// This file holds the gateway's observability: the request metrics and
// request log middleware, /metrics, /readyz, and the connection tracker
// behind ferry_open_connections{listener="http"} and the HTTP idle ratio.

// observer caches the request metrics of each route, so a request costs a
// read-locked map lookup, not a label lookup in the metric vectors.
type observer struct {
	m  *metrics.Metrics // nil: metrics off
	mu struct {
		sync.RWMutex
		routes map[routeKey]*metrics.Request
	}
}

type routeKey struct{ method, pattern string }

func newObserver(m *metrics.Metrics) *observer {
	o := &observer{m: m}
	o.mu.routes = make(map[routeKey]*metrics.Request)
	return o
}

// route returns the metrics of a route; pattern is chi's route pattern
// ("/kafka/{topic}"), never the raw path, so the label set stays bounded.
func (o *observer) route(method, pattern string) *metrics.Request {
	if o.m == nil {
		return nil
	}
	if pattern == "" {
		pattern, method = "unmatched", "" // 404s: one series, whatever the path
	}
	k := routeKey{method, pattern}
	o.mu.RLock()
	r := o.mu.routes[k]
	o.mu.RUnlock()
	if r != nil {
		return r
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if r = o.mu.routes[k]; r == nil {
		api := pattern
		if method != "" {
			api = method + " " + pattern
		}
		r = o.m.Request(metrics.ListenerHTTP, api)
		if isSchemaRoute(pattern) {
			r.SchemaRoute()
		}
		o.mu.routes[k] = r
	}
	return r
}

// isSchemaRoute: the Confluent schema registry paths (schemas.go).
func isSchemaRoute(pattern string) bool {
	for _, p := range []string{"/subjects", "/schemas", "/config", "/compatibility", "/mode"} {
		if pattern == p || strings.HasPrefix(pattern, p+"/") {
			return true
		}
	}
	return false
}

// recorder remembers what a handler answered. Unwrap lets
// http.ResponseController reach the connection (SSE flushes, deadlines).
type recorder struct {
	http.ResponseWriter
	status    int
	bytes     int64
	errorCode int // error_code of a JSON error body (writeError)
	// principal is who the request ran as, when it authenticated.
	principal auth.Principal
	// route is the matched route's pattern, set by the route middleware
	// (authz.go) so it is built once per request.
	route string
	// guarded is limitBody's body and answer guard for this request,
	// allocated with the recorder: one allocation per request for both.
	guarded guardedBody
}

// recorderOf finds the request recorder under the writers that wrap it
// (nil outside observe).
func recorderOf(w http.ResponseWriter) *recorder {
	for {
		if rec, ok := w.(*recorder); ok {
			return rec
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
}

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) setErrorCode(code int) { w.errorCode = code }

// errorCodeSetter is implemented by recorder; writeError reports the
// error_code it writes through it.
type errorCodeSetter interface{ setErrorCode(int) }

// observe is the outermost middleware: it times every request, counts it
// under its route pattern, and logs it — at Debug below 400 (a benchmark
// at Info pays nothing for it), Info for 4xx, Warn for 5xx. Bodies are
// never logged.
func (g *Gateway) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started := metrics.Now()
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		took := metrics.Now() - started
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		pattern := rec.route
		if pattern == "" { // not routed (404, 405): chi's own
			pattern = chi.RouteContext(r.Context()).RoutePattern()
		}
		if m := g.obs.route(r.Method, pattern); m != nil {
			m.Observe(took)
			m.Status(rec.status)
			if rec.status >= 400 {
				code := rec.errorCode
				if code == 0 {
					code = rec.status
				}
				m.Failed(strconv.Itoa(code), 1)
			}
		}
		g.logRequest(r, pattern, rec, took)
	})
}

func (g *Gateway) logRequest(r *http.Request, pattern string, rec *recorder, took time.Duration) {
	level := slog.LevelDebug
	switch {
	case rec.status >= 500:
		level = slog.LevelWarn
	case rec.status >= 400:
		level = slog.LevelInfo
	}
	ctx := r.Context()
	if !g.logger.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("method", r.Method), slog.String("route", pattern),
		slog.Int("status", rec.status), slog.Duration("duration", took), slog.Int64("bytes", rec.bytes),
		slog.String("remote", r.RemoteAddr)}
	if t := pathParam(r, "topic"); t != "" {
		attrs = append(attrs, slog.String("topic", t))
	}
	if p := pathParam(r, "partition"); p != "" {
		attrs = append(attrs, slog.String("partition", p))
	}
	if rec.errorCode != 0 {
		attrs = append(attrs, slog.Int("error_code", rec.errorCode))
	}
	if !rec.principal.IsZero() {
		attrs = append(attrs, slog.String("principal", rec.principal.String()))
	}
	g.logger.LogAttrs(ctx, level, "http request", attrs...)
}

// observabilityRoutes mounts /readyz and, when metrics are on, /metrics.
func (g *Gateway) observabilityRoutes(r chi.Router) {
	r.Get("/readyz", g.readyz)
	if g.cfg.Metrics != nil {
		r.Method(http.MethodGet, "/metrics", g.cfg.Metrics.Handler())
	}
}

// readyTimeout bounds each readiness check.
const readyTimeout = 2 * time.Second

type readyBody struct {
	Status string `json:"status" enums:"ready,degraded,not ready"`
	// Checks maps storage and schema_store to "ok" or the error.
	Checks map[string]string `json:"checks"`
	// OfflinePartitions are the partitions whose log failed (see health.go).
	OfflinePartitions []server.OfflinePartition `json:"offline_partitions,omitempty"`
}

// readyz answers 200 when the node can serve: storage is loaded (the
// broker is open) and the schema store, when there is one, answers. A
// failing check answers 503 and names itself with its error. Partitions
// offline after a write or fsync error make it "degraded" (200) or, when
// all are, "not ready" (503): see health.go.
//
//	@Summary		Readiness: storage loaded and the schema store answering
//	@Description	Each check is "ok" or its error; any failing check makes the answer 503 with status "not ready". Partitions whose log failed on a write or fsync error (disk full, EIO) are listed in offline_partitions and named in checks.storage: some offline is status "degraded" with 200 (the node serves the others), all offline is "not ready" with 503.
//	@Tags			cluster
//	@Produce		json
//	@Success		200	{object}	readyBody
//	@Failure		503	{object}	readyBody	"a check failed (this body, not Error)"
//	@Router			/readyz [get]
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	body := readyBody{Status: "ready", Checks: map[string]string{}}
	check := func(name string, err error) {
		body.Checks[name] = "ok"
		if err != nil {
			body.Checks[name] = err.Error()
			body.Status = "not ready"
		}
	}
	check("storage", g.broker.Ready())
	if g.cfg.Schemas != nil {
		check("schema_store", g.cfg.Schemas.Ping(ctx))
	}
	if body.Checks["storage"] == "ok" {
		g.checkPartitions(&body)
	}
	status := http.StatusOK
	if body.Status == "not ready" {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// connTracker is the HTTP server's ConnState hook: it counts open
// connections and splits each connection's time into idle (waiting for a
// request, keep-alive) and busy (from the first byte of a request to the
// end of its response), as the Kafka listener does.
type connTracker struct {
	l  *metrics.Listener
	mu struct {
		sync.Mutex
		conns map[net.Conn]connState
	}
}

// connState is when a connection entered its state, and whether it is
// serving a request.
type connState struct {
	since  time.Duration // metrics.Now
	active bool
}

func newConnTracker(l *metrics.Listener) *connTracker {
	t := &connTracker{l: l}
	t.mu.conns = make(map[net.Conn]connState)
	return t
}

func (t *connTracker) track(c net.Conn, state http.ConnState) {
	now := metrics.Now()
	t.mu.Lock()
	last, known := t.mu.conns[c]
	switch state {
	case http.StateNew, http.StateActive, http.StateIdle:
		t.mu.conns[c] = connState{since: now, active: state == http.StateActive}
	case http.StateHijacked, http.StateClosed:
		delete(t.mu.conns, c)
	}
	t.mu.Unlock()
	if state == http.StateNew {
		t.l.Opened()
		return
	}
	if !known {
		return
	}
	if last.active {
		t.l.Busy(now - last.since)
	} else {
		t.l.Idle(now - last.since)
	}
	if state == http.StateHijacked || state == http.StateClosed {
		t.l.Closed()
	}
}
