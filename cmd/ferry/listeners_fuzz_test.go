package main

import (
	"net"
	"testing"
)

// FuzzResolveListeners: arbitrary listener settings never panic, and
// what resolves has distinct names, parseable addresses and an
// inter-broker listener among them.
func FuzzResolveListeners(f *testing.F) {
	f.Add("PLAINTEXT://:9092,SSL://:9093", "SSL://h:9093", "", "SSL")
	f.Add("INTERNAL://127.0.0.1:1,EXTERNAL://[::1]:2", "", "INTERNAL:SSL,EXTERNAL:PLAINTEXT", "")
	f.Add("a://:1,A://:2", "A://x:1", "A:PLAINTEXT", "a")
	f.Add(":::", "://", ":", "")
	f.Fuzz(func(t *testing.T, listeners, advertised, protocolMap, inter string) {
		ls := listenerSettings{listeners: listeners, advertised: advertised, protocolMap: protocolMap, interBroker: inter,
			ssl: map[string]string{"keystore.location": "/k.pem"}}
		specs, name, err := resolveListeners(ls, ":9092", "")
		if err != nil {
			return
		}
		seen := map[string]bool{}
		found := false
		for _, l := range specs {
			if seen[l.name] {
				t.Fatalf("listener %s twice in %q", l.name, listeners)
			}
			seen[l.name] = true
			found = found || l.name == name
			if _, _, err := net.SplitHostPort(l.advertised); err != nil {
				t.Fatalf("advertised %q: %v", l.advertised, err)
			}
		}
		if !found {
			t.Fatalf("inter-broker listener %s is not among %+v", name, specs)
		}
	})
}
