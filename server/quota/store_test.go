package quota

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileStoreSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager()
	alice := Entity{User: Named("alice"), Client: DefaultComponent}
	if err := m.Alter(st, alice, []Op{{Key: ProducerByteRate, Value: 1 << 20}, {Key: RequestPercentage, Value: 12.5}}, false); err != nil {
		t.Fatal(err)
	}
	local := Entity{IP: Named("127.0.0.1")}
	if err := m.Alter(st, local, []Op{{Key: ConnectionCreationRate, Value: 5}}, false); err != nil {
		t.Fatal(err)
	}
	if err := m.Alter(st, local, []Op{{Key: ProducerByteRate, Value: 5}}, false); !errors.Is(err, ErrInvalidQuota) {
		t.Fatalf("a byte rate on an ip: %v", err)
	}
	if err := m.Alter(st, Entity{Client: Named("app")}, []Op{{Key: ConsumerByteRate, Value: 5}}, true); err != nil {
		t.Fatal(err)
	}
	if err := m.Alter(st, alice, []Op{{Key: ConsumerByteRate, Value: -1}}, false); !errors.Is(err, ErrInvalidQuota) {
		t.Fatalf("invalid alter: %v", err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, FileStoreName))
	if !strings.Contains(string(data), `"users/alice/clients/<default>"`) || !strings.Contains(string(data), `"producer_byte_rate": "1048576"`) ||
		!strings.Contains(string(data), `"ips/127.0.0.1": {
      "connection_creation_rate": "5"`) ||
		strings.Contains(string(data), "clients/app") {
		t.Fatalf("file holds:\n%s", data)
	}
	st2, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	m2 := NewManager()
	if err := m2.Load(st2); err != nil {
		t.Fatal(err)
	}
	if q := m2.Get(alice); q[ProducerByteRate] != 1<<20 || q[RequestPercentage] != 12.5 || len(q) != 2 {
		t.Fatalf("after reopening: %v", q)
	}
	if !m2.LimitsConnections() || m2.Get(local)[ConnectionCreationRate] != 5 {
		t.Fatalf("ip quota after reopening: %v", m2.Get(local))
	}
	if err := m2.Alter(st2, local, []Op{{Key: ConnectionCreationRate, Remove: true}}, false); err != nil {
		t.Fatal(err)
	}
	if err := m2.Alter(st2, alice, []Op{{Key: ProducerByteRate, Remove: true}, {Key: RequestPercentage, Remove: true}}, false); err != nil {
		t.Fatal(err)
	}
	all, _ := st2.QuotaConfigs()
	if len(all) != 0 {
		t.Fatalf("emptied entity still stored: %v", all)
	}
}

func TestFileStoreRefusesACorruptFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileStoreName), []byte("{not json"), 0o600)
	if _, err := OpenFileStore(dir); err == nil {
		t.Fatal("corrupt quota file opened")
	}
	os.WriteFile(filepath.Join(dir, FileStoreName), []byte(`{"version":2}`), 0o600)
	if _, err := OpenFileStore(dir); err == nil {
		t.Fatal("unknown version opened")
	}
}

// A stored value that is not a quota is skipped, the others still hold.
func TestLoadSkipsBadValues(t *testing.T) {
	q, err := ParseQuotas(Entity{User: Named("a")}, map[string]string{ProducerByteRate: "abc", ConsumerByteRate: "100", "SCRAM-SHA-256": "salt=x",
		ConnectionCreationRate: "5"})
	if err == nil || len(q) != 1 || q[ConsumerByteRate] != 100 {
		t.Fatalf("ParseQuotas: %v %v", q, err)
	}
	q, err = ParseQuotas(Entity{IP: Named("127.0.0.1")}, map[string]string{ProducerByteRate: "100", ConnectionCreationRate: "5"})
	if err != nil || len(q) != 1 || q[ConnectionCreationRate] != 5 {
		t.Fatalf("ParseQuotas of an ip: %v %v", q, err)
	}
}
