package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The server side of SASL exchanges, without I/O: the Kafka listener feeds
// each client token to Step and sends back what it returns. A SCRAM
// exchange (RFC 5802, RFC 7677) takes two steps, PLAIN (RFC 4616) one.
//
//	client-first  n,[a=authzid],n=user,r=cnonce[,ext]
//	server-first  r=cnonce+snonce,s=salt,i=iterations
//	client-final  c=biws,r=cnonce+snonce[,ext],p=proof
//	server-final  v=signature

// ErrAuthenticationFailed is a wrong password or an unknown user: the two
// are one error, so a client cannot learn which user names exist.
var ErrAuthenticationFailed = errors.New("authentication failed: invalid user credentials")

// ErrBadSaslMessage is a token the mechanism cannot parse, or a step the
// exchange is not expecting.
var ErrBadSaslMessage = errors.New("malformed SASL message")

// MaxSaslTokenBytes bounds one client token. Kafka's SCRAM messages are a
// few hundred bytes; PLAIN's hold a user name and a password.
const MaxSaslTokenBytes = 4096

// Mechanism names as clients send them in SaslHandshake.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// SaslExchange is one mechanism's server side for one authentication.
type SaslExchange interface {
	// Step takes the client's next token and returns the answer to send;
	// done is true once the client is authenticated. An error ends the
	// exchange: ErrAuthenticationFailed, or ErrBadSaslMessage wrapped.
	Step(token []byte) (answer []byte, done bool, err error)
	// User is the authenticated user once Step reported done.
	User() string
}

// NewSaslExchange starts mechanism's exchange against creds. secret keys
// the fake salts of unknown users (fixed per node, so they are stable).
func NewSaslExchange(mechanism string, creds Credentials, secret []byte) (SaslExchange, error) {
	switch mechanism {
	case MechanismPlain:
		return &PlainServer{creds: creds, secret: secret}, nil
	case MechanismScramSHA256:
		return NewScramServer(ScramSHA256, creds, secret), nil
	case MechanismScramSHA512:
		return NewScramServer(ScramSHA512, creds, secret), nil
	}
	return nil, fmt.Errorf("unsupported SASL mechanism %q", mechanism)
}

func badMessage(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSaslMessage, fmt.Sprintf(format, args...))
}

// ---- SCRAM

type scramState int8

const (
	scramAwaitFirst scramState = iota
	scramAwaitFinal
	scramDone
	scramFailed
)

// ScramServer is the server side of one SCRAM exchange.
type ScramServer struct {
	mech   ScramMechanism
	creds  Credentials
	secret []byte
	// serverNonce makes the server's part of the nonce; tests replace it
	// to replay RFC 7677's exchange.
	serverNonce func() (string, error)

	state           scramState
	user            string
	cred            ScramCredential
	gs2Header       string // as the client sent it, "n,," or "n,a=user,"
	clientFirstBare string
	serverFirst     string
	nonce           string // client nonce + server nonce
}

// NewScramServer starts a SCRAM exchange for m.
func NewScramServer(m ScramMechanism, creds Credentials, secret []byte) *ScramServer {
	return &ScramServer{mech: m, creds: creds, secret: secret, serverNonce: randomNonce}
}

func randomNonce() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// User is the authenticated user, once Step reported done.
func (s *ScramServer) User() string {
	if s.state != scramDone {
		return ""
	}
	return s.user
}

// Step takes client-first, then client-final.
func (s *ScramServer) Step(token []byte) ([]byte, bool, error) {
	if len(token) > MaxSaslTokenBytes {
		s.state = scramFailed
		return nil, false, badMessage("token of %d bytes, at most %d", len(token), MaxSaslTokenBytes)
	}
	var out []byte
	var err error
	switch s.state {
	case scramAwaitFirst:
		out, err = s.clientFirst(string(token))
	case scramAwaitFinal:
		out, err = s.clientFinal(string(token))
	default:
		err = badMessage("the exchange is over")
	}
	if err != nil {
		s.state = scramFailed
		return nil, false, err
	}
	return out, s.state == scramDone, nil
}

// ClientFirst is a parsed client-first message.
type ClientFirst struct {
	GS2Header string // "n,," or "n,a=<authzid>,", as sent
	AuthzID   string // unescaped; empty when absent
	User      string // unescaped
	Nonce     string
	Bare      string // the message without the GS2 header
}

