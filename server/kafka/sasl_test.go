package kafka

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/records"
)

// saslUsers: alice has SCRAM-SHA-256, bob SCRAM-SHA-512.
func saslUsers(t testing.TB) *auth.CredentialSet {
	set := auth.NewCredentialSet()
	for user, m := range map[string]auth.ScramMechanism{"alice": auth.ScramSHA256, "bob": auth.ScramSHA512} {
		c, err := auth.NewScramCredential(m, user+"-secret", 4096)
		if err != nil {
			t.Fatal(err)
		}
		set.SetUser(user, auth.UserCredentials{m: c})
	}
	return set
}

func newSaslServer(t *testing.T, mutate ...func(*Config)) *testServer {
	users := saslUsers(t)
	return newTestServer(t, append([]func(*Config){func(c *Config) {
		c.SecurityProtocol, c.Credentials = auth.SASLPlaintext, users
	}}, mutate...)...)
}

func handshake(c *client, mechanism string, v int16) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Mechanism = mechanism
	return do[*kmsg.SASLHandshakeResponse](c, req, v)
}

// authenticate runs a franz-go mechanism over SaslAuthenticate v and
// returns the last answer.
func authenticate(t *testing.T, c *client, m sasl.Mechanism, v int16) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	if hs := handshake(c, m.Name(), 1); hs.ErrorCode != 0 {
		t.Fatalf("handshake %s: %v", m.Name(), kerr.ErrorForCode(hs.ErrorCode))
	}
	sess, token, err := m.Authenticate(context.Background(), c.nc.RemoteAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = token
		resp := do[*kmsg.SASLAuthenticateResponse](c, req, v)
		if resp.ErrorCode != 0 {
			return resp
		}
		done, next, err := sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			t.Fatalf("client refused the answer: %v", err)
		}
		if done {
			return resp
		}
		token = next
	}
}

func metadataWorks(t *testing.T, c *client) {
	t.Helper()
	resp := do[*kmsg.MetadataResponse](c, kmsg.NewPtrMetadataRequest(), 12)
	if len(resp.Brokers) != 1 {
		t.Fatalf("metadata brokers %v", resp.Brokers)
	}
}

func TestSaslListenerServesOnlyAuthenticationBeforeIt(t *testing.T) {
	ts := newSaslServer(t)
	c := ts.dial(t)
	versions := do[*kmsg.ApiVersionsResponse](c, kmsg.NewPtrApiVersionsRequest(), 3)
	var advertised []int16
	for _, k := range versions.ApiKeys {
		advertised = append(advertised, k.ApiKey)
	}
	if !slices.Contains(advertised, 17) || !slices.Contains(advertised, 36) {
		t.Errorf("ApiVersions does not advertise SASL: %v", advertised)
	}
	hs := handshake(c, "GSSAPI", 1)
	if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || !slices.Equal(hs.SupportedMechanisms, DefaultSaslMechanisms()) {
		t.Errorf("GSSAPI: code %d, mechanisms %v", hs.ErrorCode, hs.SupportedMechanisms)
	}
	// still open: a Produce now closes it, unanswered
	produce := produceReq("t", 0, 1, batch(t, records.BatchOptions{}, "x"))
	produce.SetVersion(9)
	c.send(produce)
	c.expectClosed()
	if slices.Contains(ts.broker.Topics(), "t") {
		t.Error("the unauthenticated produce created its topic")
	}

	c = ts.dial(t)
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SASLAuthBytes = []byte("n,,n=alice,r=abc")
	if resp := do[*kmsg.SASLAuthenticateResponse](c, req, 1); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("authenticate before a handshake: code %d", resp.ErrorCode)
	}
	c.expectClosed()
}

func TestSaslAuthenticatesEachMechanism(t *testing.T) {
	ts := newSaslServer(t)
	for _, m := range []sasl.Mechanism{
		scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
		scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism(),
		plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism(),
	} {
		for _, v := range []int16{0, 1, 2} {
			c := ts.dial(t)
			resp := authenticate(t, c, m, v)
			if resp.ErrorCode != 0 {
				t.Fatalf("%s v%d: %v %v", m.Name(), v, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
			}
			if resp.SessionLifetimeMillis != 0 {
				t.Errorf("lifetime %d without connections.max.reauth.ms", resp.SessionLifetimeMillis)
			}
			metadataWorks(t, c)
			if hs := handshake(c, m.Name(), 0); hs.ErrorCode != kerr.IllegalSaslState.Code {
				t.Errorf("%s: handshake v0 after authenticating: code %d", m.Name(), hs.ErrorCode)
			}
			c.expectClosed()
		}
	}
}

func TestSaslRefusesBadCredentialsAndCloses(t *testing.T) {
	ts := newSaslServer(t)
	for _, tc := range []struct {
		m   sasl.Mechanism
		msg string
	}{
		{scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism(), "Authentication failed: Invalid user credentials"},
		{scram.Auth{User: "nobody", Pass: "wrong"}.AsSha256Mechanism(), "Authentication failed: Invalid user credentials"},
		{scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), "Authentication failed: Invalid user credentials"},
		{plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism(), "Authentication failed: Invalid username or password"},
		{plain.Auth{User: "alice", Pass: "alice-secret", Zid: "bob"}.AsMechanism(), "Authentication failed: Invalid username or password"},
	} {
		c := ts.dial(t)
		resp := authenticate(t, c, tc.m, 2)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg {
			t.Errorf("%s: code %d message %v", tc.m.Name(), resp.ErrorCode, resp.ErrorMessage)
		}
		c.expectClosed()
	}
	c := ts.dial(t)
	handshake(c, auth.MechanismScramSHA256, 1)
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SASLAuthBytes = make([]byte, auth.MaxSaslTokenBytes+1)
	resp := do[*kmsg.SASLAuthenticateResponse](c, req, 1)
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code ||
		*resp.ErrorMessage != "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" {
		t.Errorf("oversized token: code %d message %v", resp.ErrorCode, resp.ErrorMessage)
	}
	c.expectClosed()
}

