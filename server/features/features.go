package features

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TransactionVersion is Kafka's feature transaction.version.
const TransactionVersion = "transaction.version"

// MaxTransactionVersion is the highest transaction.version ferry serves.
const MaxTransactionVersion int16 = 2

// Range is the levels of a feature a broker supports.
type Range struct{ Min, Max int16 }

func (r Range) contains(level int16) bool { return level >= r.Min && level <= r.Max }

// Supported is what this build of ferry supports, for a broker whose
// highest transaction.version is maxTV (MaxTransactionVersion unless a
// test emulates an older broker).
func Supported(maxTV int16) map[string]Range {
	return map[string]Range{TransactionVersion: {Min: 0, Max: maxTV}}
}

// Finalized is the cluster's finalized levels and their epoch (-1 while
// nothing was ever finalized). A feature not in Levels is at level 0.
type Finalized struct {
	Levels map[string]int16
	Epoch  int64
}

// Level is name's finalized level, 0 when it is not finalized.
func (f Finalized) Level(name string) int16 { return f.Levels[name] }

// Store is where the finalized levels live: ZooKeeper's /feature on a
// cluster, a file in the data dir on a single node.
type Store interface {
	// Read returns the levels now stored (Epoch -1: none ever).
	Read() (Finalized, error)
	// Write replaces the levels if the store is still at epoch (-1:
	// still empty), else ErrChanged; it returns what it wrote.
	Write(levels map[string]int16, epoch int64) (Finalized, error)
}

// ErrChanged: the store was written since it was read.
var ErrChanged = errors.New("features: the finalized features changed since they were read")

// ErrIncompatible: the cluster finalized a level this broker cannot serve.
var ErrIncompatible = errors.New("features: this broker does not support a finalized feature level")

// BrokerSupport is one registered broker's supported ranges.
type BrokerSupport struct {
	ID       int32
	Features map[string]Range
}

// Config is a Manager's parts.
type Config struct {
	Store Store
	// Supported is this broker's ranges (Supported(max)).
	Supported map[string]Range
	// Brokers lists the registered brokers' ranges, this one included.
	Brokers func() ([]BrokerSupport, error)
	Logger  *slog.Logger
}

// Manager is this broker's view of the finalized features: read by every
// request that depends on them, changed by Update and Observe.
type Manager struct {
	cfg Config
	cur atomic.Pointer[Finalized]
	// updating serialises this broker's updates (others' are caught by
	// the store's epoch check).
	updating sync.Mutex
}

// Open reads the finalized features, finalizing the defaults when
// nothing is (see the package doc), and checks that this broker serves
// them (ErrIncompatible otherwise).
func Open(cfg Config) (*Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg}
	for attempt := 0; ; attempt++ {
		f, err := cfg.Store.Read()
		if err != nil {
			return nil, fmt.Errorf("read finalized features: %w", err)
		}
		if f.Epoch < 0 {
			brokers, err := cfg.Brokers()
			if err != nil {
				return nil, fmt.Errorf("list brokers' features: %w", err)
			}
			f, err = cfg.Store.Write(DefaultLevels(cfg.Supported, brokers), -1)
			if errors.Is(err, ErrChanged) && attempt < 8 {
				continue // another broker finalized first: adopt its levels
			}
			if err != nil {
				return nil, fmt.Errorf("finalize features: %w", err)
			}
			cfg.Logger.Info("finalized features", "levels", fmt.Sprint(f.Levels), "epoch", f.Epoch)
		}
		if err := Compatible(f, cfg.Supported); err != nil {
			return nil, err
		}
		m.cur.Store(&f)
		return m, nil
	}
}

// NewFixed is a Manager over levels held in memory, for a listener
// without a store (tests, tools).
func NewFixed(levels map[string]int16) *Manager {
	m, err := Open(Config{Store: &memoryStore{f: Finalized{Levels: maps.Clone(levels), Epoch: 0}},
		Supported: Supported(MaxTransactionVersion), Brokers: func() ([]BrokerSupport, error) { return nil, nil }})
	if err != nil {
		panic(err) // levels beyond what ferry serves: a test's mistake
	}
	return m
}

// Compatible reports whether a broker supporting supported can serve f.
func Compatible(f Finalized, supported map[string]Range) error {
	for name, level := range f.Levels {
		r, ok := supported[name]
		if level > 0 && (!ok || !r.contains(level)) {
			return fmt.Errorf("%w: %s is finalized at level %d, this broker supports %d-%d (upgrade it, or downgrade the feature first)",
				ErrIncompatible, name, level, r.Min, r.Max)
		}
	}
	return nil
}

// DefaultLevels is what a cluster without finalized features finalizes:
// each feature at the highest level every registered broker supports.
func DefaultLevels(supported map[string]Range, brokers []BrokerSupport) map[string]int16 {
	levels := map[string]int16{}
	for name, r := range supported {
		level := r.Max
		for _, b := range brokers {
			level = min(level, b.Features[name].Max) // no range: level 0
		}
		if level > 0 {
			levels[name] = level
		}
	}
	return levels
}

// Finalized is the finalized features as last read.
func (m *Manager) Finalized() Finalized { return *m.cur.Load() }

// Level is name's finalized level.
func (m *Manager) Level(name string) int16 { return m.cur.Load().Level(name) }

// Supported is this broker's ranges.
func (m *Manager) Supported() map[string]Range { return m.cfg.Supported }

