package acl

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Store holds the bindings durably. Update changes one pattern's entries
// atomically (against other writers, also other brokers'): fn is given
// the entries stored now, maybe more than once, and returns the ones to
// store; Update returns what it stored. The Manager then applies that to
// the authorizer, unless the store does so itself (selfFeeding: a store
// that other brokers write too must order its own writes among theirs).
type Store interface {
	Update(p Pattern, fn func(stored []Entry) []Entry) ([]Entry, error)
}

type selfFeeding interface{ feedsAuthorizer() }

// batchStore is a store that changes several patterns in one write (a
// file rewritten whole: one fsync for a whole CreateAcls).
type batchStore interface {
	UpdateAll(ps []Pattern, fn func(p Pattern, stored []Entry) []Entry) ([][]Entry, error)
}

// update runs fn over each pattern's stored entries through the store,
// in one write when the store can, and applies what was stored to the
// authorizer; the result has one error per pattern.
func (m *Manager) update(ps []Pattern, fn func(p Pattern, stored []Entry) []Entry) []error {
	errs := make([]error, len(ps))
	stored := make(map[Pattern][]Entry, len(ps))
	if b, ok := m.store.(batchStore); ok {
		res, err := b.UpdateAll(ps, fn)
		for i, p := range ps {
			if err != nil {
				errs[i] = err
			} else {
				stored[p] = res[i]
			}
		}
	} else {
		for i, p := range ps {
			entries, err := m.store.Update(p, func(e []Entry) []Entry { return fn(p, e) })
			if err != nil {
				errs[i] = err
				continue
			}
			stored[p] = entries
		}
	}
	if _, self := m.store.(selfFeeding); !self && len(stored) > 0 {
		m.authorizer.SetPatterns(stored)
	}
	return errs
}

// Manager is the one core behind every ACL admin surface (the Kafka
// listener's DescribeAcls, CreateAcls and DeleteAcls, and HTTP's
// /admin/acls): it validates, reads the authorizer's snapshot and writes
// through the store, feeding each stored change back into the authorizer.
type Manager struct {
	authorizer *Authorizer
	store      Store
	// mu serializes this broker's writes, so a Delete's matches are not
	// raced by its own Create.
	mu sync.Mutex
}

// NewManager serves a's bindings, stored in s.
func NewManager(a *Authorizer, s Store) *Manager { return &Manager{authorizer: a, store: s} }

// Authorizer is the authorizer the manager feeds.
func (m *Manager) Authorizer() *Authorizer { return m.authorizer }

// Describe returns the bindings f selects, sorted.
func (m *Manager) Describe(f Filter) ([]Binding, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	bs := m.authorizer.Bindings(f)
	SortBindings(bs)
	return bs, nil
}

// Create stores bs; the result has one error (nil: created, or present
// already) per binding.
func (m *Manager) Create(bs []Binding) []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	errs := make([]error, len(bs))
	byPattern := map[Pattern][]int{}
	var order []Pattern
	for i, b := range bs {
		if errs[i] = b.Validate(); errs[i] != nil {
			continue
		}
		if _, seen := byPattern[b.Pattern]; !seen {
			order = append(order, b.Pattern)
		}
		byPattern[b.Pattern] = append(byPattern[b.Pattern], i)
	}
	updateErrs := m.update(order, func(p Pattern, stored []Entry) []Entry {
		out := slices.Clone(stored)
		for _, i := range byPattern[p] {
			if !slices.Contains(out, bs[i].Entry) {
				out = append(out, bs[i].Entry)
			}
		}
		return out
	})
	for k, err := range updateErrs {
		if err != nil {
			for _, i := range byPattern[order[k]] {
				errs[i] = fmt.Errorf("store ACLs of %s: %w", order[k], err)
			}
		}
	}
	return errs
}

// Deleted is one filter's outcome: the bindings it removed, or why not.
type Deleted struct {
	Bindings []Binding
	Err      error
}

// Delete removes every binding each filter selects.
func (m *Manager) Delete(fs []Filter) []Deleted {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Deleted, len(fs))
	for i, f := range fs {
		if err := f.Validate(); err != nil {
			out[i].Err = err
			continue
		}
		out[i] = m.deleteMatching(f)
	}
	return out
}

func (m *Manager) deleteMatching(f Filter) Deleted {
	var patterns []Pattern
	seen := map[Pattern]bool{}
	for _, b := range m.authorizer.Bindings(f) {
		if !seen[b.Pattern] {
			seen[b.Pattern] = true
			patterns = append(patterns, b.Pattern)
		}
	}
	slices.SortFunc(patterns, comparePatterns)
	removed := make(map[Pattern][]Entry, len(patterns))
	updateErrs := m.update(patterns, func(p Pattern, stored []Entry) []Entry {
		removed[p] = removed[p][:0] // fn may run again after a lost race
		var keep []Entry
		for _, e := range stored {
			if f.matchesEntry(e) {
				removed[p] = append(removed[p], e)
			} else {
				keep = append(keep, e)
			}
		}
		return keep
	})
	var d Deleted
	var errs []error
	for k, p := range patterns {
		if updateErrs[k] != nil {
			errs = append(errs, fmt.Errorf("delete ACLs of %s: %w", p, updateErrs[k]))
			continue
		}
		for _, e := range removed[p] {
			d.Bindings = append(d.Bindings, Binding{Pattern: p, Entry: e})
		}
	}
	d.Err = errors.Join(errs...)
	return d
}

// SortBindings orders bindings by pattern, then entry, for stable output.
func SortBindings(bs []Binding) {
	slices.SortFunc(bs, func(a, b Binding) int {
		if c := comparePatterns(a.Pattern, b.Pattern); c != 0 {
			return c
		}
		return compareEntries(a.Entry, b.Entry)
	})
}

func comparePatterns(a, b Pattern) int {
	switch {
	case a.Type != b.Type:
		return int(a.Type) - int(b.Type)
	case a.PatternType != b.PatternType:
		return int(a.PatternType) - int(b.PatternType)
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

func compareEntries(a, b Entry) int {
	for _, c := range []int{cmpStr(a.Principal.String(), b.Principal.String()), cmpStr(a.Host, b.Host),
		int(a.Operation) - int(b.Operation), int(a.Permission) - int(b.Permission)} {
		if c != 0 {
			return c
		}
	}
	return 0
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// MemoryStore keeps bindings in memory only: for tests and for a node
// that must not persist them.
type MemoryStore struct {
	mu      sync.Mutex
	entries map[Pattern][]Entry
}

func (s *MemoryStore) Update(p Pattern, fn func([]Entry) []Entry) ([]Entry, error) {
	res, err := s.UpdateAll([]Pattern{p}, func(_ Pattern, e []Entry) []Entry { return fn(e) })
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// UpdateAll is Update of several patterns at once.
func (s *MemoryStore) UpdateAll(ps []Pattern, fn func(Pattern, []Entry) []Entry) ([][]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[Pattern][]Entry{}
	}
	out := make([][]Entry, len(ps))
	for i, p := range ps {
		next := fn(p, slices.Clone(s.entries[p]))
		if len(next) == 0 {
			delete(s.entries, p)
		} else {
			s.entries[p] = next
		}
		out[i] = slices.Clone(next)
	}
	return out, nil
}
