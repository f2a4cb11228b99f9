package api

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
)

// The web surface: what keeps a browser that visits another site from
// using this node on the user's behalf. Non-browser clients (curl, the
// Kafka tools' REST clients, proxies) send neither Origin nor
// Sec-Fetch-Site and are not affected by any of it.
//
//   - Cross-origin state changes are refused by net/http's
//     CrossOriginProtection (Sec-Fetch-Site, else Origin against Host).
//     GET /kafka/{topic}/stream joins a group and commits offsets, so it
//     is held to the same rule although it is a GET.
//   - A browser body of a type a page may send without a CORS preflight
//     (text/plain, forms) or of no type is refused with 415 where JSON is
//     expected; curl's default form type stays accepted from non-browsers
//     so `curl -d '{"id":1}'` works.
//   - DNS rebinding: a page on evil.example whose name is made to resolve
//     to 127.0.0.1 is same-origin with itself, so Origin checks pass; the
//     Host header still says evil.example. Browser requests must name an
//     allowed host: by default any IP literal, localhost and *.localhost,
//     and the node's own names (its host name, the hosts of --http-addr
//     and --advertised-kafka-addr); --http-allowed-hosts replaces that
//     list ("*" turns the check off). Only browser requests are checked:
//     rebinding is a browser attack, and any other client may use any
//     name (service names, tunnels, proxies) without configuration.

// isBrowserRequest reports whether r carries the headers browsers add.
func isBrowserRequest(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Site") != "" || r.Header.Get("Origin") != ""
}

// webGuard holds the checks above; build it with newWebGuard.
type webGuard struct {
	cop   *http.CrossOriginProtection
	deny  http.Handler
	hosts map[string]bool // lower-case host names without port
	// defaults: also allow IP literals and *.localhost (no list was given).
	defaults bool
	anyHost  bool
}

func newWebGuard(cfg Config) *webGuard {
	g := &webGuard{cop: http.NewCrossOriginProtection(), hosts: map[string]bool{}, defaults: len(cfg.AllowedHosts) == 0}
	g.deny = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, codeCrossOrigin,
			"cross-origin "+r.Method+" "+r.URL.Path+" refused: state changes are accepted from this node's own pages and from non-browser clients only")
	})
	names := cfg.AllowedHosts
	if g.defaults {
		names = append([]string{"localhost"}, cfg.HostNames...)
	}
	for _, h := range names {
		h = strings.ToLower(strings.TrimSpace(h))
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		g.anyHost = g.anyHost || h == "*"
		if h = strings.Trim(h, "[]"); h != "" {
			g.hosts[h] = true
		}
	}
	return g
}

// hostAllowed reports whether a browser may reach this node by host (a
// Host header, port optional).
func (g *webGuard) hostAllowed(host string) bool {
	if g.anyHost {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if g.hosts[host] {
		return true
	}
	// An IP literal cannot be rebound: a page served from it is that node.
	return g.defaults && (net.ParseIP(host) != nil || strings.HasSuffix(host, ".localhost"))
}

// middleware applies the Host check, the cross-origin check and the body
// type check to browser requests; others pass untouched.
func (g *webGuard) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isBrowserRequest(r) {
			next.ServeHTTP(w, r)
			return
		}
		if !g.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, codeHostNotAllowed, fmt.Sprintf(
				"host %q is not one this node answers browsers on; add it to --http-allowed-hosts", r.Host))
			return
		}
		if err := g.cop.Check(asStateChange(r)); err != nil {
			g.deny.ServeHTTP(w, r)
			return
		}
		if !isSafeMethod(r.Method) && r.ContentLength != 0 && isSimpleBodyType(r.Header.Get("Content-Type")) {
			writeError(w, http.StatusUnsupportedMediaType, codeUnsupportedType, fmt.Sprintf(
				"content type %q is not accepted from a browser; send application/json", r.Header.Get("Content-Type")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// asStateChange makes the stream's GET, which joins a group and commits
// offsets, look like the state change it is to CrossOriginProtection.
func asStateChange(r *http.Request) *http.Request {
	if !isSafeMethod(r.Method) || !strings.HasSuffix(r.URL.Path, "/stream") {
		return r
	}
	r2 := *r
	r2.Method = http.MethodPost
	return &r2
}

func isSafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// isSimpleBodyType reports the types a page may POST anywhere without a
// CORS preflight (and no type at all, as a Blob body without one sends).
func isSimpleBodyType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return true
	}
	switch mt {
	case "text/plain", typeFormURLEncode, "multipart/form-data":
		return true
	}
	return false
}
