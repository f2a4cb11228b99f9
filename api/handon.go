package api

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// On a cluster a consumer group's state (its REST consumer instances,
// their positions and subscriptions) lives in its coordinator, the broker
// leading the group's __consumer_offsets partition. Any node answers a
// group's requests: one that does not coordinate the group hands the
// request to the node that does (its HTTP gateway, from the broker's
// registration) and relays the answer, streams included. A handed-on
// request carries forwardedHeader, and is never handed on again: a node
// that receives one it cannot serve answers 503 naming the coordinator,
// so a stale view cannot loop a request between nodes.

// forwardedHeader marks a request one node handed to another; its value
// is the broker id that handed it on.
const forwardedHeader = "X-Ferry-Forwarded-By"

// PeerHTTPFunc finds a broker's HTTP gateway ("host:port").
type PeerHTTPFunc func(broker int32) (addr string, ok bool)

// peerTransport is shared by every hand-on: pooled connections to the
// other brokers, bounded dials; no response deadline, since long polls
// and SSE streams answer late or never end.
var peerTransport = newPeerTransport()

func newPeerTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// atGroupCoordinator wraps a group's handler: served here when this node
// coordinates the group (or nobody else can be named), else handed to the
// coordinator. groupOf reads the group's name from the request.
func (g *Gateway) atGroupCoordinator(groupOf func(*http.Request) string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if g.cfg.PeerHTTP == nil {
			next(w, r)
			return
		}
		name := groupOf(r)
		broker, here := g.groups.Locate(name)
		if here {
			next(w, r)
			return
		}
		addr, ok := g.cfg.PeerHTTP(broker)
		if !ok || r.Header.Get(forwardedHeader) != "" {
			// Handed on already, or the coordinator's gateway is not
			// known: 503 naming the coordinator, for the client to retry.
			writeGroupError(w, g.groups.Serves(name))
			return
		}
		g.handOn(w, r, broker, addr, "the group's coordinator", codeNotCoordinator, g.answerDeadline(r))
	}
}

// peerAnswerTimeout bounds how long a handed-on request waits for the
// coordinator's answer to start, beyond the long poll it asked for: a
// frozen or partitioned coordinator still accepts connections (its kernel
// does), and without a bound the client would wait as long as the freeze.
// Streams and long polls are not cut: their headers come at once, or when
// the poll's own timeout is up.
const peerAnswerTimeout = 5 * time.Second

// answerDeadline is how long the coordinator may take to start answering
// r: peerAnswerTimeout plus the long poll r asks for (?timeout= ms of a
// records read, capped like the read itself).
func (g *Gateway) answerDeadline(r *http.Request) time.Duration {
	d := peerAnswerTimeout
	if ms, err := strconv.Atoi(r.URL.Query().Get("timeout")); err == nil && ms > 0 {
		d += min(time.Duration(ms)*time.Millisecond, g.cfg.MaxFetchWait)
	}
	return d
}

// handOn relays r to the broker's gateway at addr and its answer back;
// role names the broker in the 503 (with code) when its answer has not
// started within wait.
func (g *Gateway) handOn(w http.ResponseWriter, r *http.Request, broker int32, addr, role string, code int, wait time.Duration) {
	target := &url.URL{Scheme: g.peerScheme, Host: addr}
	// The timer cancels the relay when no answer has started in time;
	// ModifyResponse stops it once the coordinator's headers arrive.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var unanswered atomic.Bool
	timer := time.AfterFunc(wait, func() {
		unanswered.Store(true)
		cancel()
	})
	defer timer.Stop()
	self := strconv.Itoa(int(g.broker.BrokerID()))
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The answer's URLs (a new instance's base_uri) name the node
			// the client asked, or what a proxy in front of it said.
			if h := pr.In.Header.Get("X-Forwarded-Host"); h != "" {
				pr.Out.Header.Set("X-Forwarded-Host", h)
			} else {
				pr.Out.Header.Set("X-Forwarded-Host", pr.In.Host)
			}
			if p := pr.In.Header.Get("X-Forwarded-Proto"); p != "" {
				pr.Out.Header.Set("X-Forwarded-Proto", p)
			} else if pr.In.TLS != nil {
				pr.Out.Header.Set("X-Forwarded-Proto", "https")
			}
			pr.Out.Header.Set(forwardedHeader, self)
			// This node's guard has judged the browser's request; to the
			// coordinator the hop is server to server.
			pr.Out.Header.Del("Origin")
			pr.Out.Header.Del("Sec-Fetch-Site")
		},
		Transport:     g.peers,
		FlushInterval: -1, // SSE events and long polls pass at once
		ModifyResponse: func(*http.Response) error {
			if !timer.Stop() && unanswered.Load() {
				return fmt.Errorf("no answer within %v", wait)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, out *http.Request, err error) {
			if unanswered.Load() {
				writeError(w, http.StatusServiceUnavailable, code,
					fmt.Sprintf("%s, broker %d at %s, did not answer within %v; retry shortly", role, broker, addr, wait))
				return
			}
			if r.Context().Err() != nil {
				return // the client went away
			}
			writeError(w, http.StatusServiceUnavailable, code,
				fmt.Sprintf("%s, broker %d at %s, did not answer: %v", role, broker, addr, err))
		},
	}
	proxy.ServeHTTP(w, r.WithContext(ctx))
}

// streamGroup is the group of a /kafka/{topic}/stream request.
func streamGroup(r *http.Request) string { return r.URL.Query().Get("group") }

// peerAnswer is one broker's answer to askPeers.
type peerAnswer struct {
	broker int32
	body   []byte
	err    error
}

// peerAskTimeout bounds each broker's answer to a gathering request.
const peerAskTimeout = 3 * time.Second

// askPeers GETs path from every other live broker's gateway, in parallel,
// as a handed-on request (each answers for itself alone).
func (g *Gateway) askPeers(r *http.Request, path string) []peerAnswer {
	view, ok := g.broker.Cluster()
	if g.cfg.PeerHTTP == nil || !ok {
		return nil
	}
	self := g.broker.BrokerID()
	var out []peerAnswer
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, b := range view.Brokers {
		if b.ID == self {
			continue
		}
		wg.Go(func() {
			a := peerAnswer{broker: b.ID}
			addr, ok := g.cfg.PeerHTTP(b.ID)
			if !ok {
				a.err = fmt.Errorf("broker %d has no HTTP gateway registered", b.ID)
			} else {
				a.body, a.err = g.getFromPeer(r, g.peerScheme+"://"+addr+path, strconv.Itoa(int(self)))
			}
			mu.Lock()
			out = append(out, a)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b peerAnswer) int { return int(a.broker - b.broker) })
	return out
}

// getFromPeer asks a peer on behalf of the client's request from: its
// credentials go along, for the peer to check as its own (authn.go).
func (g *Gateway) getFromPeer(from *http.Request, url, self string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(from.Context(), peerAskTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(forwardedHeader, self)
	for _, h := range []string{"Authorization", "Cookie"} {
		if v := from.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	res, err := (&http.Client{Transport: g.peers}).Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, res.Status)
	}
	return io.ReadAll(io.LimitReader(res.Body, 16<<20))
}
