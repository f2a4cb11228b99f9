package features

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

var tv = TransactionVersion

func brokersAt(maxes ...int16) []BrokerSupport {
	var out []BrokerSupport
	for i, m := range maxes {
		b := BrokerSupport{ID: int32(i + 1), Features: map[string]Range{}}
		if m >= 0 {
			b.Features[tv] = Range{Min: 0, Max: m}
		}
		out = append(out, b)
	}
	return out
}

// Kafka 3.9's rules, update by update.
func TestDecide(t *testing.T) {
	at2 := Finalized{Levels: map[string]int16{tv: 2}, Epoch: 3}
	supported := Supported(2)
	for _, tc := range []struct {
		name    string
		cur     Finalized
		brokers []BrokerSupport
		update  Update
		code    int16
		message string
		level   int16
	}{
		{"same level", at2, brokersAt(2, 2), Update{tv, 2, Upgrade}, 0, "", 2},
		{"safe downgrade", at2, brokersAt(2, 2), Update{tv, 1, SafeDowngrade}, 0, "", 1},
		{"unsafe downgrade", at2, brokersAt(2, 2), Update{tv, 1, UnsafeDowngrade}, 0, "", 1},
		{"downgrade to 0 removes", at2, brokersAt(2), Update{tv, 0, SafeDowngrade}, 0, "", 0},
		{"downgrade typed as upgrade", at2, brokersAt(2), Update{tv, 1, Upgrade}, kerr.InvalidUpdateVersion.Code, "Invalid update version 1 for feature transaction.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.", 2},
		{"upgrade typed as downgrade", Finalized{Levels: map[string]int16{tv: 1}}, brokersAt(2), Update{tv, 2, SafeDowngrade}, kerr.InvalidUpdateVersion.Code, "Can't downgrade to a newer version.", 1},
		{"beyond this broker", at2, brokersAt(2), Update{tv, 3, Upgrade}, kerr.InvalidUpdateVersion.Code, "The controller only supports versions 0-2.", 2},
		{"a broker at 1", Finalized{Levels: map[string]int16{tv: 1}}, brokersAt(2, 1), Update{tv, 2, Upgrade}, kerr.InvalidUpdateVersion.Code, "Broker 2 does not support the given version. It supports 0 to 1.", 1},
		{"a broker without the feature", Finalized{}, brokersAt(2, -1), Update{tv, 1, Upgrade}, kerr.InvalidUpdateVersion.Code, "Broker 2 does not support this feature.", 0},
		{"unknown feature", at2, brokersAt(2), Update{"group.version", 1, Upgrade}, kerr.InvalidUpdateVersion.Code, "The controller does not support the given feature.", 2},
		{"negative", at2, brokersAt(2), Update{tv, -1, SafeDowngrade}, kerr.InvalidUpdateVersion.Code, "cannot be less than 0", 2},
		{"unknown type", at2, brokersAt(2), Update{tv, 1, 7}, kerr.InvalidUpdateVersion.Code, "upgrade type", 2},
	} {
		next, results, ok := Decide(tc.cur, supported, tc.brokers, []Update{tc.update})
		r := results[0]
		if r.Code != tc.code || !strings.Contains(r.Message, tc.message) || ok != (tc.code == 0) {
			t.Errorf("%s: %d %q ok %v, want %d %q", tc.name, r.Code, r.Message, ok, tc.code, tc.message)
		}
		if ok && next[tv] != tc.level {
			t.Errorf("%s: level %d, want %d", tc.name, next[tv], tc.level)
		}
	}
	_, results, ok := Decide(at2, supported, brokersAt(2), []Update{{tv, 1, SafeDowngrade}, {tv, 2, Upgrade}})
	if ok || results[1].Code != kerr.InvalidRequest.Code {
		t.Errorf("a feature twice: %+v", results)
	}
}