// SaslHandshake v0 is followed by bare size-prefixed tokens.
func TestSaslHandshakeV0TakesBareTokens(t *testing.T) {
	ts := newSaslServer(t)
	for _, m := range []sasl.Mechanism{
		plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism(),
	} {
		c := ts.dial(t)
		if hs := handshake(c, m.Name(), 0); hs.ErrorCode != 0 {
			t.Fatalf("handshake v0: %d", hs.ErrorCode)
		}
		sess, token, _ := m.Authenticate(context.Background(), ts.addr)
		for done := false; !done; {
			frame := binary.BigEndian.AppendUint32(nil, uint32(len(token)))
			c.nc.Write(append(frame, token...))
			answer, err := c.readFrame()
			if err != nil {
				t.Fatalf("%s: raw answer: %v", m.Name(), err)
			}
			var cerr error
			if done, token, cerr = sess.Challenge(answer); cerr != nil {
				t.Fatal(cerr)
			}
		}
		metadataWorks(t, c)
	}
	c := ts.dial(t)
	handshake(c, auth.MechanismPlain, 0)
	c.nc.Write(append(binary.BigEndian.AppendUint32(nil, 14), "\x00alice\x00wrong!!"...))
	if _, err := c.readFrame(); err != io.EOF {
		t.Errorf("bad raw PLAIN: %v, want the connection closed", err)
	}
}

func TestSaslSessionsExpireWithoutReauthentication(t *testing.T) {
	const lifetime = 200 * time.Millisecond
	var clock testClock
	ts := newSaslServer(t, func(c *Config) { c.ReauthTimeout, c.Clock = lifetime, clock.now })
	waitPast := func(d time.Duration) { clock.advance(d + time.Millisecond) }
	alice := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()

	// A client that re-authenticates in time keeps its connection, and one
	// past the deadline may still re-authenticate.
	c := ts.dial(t)
	if resp := authenticate(t, c, alice, 1); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("code %d lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	metadataWorks(t, c)
	waitPast(lifetime)
	if hs := handshake(c, auth.MechanismPlain, 1); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("re-authentication with another mechanism: code %d", hs.ErrorCode)
	}
	c.expectClosed()

	c = ts.dial(t)
	authenticate(t, c, alice, 2)
	waitPast(lifetime)
	if resp := authenticate(t, c, alice, 2); resp.ErrorCode != 0 {
		t.Fatalf("re-authentication: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	metadataWorks(t, c)

	// A client that does not re-authenticate is disconnected.
	c = ts.dial(t)
	authenticate(t, c, alice, 1)
	waitPast(lifetime)
	c.send(kmsg.NewPtrMetadataRequest())
	c.expectClosed()
}

func TestSaslReauthenticationKeepsTheUser(t *testing.T) {
	set := saslUsers(t)
	cred, _ := auth.NewScramCredential(auth.ScramSHA256, "carol-secret", 4096)
	set.SetUser("carol", auth.UserCredentials{auth.ScramSHA256: cred})
	ts := newTestServer(t, func(c *Config) {
		c.SecurityProtocol, c.Credentials, c.ReauthTimeout = auth.SASLPlaintext, set, time.Minute
	})
	c := ts.dial(t)
	authenticate(t, c, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), 1)
	resp := authenticate(t, c, scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism(), 1)
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "Cannot change principals during re-authentication from User:alice: User:carol" {
		t.Errorf("another user: code %d message %v", resp.ErrorCode, resp.ErrorMessage)
	}
	c.expectClosed()
}

func TestPlaintextListenerRefusesSasl(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	if hs := handshake(c, auth.MechanismPlain, 1); hs.ErrorCode != kerr.IllegalSaslState.Code || len(hs.SupportedMechanisms) != 0 {
		t.Errorf("handshake on PLAINTEXT: code %d mechanisms %v", hs.ErrorCode, hs.SupportedMechanisms)
	}
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	if r := do[*kmsg.SASLAuthenticateResponse](c, req, 2); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("authenticate on PLAINTEXT: code %d", r.ErrorCode)
	}
	metadataWorks(t, c)
}

