package api

import (
	"encoding/base64"
	"net/http/httptest"
	"testing"

	"github.com/ferry-mq/ferry/server/auth"
)

// BenchmarkAuthenticate is the cost of finding a request's principal once
// the credentials are cached: Basic (a hash and two lookups) and the
// session cookie (a map hit and the verifier check).
func BenchmarkAuthenticate(b *testing.B) {
	creds := &memCredentials{}
	cred, _ := auth.NewScramCredential(auth.ScramSHA512, "s3cret", auth.DefaultScramIterations)
	creds.users = map[string]auth.ScramCredential{"bench": cred}
	a, _ := newAuthenticator(HTTPAuth{Credentials: creds, SessionKey: testSessionKey})
	sess, _ := a.issueSession("bench", cred)
	for _, mode := range []string{"basic", "session"} {
		b.Run(mode, func(b *testing.B) {
			req := httptest.NewRequest("POST", "/kafka/t", nil)
			if mode == "basic" {
				req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("bench:s3cret")))
			} else {
				req.Header.Set("Cookie", sessionCookie+"="+sess)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.authenticate(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