// ParseClientFirst reads a client-first message. Channel binding ("p=")
// is refused: no listener offers a -PLUS mechanism.
func ParseClientFirst(msg string) (ClientFirst, error) {
	var cf ClientFirst
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return cf, badMessage("client-first without a GS2 header")
	}
	switch {
	case flag == "n", flag == "y":
	case strings.HasPrefix(flag, "p="):
		return cf, badMessage("channel binding is not supported")
	default:
		return cf, badMessage("unknown GS2 channel binding flag")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return cf, badMessage("client-first without a GS2 header")
	}
	if authz != "" {
		v, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return cf, badMessage("GS2 authzid must start with a=")
		}
		id, err := unescapeSaslName(v)
		if err != nil {
			return cf, err
		}
		cf.AuthzID = id
	}
	cf.GS2Header = msg[:len(msg)-len(bare)]
	cf.Bare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 {
		return cf, badMessage("client-first needs n= and r=")
	}
	if strings.HasPrefix(attrs[0], "m=") {
		return cf, badMessage("mandatory extensions are not supported")
	}
	user, ok := strings.CutPrefix(attrs[0], "n=")
	if !ok {
		return cf, badMessage("client-first must start with n=")
	}
	name, err := unescapeSaslName(user)
	if err != nil {
		return cf, err
	}
	if name == "" {
		return cf, badMessage("empty user name")
	}
	cf.User = name
	nonce, ok := strings.CutPrefix(attrs[1], "r=")
	if !ok || nonce == "" {
		return cf, badMessage("client-first needs a nonce r=")
	}
	if !printableNonce(nonce) {
		return cf, badMessage("nonce holds characters RFC 5802 forbids")
	}
	cf.Nonce = nonce
	// Further attributes are extensions (Kafka's tokenauth=true); none is
	// served, and an unknown optional one is ignored as RFC 5802 asks.
	return cf, nil
}

// printableNonce: RFC 5802's printable, ASCII 0x21–0x7e except ','.
func printableNonce(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// unescapeSaslName reads RFC 5802's saslname: "=2C" is ',', "=3D" is
// '=', and no other '=' may appear.
func unescapeSaslName(s string) (string, error) {
	if !strings.ContainsRune(s, '=') {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", badMessage("bad '=' escape in a user name")
		}
		i += 2
	}
	return b.String(), nil
}

// EscapeSaslName is unescapeSaslName's inverse, for clients and tests.
func EscapeSaslName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

func (s *ScramServer) clientFirst(msg string) ([]byte, error) {
	cf, err := ParseClientFirst(msg)
	if err != nil {
		return nil, err
	}
	if cf.AuthzID != "" && cf.AuthzID != cf.User {
		// Kafka allows no impersonation either.
		return nil, ErrAuthenticationFailed
	}
	snonce, err := s.serverNonce()
	if err != nil {
		return nil, err
	}
	s.user, s.gs2Header, s.clientFirstBare = cf.User, cf.GS2Header, cf.Bare
	s.nonce = cf.Nonce + snonce
	s.cred = s.lookup(cf.User)
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) +
		",i=" + strconv.Itoa(s.cred.Iterations)
	s.state = scramAwaitFinal
	return []byte(s.serverFirst), nil
}

// lookup is the user's credential or, for an unknown user, one that no
// proof matches, with a salt that is stable per user name and secret: the
// server-first message looks the same either way.
func (s *ScramServer) lookup(user string) ScramCredential {
	if c, ok := s.creds.Lookup(user, s.mech); ok {
		return c
	}
	return fakeCredential(s.mech, user, s.secret)
}

func fakeCredential(m ScramMechanism, user string, secret []byte) ScramCredential {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(m.String() + "\x00" + user))
	salt := mac.Sum(nil)
	key := make([]byte, m.Hash()().Size())
	rand.Read(key) // no proof can hash to random bytes
	return ScramCredential{Mechanism: m, Salt: salt, StoredKey: key, ServerKey: key, Iterations: DefaultScramIterations}
}

// ClientFinal is a parsed client-final message.
type ClientFinal struct {
	ChannelBinding []byte // c=, decoded
	Nonce          string
	Proof          []byte
	WithoutProof   string // the message up to ",p=", part of AuthMessage
}

