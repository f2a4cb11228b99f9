package quota

import "testing"

// Entity paths come from ZooKeeper and change notifications; names from
// the network. Neither may panic, and what parses round-trips.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"users/alice", "clients/<default>", "users/<default>/clients/app", "users/a/clients/", "topics/x", "users//clients/x", "users/\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		e, err := ParsePath(p)
		if err != nil {
			return
		}
		if e.Path() != p {
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
	f.Fuzz(func(t *testing.T, k, v string) {
		q, _ := ParseQuotas(map[string]string{k: v})
		for key, val := range q {
			if err := CheckValue(key, val); err != nil {
				t.Fatalf("ParseQuotas kept %s=%v: %v", key, val, err)
			}
		}
	})
}
