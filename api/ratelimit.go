package api

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
)

const codeRateLimited = 42901

// rateLimit is the middleware after authenticate: ferry.http.rate.limit.per.principal
// (quota.PrincipalRates). Past its budget a principal is answered 429 with
// Retry-After, before its request costs anything else. Health checks are
// never limited.
func (g *Gateway) rateLimit(next http.Handler) http.Handler {
	if g.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/healthz" || p == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		key := auth.PrincipalFrom(r.Context()).String()
		if key == auth.Anonymous.String() {
			key = "host:" + clientHost(r)
		}
		if wait := g.limiter.Take(key); wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			writeError(w, http.StatusTooManyRequests, codeRateLimited,
				"more than "+strconv.FormatInt(g.cfg.RequestsPerSecond, 10)+" requests a second from "+key+"; retry after "+wait.Round(time.Millisecond).String())
			return
		}
		next.ServeHTTP(w, r)
	})
}