// testClock is a Config.Clock the test moves: a session runs out when
// the test says so, not after a sleep.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// FuzzSaslConnection writes arbitrary bytes to a SASL listener after a
// valid start (ApiVersions, a handshake of each version): the server must
// answer or close, never panic, and never serve Metadata unauthenticated.
func FuzzSaslConnection(f *testing.F) {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	auth1 := kmsg.NewPtrSASLAuthenticateRequest()
	auth1.SASLAuthBytes = []byte("n,,n=alice,r=abc")
	auth1.SetVersion(2)
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	f.Add(false, fm.AppendRequest(nil, auth1, 2))
	f.Add(false, fm.AppendRequest(fm.AppendRequest(nil, auth1, 2), meta, 3))
	f.Add(true, append(binary.BigEndian.AppendUint32(nil, 16), "n,,n=alice,r=abc"...))
	f.Add(true, append(binary.BigEndian.AppendUint32(nil, 13), "\x00alice\x00bad!!"...))
	f.Add(true, []byte{0x7f, 0xff, 0xff, 0xff})
	users := saslUsers(f)
	ts := newTestServer(f, func(c *Config) {
		c.SecurityProtocol, c.Credentials, c.MaxRequestBytes = auth.SASLPlaintext, users, 1<<16
		c.FailedAuthenticationDelay = -1
	})
	f.Fuzz(func(t *testing.T, raw bool, data []byte) {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = auth.MechanismScramSHA256
		if raw {
			hs.Mechanism = auth.MechanismPlain
			hs.SetVersion(0)
		} else {
			hs.SetVersion(1)
		}
		nc.Write(append(fm.AppendRequest(nil, hs, 1), data...))
		nc.(*net.TCPConn).CloseWrite()
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.Copy(io.Discard, nc); err != nil {
			t.Fatalf("the server neither answered nor closed: %v", err)
		}
		if n := ts.logs.bugCount(); n > 0 {
			t.Fatalf("%d requests panicked", n)
		}
	})
}

// A failed authentication is answered only after the delay, so a guesser
// gets a few tries a second per connection.
func TestSaslFailureIsDelayed(t *testing.T) {
	const delay = 300 * time.Millisecond
	ts := newSaslServer(t, func(c *Config) { c.FailedAuthenticationDelay = delay })
	c := ts.dial(t)
	start := time.Now()
	resp := authenticate(t, c, plain.Auth{User: "alice", Pass: "guess"}.AsMechanism(), 1)
	if took := time.Since(start); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || took < delay {
		t.Fatalf("code %d after %v, want SASL_AUTHENTICATION_FAILED after at least %v", resp.ErrorCode, took, delay)
	}
	c = ts.dial(t)
	start = time.Now()
	authenticate(t, c, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), 1)
	if took := time.Since(start); took >= delay {
		t.Errorf("a successful authentication took %v", took)
	}
}

// The handlers run on the connection's reader; driven directly, they show
// the connection runs as User:<name> once, and only once, it authenticated.
func TestSaslSetsTheConnectionsPrincipal(t *testing.T) {
	ts := newSaslServer(t)
	c := &conn{s: ts.Server, protocol: auth.SASLPlaintext, principal: auth.Anonymous}
	ctx := context.WithValue(context.Background(), requestClientKey{}, requestClient{conn: c})
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism, hs.Version = auth.MechanismScramSHA512, 1
	if r := ts.handleSaslHandshake(ctx, hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: %d", r.ErrorCode)
	}
	sess, token, _ := scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism().Authenticate(ctx, "x")
	for done := false; !done; {
		if c.principal != auth.Anonymous {
			t.Fatalf("principal %v before the exchange ended", c.principal)
		}
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 2, token
		r := ts.handleSaslAuthenticate(ctx, req).(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("authenticate: %d", r.ErrorCode)
		}
		var err error
		if done, token, err = sess.Challenge(r.SASLAuthBytes); err != nil {
			t.Fatal(err)
		}
	}
	if c.principal != auth.User("bob") || c.closeAfterResponse {
		t.Fatalf("principal %v, close %v; want User:bob, open", c.principal, c.closeAfterResponse)
	}
}

// Failed logins are counted by error, for alerts on password guessing.
func TestSaslFailuresAreCounted(t *testing.T) {
	m := metrics.New()
	ts := newSaslServer(t, func(c *Config) { c.Metrics, c.FailedAuthenticationDelay = m, -1 })
	for range 3 {
		authenticate(t, ts.dial(t), plain.Auth{User: "alice", Pass: "guess"}.AsMechanism(), 1)
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var failed float64
	for _, f := range families {
		if f.GetName() != "ferry_request_errors_total" {
			continue
		}
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["api"] == "SASLAuthenticate" && labels["code"] == "SASL_AUTHENTICATION_FAILED" {
				failed += metric.GetCounter().GetValue()
			}
		}
	}
	if failed != 3 {
		t.Errorf("%v failed SASLAuthenticate counted, want 3", failed)
	}
}