// A new store finalizes the highest level every registered broker
// supports; a broker that cannot serve the finalized level is refused;
// a change read later that it cannot serve is not adopted but returned
// (the broker then stops).
func TestOpenFinalizesAndRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		brokers []BrokerSupport
		want    int16
	}{
		{"all at 2", brokersAt(2, 2, 2), 2},
		{"one at 1", brokersAt(2, 1, 2), 1},
		{"one of an older release", brokersAt(2, -1), 0},
	} {
		store := &memoryStore{f: Finalized{Epoch: -1}}
		m, err := Open(Config{Store: store, Supported: Supported(2), Brokers: func() ([]BrokerSupport, error) { return tc.brokers, nil }})
		if err != nil || m.Level(tv) != tc.want || m.Finalized().Epoch != 0 {
			t.Errorf("%s: %v level %d, want %d", tc.name, err, m.Level(tv), tc.want)
		}
	}
	at2 := &memoryStore{f: Finalized{Levels: map[string]int16{tv: 2}, Epoch: 4}}
	if _, err := Open(Config{Store: at2, Supported: Supported(1), Brokers: func() ([]BrokerSupport, error) { return nil, nil }}); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("a broker at 1 on a cluster at 2: %v", err)
	}
	m, err := Open(Config{Store: &memoryStore{f: Finalized{Levels: map[string]int16{tv: 1}, Epoch: 4}}, Supported: Supported(1),
		Brokers: func() ([]BrokerSupport, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Observe(Finalized{Levels: map[string]int16{tv: 2}, Epoch: 5})
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "transaction.version is finalized at level 2, this broker supports 0-1") {
		t.Fatalf("a change to a level this broker cannot serve: %v, want ErrIncompatible naming the level", err)
	}
	if err := m.Observe(Finalized{Levels: map[string]int16{tv: 9}, Epoch: 3}); err != nil {
		t.Fatalf("an older epoch, unservable, is ignored: %v", err)
	}
	if f := m.Finalized(); f.Level(tv) != 1 || f.Epoch != 4 {
		t.Fatalf("adopted %+v", f)
	}
	if err := m.Observe(Finalized{Levels: map[string]int16{}, Epoch: 6}); err != nil {
		t.Fatal(err)
	}
	if f := m.Finalized(); f.Level(tv) != 0 || f.Epoch != 6 {
		t.Fatalf("a servable change not adopted: %+v", f)
	}
}

// The single node's file: finalized at first open, each update durable
// with the next epoch, a stale epoch refused, a damaged file an error.
func TestLocalStore(t *testing.T) {
	dir := t.TempDir()
	s := NewLocalStore(dir)
	self := func() ([]BrokerSupport, error) { return brokersAt(2), nil }
	m, err := Open(Config{Store: s, Supported: Supported(2), Brokers: self})
	if err != nil || m.Level(tv) != 2 {
		t.Fatalf("open: %v %d", err, m.Level(tv))
	}
	if _, err := m.Update([]Update{{tv, 1, SafeDowngrade}}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(map[string]int16{tv: 2}, 0); !errors.Is(err, ErrChanged) {
		t.Fatalf("a stale epoch: %v", err)
	}
	again, err := Open(Config{Store: NewLocalStore(dir), Supported: Supported(2), Brokers: self})
	if err != nil || again.Level(tv) != 1 || again.Finalized().Epoch != 1 {
		t.Fatalf("reopened: %v %+v", err, again.Finalized())
	}
	if err := os.WriteFile(filepath.Join(dir, LocalFile), []byte(`{"version":1,"epoch":-2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLocalStore(dir).Read(); err == nil {
		t.Fatal("a damaged file read")
	}
}

func FuzzLocalFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"epoch":3,"features":{"transaction.version":2}}`))
	f.Add([]byte(`{"version":1,"epoch":0,"features":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseLocalFile(data)
		if err != nil {
			return
		}
		if got.Epoch < 0 {
			t.Fatalf("negative epoch %+v", got)
		}
		for n, l := range got.Levels {
			if l <= 0 || n == "" {
				t.Fatalf("level %q=%d", n, l)
			}
		}
	})
}