// Observe adopts f, read from the store after a change, when it is newer
// than what this broker holds and this broker can serve it. A newer f it
// cannot serve is not adopted and is returned as ErrIncompatible: the
// broker must stop serving, as Kafka's exits
// (FinalizedFeatureChangeListener's FeatureCacheUpdateException), since
// the other brokers and their clients now act by a level it does not
// implement.
func (m *Manager) Observe(f Finalized) error {
	if f.Epoch < m.cur.Load().Epoch {
		return nil
	}
	if err := Compatible(f, m.cfg.Supported); err != nil {
		return fmt.Errorf("finalized features at epoch %d: %w", f.Epoch, err)
	}
	m.cur.Store(&f)
	return nil
}

// UpgradeType is UpdateFeatures' upgrade type, numbered as Kafka's.
type UpgradeType int8

const (
	Upgrade         UpgradeType = 1
	SafeDowngrade   UpgradeType = 2
	UnsafeDowngrade UpgradeType = 3
)

// Update is one feature's requested level.
type Update struct {
	Name  string
	Level int16
	Type  UpgradeType
}

// Result is one update's answer: a Kafka error code (0: none) and why.
type Result struct {
	Name    string
	Code    int16
	Message string
}

// Error codes of UpdateFeatures.
var (
	codeInvalidRequest       = kerr.InvalidRequest.Code
	codeInvalidUpdateVersion = kerr.InvalidUpdateVersion.Code
)

// Decide is Kafka 3.9's FeatureControlManager.updateFeature for each
// update against cur: the levels to write, and each update's result. When
// any update fails, nothing is written (ok false), as Kafka's controller
// applies all of a request or none.
func Decide(cur Finalized, supported map[string]Range, brokers []BrokerSupport, updates []Update) (next map[string]int16, results []Result, ok bool) {
	next = maps.Clone(cur.Levels)
	if next == nil {
		next = map[string]int16{}
	}
	ok = true
	seen := map[string]bool{}
	for _, u := range updates {
		r := Result{Name: u.Name}
		if seen[u.Name] {
			r.Code, r.Message = codeInvalidRequest, "Feature "+u.Name+" was specified more than once."
		} else if msg := decideOne(cur.Level(u.Name), supported, brokers, u); msg != "" {
			r.Code, r.Message = codeInvalidUpdateVersion, fmt.Sprintf("Invalid update version %d for feature %s. %s", u.Level, u.Name, msg)
		}
		seen[u.Name] = true
		if r.Code != 0 {
			ok = false
		} else if u.Level == 0 {
			delete(next, u.Name)
		} else {
			next[u.Name] = u.Level
		}
		results = append(results, r)
	}
	return next, results, ok
}

func decideOne(current int16, supported map[string]Range, brokers []BrokerSupport, u Update) string {
	if u.Type < Upgrade || u.Type > UnsafeDowngrade {
		return "The controller does not support the given upgrade type."
	}
	if u.Level < 0 {
		return "A feature version cannot be less than 0."
	}
	local, known := supported[u.Name]
	if !known {
		return "The controller does not support the given feature."
	}
	if !local.contains(u.Level) && u.Level != 0 {
		return fmt.Sprintf("The controller only supports versions %d-%d.", local.Min, local.Max)
	}
	sorted := append([]BrokerSupport(nil), brokers...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	for _, b := range sorted {
		r, ok := b.Features[u.Name]
		switch {
		case !ok && u.Level > 0:
			return fmt.Sprintf("Broker %d does not support this feature.", b.ID)
		case ok && !r.contains(u.Level) && u.Level > 0:
			return fmt.Sprintf("Broker %d does not support the given version. It supports %d to %d.", b.ID, r.Min, r.Max)
		}
	}
	switch {
	case u.Level < current && u.Type == Upgrade:
		return "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
	case u.Level > current && u.Type != Upgrade:
		return "Can't downgrade to a newer version."
	}
	return ""
}

// Update decides updates against the levels in the store and, unless
// validateOnly or an update fails, writes them. A concurrent write by
// another broker between the read and the write is retried on what it
// wrote.
func (m *Manager) Update(updates []Update, validateOnly bool) ([]Result, error) {
	m.updating.Lock()
	defer m.updating.Unlock()
	for attempt := 0; ; attempt++ {
		cur, err := m.cfg.Store.Read()
		if err != nil {
			return nil, err
		}
		brokers, err := m.cfg.Brokers()
		if err != nil {
			return nil, err
		}
		next, results, ok := Decide(cur, m.cfg.Supported, brokers, updates)
		if !ok || validateOnly || maps.Equal(next, cur.Levels) {
			return results, nil
		}
		written, err := m.cfg.Store.Write(next, cur.Epoch)
		if errors.Is(err, ErrChanged) && attempt < 8 {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := m.Observe(written); err != nil {
			return nil, err // Decide let through a level this broker cannot serve
		}
		m.cfg.Logger.Info("finalized features updated", "levels", fmt.Sprint(written.Levels), "epoch", written.Epoch)
		return results, nil
	}
}

// memoryStore is a Store in memory (NewFixed).
type memoryStore struct {
	mu sync.Mutex
	f  Finalized
}

func (s *memoryStore) Read() (Finalized, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshot(), nil
}

func (s *memoryStore) Write(levels map[string]int16, epoch int64) (Finalized, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != s.f.Epoch || epoch >= math.MaxInt32 {
		return Finalized{}, ErrChanged
	}
	s.f = Finalized{Levels: maps.Clone(levels), Epoch: epoch + 1}
	return s.snapshot(), nil
}

// snapshot copies the levels; expects mu.
func (s *memoryStore) snapshot() Finalized {
	return Finalized{Levels: maps.Clone(s.f.Levels), Epoch: s.f.Epoch}
}