// ParseClientFinal reads a client-final message: c=, r=, optional
// extensions, and p= last.
func ParseClientFinal(msg string) (ClientFinal, error) {
	var cf ClientFinal
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return cf, badMessage("client-final without a proof p=")
	}
	proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil {
		return cf, badMessage("proof is not base64")
	}
	cf.Proof, cf.WithoutProof = proof, msg[:i]
	attrs := strings.Split(cf.WithoutProof, ",")
	if len(attrs) < 2 {
		return cf, badMessage("client-final needs c= and r=")
	}
	cb, ok := strings.CutPrefix(attrs[0], "c=")
	if !ok {
		return cf, badMessage("client-final must start with c=")
	}
	if cf.ChannelBinding, err = base64.StdEncoding.DecodeString(cb); err != nil {
		return cf, badMessage("channel binding c= is not base64")
	}
	if cf.Nonce, ok = strings.CutPrefix(attrs[1], "r="); !ok {
		return cf, badMessage("client-final needs r= second")
	}
	return cf, nil
}

func (s *ScramServer) clientFinal(msg string) ([]byte, error) {
	cf, err := ParseClientFinal(msg)
	if err != nil {
		return nil, err
	}
	if string(cf.ChannelBinding) != s.gs2Header {
		return nil, badMessage("channel binding c= does not repeat the GS2 header")
	}
	// RFC 5802 wants r= to be exactly the server-first nonce. Kafka only
	// checks that it ends with it, and librdkafka 2.0 relies on that: it
	// sends its own nonce before the server's combined one. The nonce still
	// has to carry this exchange's fresh server part.
	if !strings.HasSuffix(cf.Nonce, s.nonce) {
		return nil, badMessage("nonce r= does not end with the server's")
	}
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + cf.WithoutProof)
	signature := hmacSum(s.mech, s.cred.StoredKey, authMessage)
	if len(cf.Proof) != len(signature) {
		return nil, ErrAuthenticationFailed
	}
	clientKey := make([]byte, len(signature))
	subtle.XORBytes(clientKey, cf.Proof, signature)
	h := s.mech.Hash()()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, ErrAuthenticationFailed
	}
	s.state = scramDone
	verifier := hmacSum(s.mech, s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(verifier)), nil
}

// ---- PLAIN

// PlainServer is the server side of one PLAIN exchange: one message,
// authzid NUL user NUL password, checked against the user's SCRAM
// verifier (SHA-256 first, else SHA-512).
type PlainServer struct {
	creds  Credentials
	secret []byte
	user   string
	done   bool
	used   bool
}

// ParsePlain splits a PLAIN message.
func ParsePlain(msg []byte) (authzid, user, password string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", "", badMessage("PLAIN wants authzid NUL user NUL password")
	}
	if len(parts[1]) == 0 || len(parts[2]) == 0 {
		return "", "", "", badMessage("PLAIN with an empty user or password")
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}

// Step checks the one PLAIN message.
func (p *PlainServer) Step(token []byte) ([]byte, bool, error) {
	if p.used {
		return nil, false, badMessage("the exchange is over")
	}
	p.used = true
	if len(token) > MaxSaslTokenBytes {
		return nil, false, badMessage("token of %d bytes, at most %d", len(token), MaxSaslTokenBytes)
	}
	authzid, user, password, err := ParsePlain(token)
	if err != nil {
		return nil, false, err
	}
	if authzid != "" && authzid != user {
		return nil, false, ErrAuthenticationFailed
	}
	cred, ok := p.creds.Lookup(user, ScramSHA256)
	if !ok {
		cred, ok = p.creds.Lookup(user, ScramSHA512)
	}
	if !ok {
		// Spend the same PBKDF2 an existing user costs.
		fakeCredential(ScramSHA256, user, p.secret).VerifyPassword(password)
		return nil, false, ErrAuthenticationFailed
	}
	if !cred.VerifyPassword(password) {
		return nil, false, ErrAuthenticationFailed
	}
	p.user, p.done = user, true
	return nil, true, nil
}

// User is the authenticated user, once Step reported done.
func (p *PlainServer) User() string {
	if !p.done {
		return ""
	}
	return p.user
}
