package quota

import "testing"

// Entity paths come from ZooKeeper and change notifications; names from
// the network. Neither may panic, and what parses round-trips.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"users/alice", "clients/<default>", "users/<default>/clients/app", "users/a/clients/", "topics/x", "users//clients/x", "users/\x00",
		"ips/127.0.0.1", "ips/0:0::1", "ips/<default>", "ips/::ffff:1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		e, err := ParsePath(p)
		if err != nil {
			return
		}
		if again, err := ParsePath(e.Path()); err != nil || again != e {
			t.Fatalf("ParsePath(%q).Path() = %q reads as %v %v", p, e.Path(), again, err)
		}
		if e.Path() != p && !e.IP.Set {
			t.Fatalf("ParsePath(%q).Path() = %q", p, e.Path())
		}
		back, err := EntityOf(e.Components())
		if err != nil || back != e {
			t.Fatalf("components of %q: %v %v", p, back, err)
		}
	})
}

func FuzzParseQuotas(f *testing.F) {
	f.Add("producer_byte_rate", "1048576")
	f.Add("request_percentage", "NaN")
	f.Add("consumer_byte_rate", "1e400")
	f.Add("connection_creation_rate", "2.5")
	f.Fuzz(func(t *testing.T, k, v string) {
		q, _ := ParseQuotas(Entity{Client: DefaultComponent}, map[string]string{k: v})
		ipq, _ := ParseQuotas(Entity{IP: DefaultComponent}, map[string]string{k: v})
		for key := range ipq {
			q[key] = ipq[key]
		}
		for key, val := range q {
			if err := CheckValue(key, val); err != nil {
				t.Fatalf("ParseQuotas kept %s=%v: %v", key, val, err)
			}
		}
	})
}
