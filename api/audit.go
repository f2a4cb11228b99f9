package api

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/server/auth"
)

// The audit log: one structured line (msg "audit") per administrative
// action — a change to topics, configs, partitions, leaders, moves,
// schemas and their settings, group offsets, logins — and per request
// refused (401 or 403): who, from where, what, on which resource, and
// whether it was allowed. Records produced and read are data, not
// administration: they are not audited (the request log has them).

// dataRoutes change state but are not administrative.
var dataRoutes = map[string]bool{
	"POST /kafka/{topic}":  true,
	"POST /topics/{topic}": true,
	"POST /consumers/{group}/instances/{instance}/offsets":        true,
	"POST /consumers/{group}/instances/{instance}/subscription":   true,
	"DELETE /consumers/{group}/instances/{instance}/subscription": true,
	"DELETE /consumers/{group}/instances/{instance}":              true,
	"POST /consumers/{group}":                                     true,
	"POST /subjects/{subject}":                                    true, // a lookup
	"POST /subjects/{subject}/diff":                               true,
	"POST /compatibility/subjects/{subject}/versions":             true,
	"POST /compatibility/subjects/{subject}/versions/{version}":   true,
	"POST /auth/login":                                            true, // logs its own line, naming the user
}

// audited serves r through next, logging it with its outcome when it is
// administrative (a change that is not produce or consumer traffic).
func (g *Gateway) audited(w http.ResponseWriter, r *http.Request, pattern string, next http.Handler) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || dataRoutes[r.Method+" "+pattern] {
		next.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	next.ServeHTTP(sw, r)
	outcome := "allowed"
	switch {
	case sw.status == http.StatusForbidden:
		return // deny logged it
	case sw.status >= 400:
		outcome = "failed"
	}
	g.auditLine(r, outcome, sw.status, "")
}

// auditLine logs one audit record. The resource is the route's
// parameters (topic, group, subject, …); bodies are never logged.
func (g *Gateway) auditLine(r *http.Request, outcome string, status int, reason string) {
	rctx := chi.RouteContext(r.Context())
	attrs := []slog.Attr{slog.String("principal", auth.PrincipalFrom(r.Context()).String()),
		slog.String("host", clientHost(r)), slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.String("outcome", outcome), slog.Int("status", status)}
	if rctx != nil {
		if p := rctx.RoutePattern(); p != "" {
			attrs = append(attrs, slog.String("route", p))
		}
		var res []string
		for i, k := range rctx.URLParams.Keys {
			if k != "*" && i < len(rctx.URLParams.Values) {
				res = append(res, k+"="+rctx.URLParams.Values[i])
			}
		}
		if len(res) > 0 {
			attrs = append(attrs, slog.String("resource", strings.Join(res, ",")))
		}
	}
	if reason != "" {
		attrs = append(attrs, slog.String("reason", reason))
	}
	g.logger.LogAttrs(r.Context(), slog.LevelInfo, "audit", attrs...)
}

// statusWriter keeps the status an audited handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// setErrorCode passes writeError's code on to the request recorder.
func (w *statusWriter) setErrorCode(code int) {
	if rec, ok := w.ResponseWriter.(errorCodeSetter); ok {
		rec.setErrorCode(code)
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
