package quota

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/ferry-mq/ferry/server/internal/atomicfile"
)

// Store keeps every entity's quotas where the brokers read them:
// ZooKeeper's /config/users, /config/clients and /config/ips on a cluster
// (each write announced to every broker), a file in the data dir on a
// single node.
// Values are strings, as Kafka's configs are.
type Store interface {
	// QuotaConfigs are every entity's quota keys.
	QuotaConfigs() (map[string]map[string]string, error) // by entity path
	// QuotaConfig is one entity's quota keys; none is an empty map.
	QuotaConfig(entityPath string) (map[string]string, error)
	// SetQuotaConfig replaces an entity's quota keys, keeping its other
	// keys (a user's SCRAM credentials).
	SetQuotaConfig(entityPath string, cfg map[string]string) error
}

// FormatValue is how a quota is written: the byte rates and
// connection_creation_rate as whole numbers (Kafka's LONG and INT),
// request_percentage as a number.
func FormatValue(key string, v float64) string {
	if key != RequestPercentage && v == math.Trunc(v) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// ParseQuotas reads entity e's quota keys, ignoring others (a user's
// credentials, a key of another kind of entity); a value that is not a
// valid quota is skipped (and reported), so one bad write does not lift
// every quota.
func ParseQuotas(e Entity, cfg map[string]string) (Quotas, error) {
	q := Quotas{}
	var bad error
	for k, s := range cfg {
		if !e.KeyFor(k) {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err == nil {
			err = CheckValue(k, v)
		}
		if err != nil {
			bad = errors.Join(bad, fmt.Errorf("%s=%q: %w", k, s, err))
			continue
		}
		q[k] = v
	}
	return q, bad
}

func formatQuotas(q Quotas) map[string]string {
	cfg := make(map[string]string, len(q))
	for k, v := range q {
		cfg[k] = FormatValue(k, v)
	}
	return cfg
}

// Load reads every entity's quotas from st into the manager.
func (m *Manager) Load(st Store) error {
	all, err := st.QuotaConfigs()
	if err != nil {
		return err
	}
	t := Table{}
	var bad error
	for p, cfg := range all {
		e, err := ParsePath(p)
		if err != nil {
			bad = errors.Join(bad, err)
			continue
		}
		q, err := ParseQuotas(e, cfg)
		bad = errors.Join(bad, err)
		t[e] = q
	}
	m.Replace(t)
	return bad
}

// Reload re-reads the named entities (change notifications' entity
// paths) from st.
func (m *Manager) Reload(st Store, paths []string) error {
	var bad error
	for _, p := range paths {
		e, err := ParsePath(p)
		if err != nil {
			continue // not a quota entity (a user's credentials alone)
		}
		cfg, err := st.QuotaConfig(p)
		if err != nil {
			bad = errors.Join(bad, err)
			continue
		}
		q, err := ParseQuotas(e, cfg)
		bad = errors.Join(bad, err)
		m.Set(e, q)
	}
	return bad
}

// Alter applies ops to e's quotas in st, all or none, and to the manager
// at once (the store's notification reaches the other brokers).
// alterMu serialises the read-modify-write on this broker.
func (m *Manager) Alter(st Store, e Entity, ops []Op, validateOnly bool) error {
	m.alterMu.Lock()
	defer m.alterMu.Unlock()
	cfg, err := st.QuotaConfig(e.Path())
	if err != nil {
		return err
	}
	cur, _ := ParseQuotas(e, cfg) // invalid stored values are replaced or dropped
	next, err := Apply(e, cur, ops)
	if err != nil || validateOnly {
		return err
	}
	if !maps.Equal(next, cur) || len(cfg) != len(cur) {
		if err := st.SetQuotaConfig(e.Path(), formatQuotas(next)); err != nil {
			return err
		}
	}
	m.Set(e, next)
	return nil
}

// FileStore is a single node's quotas: <data-dir>/client-quotas.json,
// {"version":1,"entities":{"users/alice":{"producer_byte_rate":"1048576"},
// "ips/127.0.0.1":{"connection_creation_rate":"5"}}},
// rewritten whole and atomically on each change.
type FileStore struct {
	path string
	mu   sync.Mutex // guards the file's read-modify-write
}

// FileStoreName is the file under the data dir.
const FileStoreName = "client-quotas.json"

// OpenFileStore opens (not creates) the data dir's quota file.
func OpenFileStore(dataDir string) (*FileStore, error) {
	s := &FileStore{path: filepath.Join(dataDir, FileStoreName)}
	_, err := s.read()
	return s, err
}

type fileFormat struct {
	Version  int                          `json:"version"`
	Entities map[string]map[string]string `json:"entities"`
}

func (s *FileStore) read() (map[string]map[string]string, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("client quotas: %w", err)
	}
	var f fileFormat
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("client quotas: %s: %w", s.path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("client quotas: %s: version %d, this ferry reads 1", s.path, f.Version)
	}
	if f.Entities == nil {
		f.Entities = map[string]map[string]string{}
	}
	return f.Entities, nil
}

// QuotaConfigs reads the file.
func (s *FileStore) QuotaConfigs() (map[string]map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read()
}

// QuotaConfig reads one entity.
func (s *FileStore) QuotaConfig(entityPath string) (map[string]string, error) {
	all, err := s.QuotaConfigs()
	if err != nil {
		return nil, err
	}
	if cfg := all[entityPath]; cfg != nil {
		return cfg, nil
	}
	return map[string]string{}, nil
}

// SetQuotaConfig rewrites the file with the entity's new quotas.
func (s *FileStore) SetQuotaConfig(entityPath string, cfg map[string]string) error {
	if _, err := ParsePath(entityPath); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	all, err := s.read()
	if err != nil {
		return err
	}
	if len(cfg) == 0 {
		delete(all, entityPath)
	} else {
		all[entityPath] = cfg
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // <default> stays readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(fileFormat{Version: 1, Entities: all}); err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("client quotas: %w", err)
	}
	return nil
}
