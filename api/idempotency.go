package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/idempotency"
)

// POST /kafka/{topic} (and REST Proxy's POST /topics/{topic}) with an
// Idempotency-Key header (the IETF draft
// "The Idempotency-Key HTTP Header Field", as Stripe serves it): the key's
// owner, the leader of its partition of the keys topic
// (server/idempotency), runs the request once and records its answer; a
// retry with the same key and the same request, on any node, gets that
// answer again and writes nothing. A node that does not own the key hands
// the request to the owner's gateway (handon.go). docs/http-idempotency.md
// has the design.

// idempotencyKeyHeader names the header; replayedHeader marks a replayed
// answer (Stripe's name).
const (
	idempotencyKeyHeader = "Idempotency-Key"
	replayedHeader       = "Idempotent-Replayed"
)

// Error codes of requests with a key.
const (
	codeInvalidIdempotencyKey = 40004 // the key is empty, too long, or has bytes outside visible ASCII
	codeKeyInProgress         = 40907 // the key's original request is still in flight
	codeKeyInDoubt            = 40908 // the key's original request stopped before its outcome was recorded
	codeKeyReused             = 42209 // the key was used with a different request
	codeKeyOwnerUnavailable   = 50307 // the key's owner cannot be reached or is loading
	codeKeyBudgetFull         = 50308 // the owner's memory for keys is full
)

// keyedAnswerTimeout bounds how long a hand-on waits for the owner to
// start answering: the produce's own acks timeout plus a wait for an
// original in flight.
const keyedAnswerTimeout = 70 * time.Second

// idempotent serves a produce with an Idempotency-Key through the key's
// owner; without the header, next as it is.
func (g *Gateway) idempotent(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		values := r.Header.Values(idempotencyKeyHeader)
		if len(values) == 0 {
			next(w, r)
			return
		}
		key, err := parseIdempotencyKey(values)
		if err != nil {
			writeError(w, http.StatusBadRequest, codeInvalidIdempotencyKey, err.Error())
			return
		}
		store := g.cfg.Idempotency
		if store == nil {
			writeError(w, http.StatusServiceUnavailable, codeUnavailable, "this node does not serve Idempotency-Key")
			return
		}
		if broker, here := store.Locate(key); !here && g.cfg.PeerHTTP != nil && r.Header.Get(forwardedHeader) == "" {
			if addr, ok := g.cfg.PeerHTTP(broker); ok {
				g.handOn(w, r, broker, addr, "the idempotency key's owner", codeKeyOwnerUnavailable, keyedAnswerTimeout)
				return
			}
		}
		g.produceOnce(w, r, key, next)
	}
}

// parseIdempotencyKey takes one header value, a bare token (Stripe) or a
// Structured Field string (the IETF draft: "…" in quotes).
func parseIdempotencyKey(values []string) (string, error) {
	if len(values) > 1 {
		return "", fmt.Errorf("%s is given %d times; send it once", idempotencyKeyHeader, len(values))
	}
	key := strings.TrimSpace(values[0])
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		key = key[1 : len(key)-1]
	}
	if err := idempotency.ValidKey(key); err != nil {
		return "", fmt.Errorf("%s: %v", idempotencyKeyHeader, err)
	}
	return key, nil
}

