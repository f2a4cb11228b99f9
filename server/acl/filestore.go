package acl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/ferry-mq/ferry/server/internal/atomicfile"
)

// FileName is where a single node keeps its ACLs, under the data dir.
const FileName = "acls.json"

// FileStore keeps every binding in one JSON file, rewritten whole on each
// change (temp file, fsync, rename, fsync of the directory), so a crash
// leaves the old file or the new one. A single node's ACLs are few and
// change rarely; a cluster uses ZKStore.
type FileStore struct {
	path string
	mu   struct {
		sync.Mutex
		entries map[Pattern][]Entry
	}
}

// OpenFileStore reads dataDir's ACL file (none: no bindings) and loads
// it into a.
func OpenFileStore(dataDir string, a *Authorizer) (*FileStore, error) {
	s := &FileStore{path: filepath.Join(dataDir, FileName)}
	s.mu.entries = map[Pattern][]Entry{}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		a.Replace(nil)
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ACLs: %w", err)
	}
	bs, err := decodeFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	for _, b := range bs {
		if !slices.Contains(s.mu.entries[b.Pattern], b.Entry) {
			s.mu.entries[b.Pattern] = append(s.mu.entries[b.Pattern], b.Entry)
		}
	}
	a.Replace(bs)
	return s, nil
}

// Update implements Store.
func (s *FileStore) Update(p Pattern, fn func([]Entry) []Entry) ([]Entry, error) {
	res, err := s.UpdateAll([]Pattern{p}, func(_ Pattern, e []Entry) []Entry { return fn(e) })
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// UpdateAll changes several patterns with one rewrite of the file; when
// the write fails, none changes.
func (s *FileStore) UpdateAll(ps []Pattern, fn func(Pattern, []Entry) []Entry) ([][]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := make(map[Pattern][]Entry, len(ps))
	out := make([][]Entry, len(ps))
	for i, p := range ps {
		if _, saved := old[p]; !saved {
			old[p] = s.mu.entries[p]
		}
		next := fn(p, slices.Clone(s.mu.entries[p]))
		s.setLocked(p, next)
		out[i] = slices.Clone(next)
	}
	if err := s.writeLocked(); err != nil {
		for p, entries := range old {
			s.setLocked(p, entries)
		}
		return nil, err
	}
	return out, nil
}

func (s *FileStore) setLocked(p Pattern, entries []Entry) {
	if len(entries) == 0 {
		delete(s.mu.entries, p)
	} else {
		s.mu.entries[p] = entries
	}
}

// writeLocked replaces the file with the current entries; s.mu is held
// (the file is this store's alone, and ACL changes are rare).
func (s *FileStore) writeLocked() error {
	var bs []Binding
	for p, entries := range s.mu.entries {
		for _, e := range entries {
			bs = append(bs, Binding{Pattern: p, Entry: e})
		}
	}
	SortBindings(bs)
	return atomicfile.Write(s.path, encodeFile(bs), 0o600)
}
