package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	e, err := parseJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required
		username="broker" password="p\"w;=1" tokenauth=false;`)
	if err != nil {
		t.Fatal(err)
	}
	if e.module != "org.apache.kafka.common.security.scram.ScramLoginModule" || e.flag != "required" ||
		e.options["username"] != "broker" || e.options["password"] != `p"w;=1` || e.options["tokenauth"] != "false" {
		t.Fatalf("parsed %+v", e)
	}
	for _, bad := range []string{
		``,
		`ScramLoginModule`,
		`ScramLoginModule mandatory username="a";`,
		`ScramLoginModule required username="a"`,
		`ScramLoginModule required username="a;`,
		`ScramLoginModule required username;`,
		`ScramLoginModule required username="a" username="b";`,
		`ScramLoginModule required username="a"; PlainLoginModule required;`,
		`ScramLoginModule required ="a";`,
		strings.Repeat("x", maxJAASLength+1),
	} {
		if _, err := parseJAAS(bad); err == nil {
			t.Errorf("%.60q accepted", bad)
		}
	}
}

func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b" user_a="b";`)
	f.Add(`M optional k="\\\"";`)
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseJAAS(s)
		if err == nil && (e.module == "" || e.flag == "") {
			t.Fatalf("an entry without module or flag accepted: %+v", e)
		}
	})
}

// A Kafka operator's server.properties gives the broker's own credentials
// in the inter-broker listener's sasl.jaas.config; ferry's own options
// win over it, a PLAIN user list is not taken (warned), and a module that
// cannot log in with the mechanism is refused.
func TestInterBrokerCredentialsFromJAAS(t *testing.T) {
	dir := t.TempDir()
	load := func(t *testing.T, props string, args ...string) (serveSettings, []string, error) {
		t.Helper()
		path := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".properties")
		if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
			t.Fatal(err)
		}
		base := []string{"--config", path, "--zookeeper", "127.0.0.1:1", "--data-dir", dir,
			"--listeners", "EXTERNAL://127.0.0.1:1,INTERNAL://127.0.0.1:2",
			"--listener-security-protocol-map", "EXTERNAL:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
			"--inter-broker-listener-name", "INTERNAL"}
		return loadServeSettings(append(base, args...))
	}
	const scram = `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="from-jaas";`

	t.Run("the listener's own line", func(t *testing.T) {
		s, _, err := load(t, "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"wide\" password=\"x\";\n"+
			"listener.name.internal.scram-sha-512.sasl.jaas.config="+scram+"\n")
		if err != nil || s.interSASL.user != "broker" || s.interSASL.password != "from-jaas" {
			t.Fatalf("user %q password %q: %v", s.interSASL.user, s.interSASL.password, err)
		}
		if _, err := s.interSASL.mechanismOf(); err != nil {
			t.Fatalf("the mechanism from a JAAS password: %v", err)
		}
	})
	t.Run("the broker-wide line", func(t *testing.T) {
		s, _, err := load(t, "sasl.jaas.config="+scram+"\n")
		if err != nil || s.interSASL.user != "broker" {
			t.Fatalf("user %q: %v", s.interSASL.user, err)
		}
	})
	t.Run("another listener's line is not this one's", func(t *testing.T) {
		_, _, err := load(t, "listener.name.external.scram-sha-512.sasl.jaas.config="+scram+"\n")
		if err == nil || !strings.Contains(err.Error(), "inter.broker.listener.name") {
			t.Fatalf("credentials of the client listener used between brokers: %v", err)
		}
	})
	t.Run("ferry's options win", func(t *testing.T) {
		pw := filepath.Join(dir, "pw")
		if err := os.WriteFile(pw, []byte("from-file\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s, _, err := load(t, "sasl.jaas.config="+scram+"\n", "--inter-broker-sasl-username", "other", "--inter-broker-sasl-password-file", pw)
		if err != nil || s.interSASL.user != "other" || s.interSASL.password != "" {
			t.Fatalf("user %q password %q: %v", s.interSASL.user, s.interSASL.password, err)
		}
	})
	t.Run("PLAIN with a user list", func(t *testing.T) {
		s, warnings, err := load(t, "sasl.mechanism.inter.broker.protocol=PLAIN\n"+
			`listener.name.internal.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="b" user_broker="b" user_alice="a";`+"\n")
		if err != nil || s.interSASL.user != "broker" || s.interSASL.mechanism != "PLAIN" {
			t.Fatalf("user %q mechanism %q: %v", s.interSASL.user, s.interSASL.mechanism, err)
		}
		if got := strings.Join(warnings, "\n"); !strings.Contains(got, "user_alice is ignored") || !strings.Contains(got, "ferry users create alice") {
			t.Fatalf("warnings %q", got)
		}
		if strings.Contains(strings.Join(warnings, "\n"), `"a"`) {
			t.Fatal("a warning shows a password")
		}
	})
	t.Run("a module of another mechanism", func(t *testing.T) {
		_, _, err := load(t, `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="b";`+"\n")
		if err == nil || !strings.Contains(err.Error(), "ScramLoginModule") {
			t.Fatalf("PlainLoginModule for SCRAM-SHA-512: %v", err)
		}
	})
	t.Run("no password", func(t *testing.T) {
		_, _, err := load(t, `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker";`+"\n")
		if err == nil || !strings.Contains(err.Error(), "want username and password") {
			t.Fatalf("a line without a password: %v", err)
		}
	})
}