// produceOnce runs next at most once for key, here on its owner.
func (g *Gateway) produceOnce(w http.ResponseWriter, r *http.Request, key string, next http.HandlerFunc) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeCoreError(w, fmt.Errorf("read body: %w", err))
		return
	}
	// The same key from another principal, to another route or topic, or
	// with another body is another request.
	fp := idempotency.FingerprintOf([]byte(auth.PrincipalFrom(r.Context()).String()), []byte(r.URL.Path),
		[]byte(r.Header.Get("Content-Type")), body)
	out, err := g.cfg.Idempotency.Begin(r.Context(), key, fp)
	if err != nil {
		writeKeyError(w, err)
		return
	}
	switch out.Decision {
	case idempotency.Proceed:
	case idempotency.Replay:
		writeAnswer(w, out.Answer, true)
		return
	case idempotency.Conflict:
		writeError(w, http.StatusUnprocessableEntity, codeKeyReused, fmt.Sprintf(
			"%s %q was used with a different request (principal, route and topic, content type or body) within the last %v; use a new key for a new request",
			idempotencyKeyHeader, key, g.cfg.Idempotency.Window()))
		return
	case idempotency.Wait:
		writeError(w, http.StatusConflict, codeKeyInProgress, fmt.Sprintf(
			"the request with %s %q is still in progress; retry to get its answer", idempotencyKeyHeader, key))
		return
	case idempotency.InDoubt:
		writeError(w, http.StatusConflict, codeKeyInDoubt, fmt.Sprintf(
			"the request with %s %q was started by a node that stopped before recording its outcome: its records may or may not have been written, and are not written again under this key; read the partitions, or send the records with a new key",
			idempotencyKeyHeader, key))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	capture := &capturedAnswer{header: http.Header{}}
	next(capture, r)
	if rec, ok := w.(errorCodeSetter); ok && capture.code != 0 {
		rec.setErrorCode(capture.code)
	}
	ans := capture.answer()
	// The client going away does not stop the recording.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), keyedAnswerTimeout)
	defer cancel()
	if !mayHaveWritten(ans, capture.code) {
		out.Ticket.Release(ctx)
		writeAnswer(w, ans, false)
		return
	}
	if err := out.Ticket.Complete(ctx, ans); err != nil {
		// The records are written: the client needs their offsets. This
		// node replays them; elsewhere, or after a restart, the key is in
		// doubt (its pending record is durable): never written twice.
		g.logger.Warn("idempotency key answer not recorded", "key", key, "err", err)
	}
	writeAnswer(w, ans, false)
}

// mayHaveWritten reports whether a produce answer says records were (or
// may have been) written: a success, an acknowledgement that timed out
// (50303), or a partial write (offsets beside the error). Any other
// failure wrote nothing, and the key is released for a retry.
func mayHaveWritten(a idempotency.Answer, code int) bool {
	if a.Status >= 200 && a.Status < 300 {
		return true
	}
	if code == codeAcksTimedOut {
		return true
	}
	var partial struct {
		ErrorCode int `json:"error_code"`
		Offsets   []struct {
			Offset int64 `json:"offset"`
		} `json:"offsets"`
	}
	if json.Unmarshal(a.Body, &partial) != nil {
		return false
	}
	if partial.ErrorCode == codeAcksTimedOut {
		return true
	}
	for _, o := range partial.Offsets {
		if o.Offset >= 0 {
			return true
		}
	}
	return false
}

func writeAnswer(w http.ResponseWriter, a idempotency.Answer, replayed bool) {
	if a.ContentType != "" {
		w.Header().Set("Content-Type", a.ContentType)
	}
	if replayed {
		w.Header().Set(replayedHeader, "true")
	} else if a.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	w.WriteHeader(a.Status)
	w.Write(a.Body)
}

func writeKeyError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, idempotency.ErrNotOwner), errors.Is(err, idempotency.ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, codeKeyOwnerUnavailable, err.Error())
	case errors.Is(err, idempotency.ErrFull):
		writeError(w, http.StatusServiceUnavailable, codeKeyBudgetFull, err.Error())
	case errors.Is(err, idempotency.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, err.Error())
	default:
		writeCoreError(w, err)
	}
}

// capturedAnswer holds what the produce handler answered, to be recorded
// before it is sent.
type capturedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
	code   int
}

func (c *capturedAnswer) Header() http.Header { return c.header }

func (c *capturedAnswer) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *capturedAnswer) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(b)
}

func (c *capturedAnswer) setErrorCode(code int) { c.code = code }

func (c *capturedAnswer) answer() idempotency.Answer {
	status := c.status
	if status == 0 {
		status = http.StatusOK
	}
	return idempotency.Answer{Status: status, ContentType: c.header.Get("Content-Type"), Body: bytes.Clone(c.body.Bytes())}
}
