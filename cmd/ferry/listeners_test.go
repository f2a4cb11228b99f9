package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/tlsconf"
)

func TestResolveListenersDefaults(t *testing.T) {
	ls, inter, err := resolveListeners(listenerSettings{}, ":9092", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].name != "PLAINTEXT" || ls[0].addr != ":9092" || ls[0].advertised != "localhost:9092" || ls[0].protocol != auth.Plaintext || inter != "PLAINTEXT" {
		t.Fatalf("got %+v, inter %s", ls, inter)
	}
	ls, _, err = resolveListeners(listenerSettings{}, "127.0.0.1:1", "broker1:9092")
	if err != nil || ls[0].advertised != "broker1:9092" {
		t.Fatalf("--advertised-kafka-addr: %+v %v", ls, err)
	}
}

func TestResolveListenersKafkaStyle(t *testing.T) {
	ssl := map[string]string{"keystore.location": "/etc/ferry/broker.pem", "truststore.location": "/etc/ferry/ca.pem", "client.auth": "required"}
	ls, inter, err := resolveListeners(listenerSettings{
		listeners:   "internal://127.0.0.1:9093,EXTERNAL://:9092,SSL://:9094",
		advertised:  "INTERNAL://b1.internal:9093,EXTERNAL://b1.example.com:9092",
		protocolMap: "INTERNAL:SSL,EXTERNAL:PLAINTEXT,SSL:SSL",
		interBroker: "INTERNAL",
		ssl:         ssl,
		perListener: map[string]map[string]string{"internal": {"client.auth": "none", "keystore.location": "/etc/ferry/internal.pem"}},
	}, ":9092", "")
	if err != nil {
		t.Fatal(err)
	}
	if inter != "INTERNAL" || len(ls) != 3 {
		t.Fatalf("inter %s, listeners %+v", inter, ls)
	}
	want := []listenerSpec{
		{name: "INTERNAL", addr: "127.0.0.1:9093", advertised: "b1.internal:9093", protocol: auth.SSL,
			tls: tlsconf.Files{KeystoreLocation: "/etc/ferry/internal.pem", TruststoreLocation: "/etc/ferry/ca.pem", ClientAuth: tlsconf.ClientAuthNone}},
		{name: "EXTERNAL", addr: ":9092", advertised: "b1.example.com:9092", protocol: auth.Plaintext},
		{name: "SSL", addr: ":9094", advertised: "localhost:9094", protocol: auth.SSL,
			tls: tlsconf.Files{KeystoreLocation: "/etc/ferry/broker.pem", TruststoreLocation: "/etc/ferry/ca.pem", ClientAuth: tlsconf.ClientAuthRequired}},
	}
	for i := range want {
		if ls[i] != want[i] {
			t.Errorf("listener %d: got %+v, want %+v", i, ls[i], want[i])
		}
	}
	// Without inter.broker.listener.name: PLAINTEXT when there is one,
	// else the first.
	if _, inter, _ := resolveListeners(listenerSettings{listeners: "SSL://:1,PLAINTEXT://:2", ssl: ssl}, "", ""); inter != "PLAINTEXT" {
		t.Errorf("default inter-broker listener %s, want PLAINTEXT", inter)
	}
	if _, inter, _ := resolveListeners(listenerSettings{listeners: "SSL://:1,SASL_PLAINTEXT://:2", ssl: ssl}, "", ""); inter != "SSL" {
		t.Errorf("default inter-broker listener %s, want the first (SSL)", inter)
	}
}

func TestResolveListenersErrors(t *testing.T) {
	ssl := map[string]string{"keystore.location": "/k.pem"}
	for _, tc := range []struct {
		name string
		ls   listenerSettings
		want string
	}{
		{"duplicate name", listenerSettings{listeners: "PLAINTEXT://:1,plaintext://:2"}, "given twice"},
		{"duplicate port", listenerSettings{listeners: "PLAINTEXT://:1,SSL://127.0.0.1:1", ssl: ssl}, "both use port 1"},
		{"unmapped name", listenerSettings{listeners: "INTERNAL://:1"}, "INTERNAL is not a protocol name"},
		{"not in map", listenerSettings{listeners: "INTERNAL://:1,EXTERNAL://:2", protocolMap: "INTERNAL:PLAINTEXT"}, "EXTERNAL is not in listener.security.protocol.map"},
		{"bad protocol", listenerSettings{listeners: "A://:1", protocolMap: "A:TLS"}, "unknown security protocol"},
		{"bad syntax", listenerSettings{listeners: "PLAINTEXT:9092"}, "not NAME://host:port"},
		{"advertised unknown", listenerSettings{listeners: "PLAINTEXT://:1", advertised: "SSL://h:2"}, "SSL is not one of listeners"},
		{"advertised wildcard", listenerSettings{listeners: "PLAINTEXT://:1", advertised: "PLAINTEXT://0.0.0.0:1"}, "not an address clients can connect to"},
		{"inter-broker unknown", listenerSettings{listeners: "PLAINTEXT://:1", interBroker: "INTERNAL"}, "INTERNAL is not one of listeners"},
		{"SSL without keystore", listenerSettings{listeners: "SSL://:1"}, "needs ssl.keystore.location"},
		{"JKS", listenerSettings{listeners: "SSL://:1", ssl: map[string]string{"keystore.location": "/k", "keystore.type": "JKS"}}, "only PEM is supported"},
		{"bad client auth", listenerSettings{listeners: "SSL://:1", ssl: map[string]string{"keystore.location": "/k", "client.auth": "maybe"}}, "ssl.client.auth"},
		{"bad identification", listenerSettings{listeners: "SSL://:1", ssl: map[string]string{"keystore.location": "/k", "endpoint.identification.algorithm": "dns"}}, "want https or empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := resolveListeners(tc.ls, ":9092", "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestListenerSettingsFromProperties: Kafka's keys in server.properties,
// including per-listener overrides, reach the listeners.
func TestListenerSettingsFromProperties(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	props := `listeners=PLAINTEXT://127.0.0.1:19092,INTERNAL://127.0.0.1:19093
advertised.listeners=PLAINTEXT://kafka.example.com:19092
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL
inter.broker.listener.name=INTERNAL
ssl.keystore.type=PEM
ssl.keystore.location=/etc/ferry/broker.pem
ssl.truststore.location=/etc/ferry/ca.pem
listener.name.internal.ssl.client.auth=required
`
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	s, warnings, err := loadServeSettings([]string{"--config", path})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings %v", warnings)
	}
	if s.interBroker != "INTERNAL" || len(s.listeners) != 2 || s.listeners[1].tls.ClientAuth != tlsconf.ClientAuthRequired ||
		s.advertisedKafkaAddr != "kafka.example.com:19092" || s.listeners[1].advertised != "127.0.0.1:19093" {
		t.Fatalf("got %+v, inter %s, advertised %s", s.listeners, s.interBroker, s.advertisedKafkaAddr)
	}
	if s.selfKafkaAddr() != "127.0.0.1:19093" {
		t.Fatalf("self address %s", s.selfKafkaAddr())
	}
	eps, err := s.endpoints()
	if err != nil || len(eps) != 2 || eps[1].SecurityProtocol != "SSL" || eps[0].Host != "kafka.example.com" {
		t.Fatalf("endpoints %+v %v", eps, err)
	}
}

// TestInterBrokerSASLNeedsCredentialsOnACluster: a cluster broker whose
// inter-broker listener asks for SASL must be told whom to authenticate
// as; a single node need not.
func TestInterBrokerSASLNeedsCredentialsOnACluster(t *testing.T) {
	_, _, err := loadServeSettings([]string{"--listeners", "SASL_PLAINTEXT://127.0.0.1:1", "--zookeeper", "127.0.0.1:2181"})
	if err == nil || !strings.Contains(err.Error(), "--inter-broker-sasl-username") {
		t.Fatalf("err %v", err)
	}
	if _, _, err := loadServeSettings([]string{"--listeners", "SASL_PLAINTEXT://127.0.0.1:1", "--zookeeper", "127.0.0.1:2181",
		"--inter-broker-sasl-username", "broker", "--inter-broker-sasl-password-file", "/dev/null"}); err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	s, _, err := loadServeSettings([]string{"--listeners", "SASL_PLAINTEXT://127.0.0.1:1"})
	if err != nil || s.listeners[0].protocol != auth.SASLPlaintext {
		t.Fatalf("single node: %+v %v", s.listeners, err)
	}
	ls, _, err := resolveListeners(listenerSettings{shorthand: auth.SASLPlaintext}, ":9092", "")
	if err != nil || ls[0].name != "SASL_PLAINTEXT" || ls[0].protocol != auth.SASLPlaintext {
		t.Fatalf("shorthand listener %+v %v", ls, err)
	}
}

func TestEndpointIdentificationSetting(t *testing.T) {
	for _, tc := range []struct {
		ssl  map[string]string
		skip bool
	}{
		{map[string]string{"keystore.location": "/k"}, false},
		{map[string]string{"keystore.location": "/k", "endpoint.identification.algorithm": "HTTPS"}, false},
		{map[string]string{"keystore.location": "/k", "endpoint.identification.algorithm": ""}, true},
	} {
		ls, _, err := resolveListeners(listenerSettings{listeners: "SSL://:1", ssl: tc.ssl}, "", "")
		if err != nil || ls[0].tls.SkipHostnameVerification != tc.skip {
			t.Errorf("%v: skip %v, err %v; want skip %v", tc.ssl, ls[0].tls.SkipHostnameVerification, err, tc.skip)
		}
	}
}

// max.connection.creation.rate is a flag and a key; a listener's own is
// listener.name.<name>.max.connection.creation.rate in the file, refused
// for a listener that does not exist or a value that is not a count.
func TestConnectionCreationRateSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(props string) string {
		path := filepath.Join(dir, "server.properties")
		if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := write("listeners=PLAINTEXT://127.0.0.1:19092,INTERNAL://127.0.0.1:19093\n" +
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT\ninter.broker.listener.name=INTERNAL\n" +
		"max.connection.creation.rate=50\nlistener.name.INTERNAL.max.connection.creation.rate=10\n")
	s, warnings, err := loadServeSettings([]string{"--config", path})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("%v %v", err, warnings)
	}
	if s.kafkaLimits.MaxConnectionCreationRate != 50 {
		t.Fatalf("max.connection.creation.rate %d", s.kafkaLimits.MaxConnectionCreationRate)
	}
	ls, _, err := kafkaListeners(s, slog.Default())
	if err != nil || len(ls) != 2 || ls[0].MaxConnectionCreationRate != 0 || ls[1].MaxConnectionCreationRate != 10 {
		t.Fatalf("listeners %+v %v", ls, err)
	}
	if s, _, err := loadServeSettings([]string{"--max-connection-creation-rate", "7"}); err != nil || s.kafkaLimits.MaxConnectionCreationRate != 7 {
		t.Fatalf("flag: %v %d", err, s.kafkaLimits.MaxConnectionCreationRate)
	}
	if _, _, err := loadServeSettings([]string{"--config", write("listener.name.plaintext.max.connection.creation.rate=-1\n")}); err == nil {
		t.Fatal("a negative listener rate accepted")
	}
	s, _, err = loadServeSettings([]string{"--config", write("listener.name.nope.max.connection.creation.rate=5\n")})
	if err == nil {
		_, _, err = kafkaListeners(s, slog.Default())
	}
	if err == nil || !strings.Contains(err.Error(), "no listener NOPE") {
		t.Fatalf("a rate for a listener that does not exist: %v", err)
	}
}
