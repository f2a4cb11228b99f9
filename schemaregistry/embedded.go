package schemaregistry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// EmbeddedStore keeps the registry in one append-only journal,
// <dir>/journal.jsonl: one JSON object per line, each a whole write
// (a new version with its schema, a soft delete, a purge, a setting),
// fsynced before it is applied to the in-memory indexes. Opening replays
// the journal; a torn last line (a crash mid-write) is cut off, and a
// journal mostly made of superseded lines is rewritten (embedded_compact.go).
//
// Writers are serialized by writeMu, which is held across the fsync;
// readers only take mu, which is never held during I/O.
type EmbeddedStore struct {
	path string

	// writeMu serializes writers and guards file.
	writeMu sync.Mutex
	file    journalFile
	size    int64
	broken  error

	mu struct {
		sync.RWMutex
		state embeddedState
	}
}

// journalFile is what the store needs of its file; tests inject faults.
type journalFile interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
}

type embeddedState struct {
	schemas   map[int]StoredSchema
	byFP      map[string]int
	subjects  map[string][]Version // sorted by version
	settings  map[string]string    // kind + "\x00" + subject
	highestID int                  // ids are never reused, even after a purge
}

// journalEntry is one line of the journal.
type journalEntry struct {
	Op       string        `json:"op"` // add, softdelete, purge, set, unset, highest
	Schema   *StoredSchema `json:"schema,omitempty"`
	Subject  string        `json:"subject,omitempty"`
	Version  int           `json:"version,omitempty"`
	ID       int           `json:"id,omitempty"`
	Versions []int         `json:"versions,omitempty"`
	Kind     SettingKind   `json:"kind,omitempty"`
	Value    string        `json:"value,omitempty"`
}

// ErrCorruptJournal means a journal line other than a torn last one does
// not decode.
var ErrCorruptJournal = errors.New("schema journal is corrupt")

// OpenEmbedded opens (creating it if needed) the store in dir.
func OpenEmbedded(dir string) (*EmbeddedStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	path := filepath.Join(dir, "journal.jsonl")
	// O_APPEND: after a failed write is truncated away, the next one
	// lands at the new end.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open schema journal: %w", err)
	}
	s := &EmbeddedStore{path: path, file: f}
	s.mu.state = newEmbeddedState()
	size, lines, err := s.replay(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if f, size, err = s.compactIfWorthIt(f, size, lines); err != nil {
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	s.file, s.size = f, size
	syncDir(dir)
	return s, nil
}

func newEmbeddedState() embeddedState {
	return embeddedState{schemas: map[int]StoredSchema{}, byFP: map[string]int{},
		subjects: map[string][]Version{}, settings: map[string]string{}}
}

// replay applies every whole line and cuts a torn tail; it returns the
// length of the good prefix and its number of lines.
func (s *EmbeddedStore) replay(f *os.File) (int64, int, error) {
	r := bufio.NewReaderSize(f, 1<<16)
	var good int64
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			if len(line) > 0 { // torn write: drop it
				if terr := f.Truncate(good); terr != nil {
					return 0, 0, fmt.Errorf("cut torn schema journal tail: %w", terr)
				}
			}
			return good, lineNo - 1, nil
		}
		if err != nil {
			return 0, 0, fmt.Errorf("read schema journal: %w", err)
		}
		var e journalEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return 0, 0, fmt.Errorf("%w: %s line %d: %v", ErrCorruptJournal, s.path, lineNo, err)
		}
		s.mu.state.apply(e)
		good += int64(len(line))
	}
}

// append writes one entry durably, then applies it. check runs first
// under the read lock, and may refuse the write.
func (s *EmbeddedStore) append(check func(st *embeddedState) (journalEntry, error)) (journalEntry, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.file == nil {
		return journalEntry{}, errStoreClosed
	}
	if s.broken != nil {
		return journalEntry{}, s.broken
	}
	s.mu.RLock()
	e, err := check(&s.mu.state)
	s.mu.RUnlock()
	if err != nil {
		return e, err
	}
	line, err := json.Marshal(e)
	if err != nil {
		return e, err
	}
	line = append(line, '\n')
	if err := s.writeDurably(line); err != nil {
		return e, err
	}
	s.mu.Lock()
	s.mu.state.apply(e)
	s.mu.Unlock()
	return e, nil
}

func (s *EmbeddedStore) writeDurably(line []byte) error {
	_, err := s.file.Write(line)
	if err == nil {
		err = s.file.Sync()
	}
	if err == nil {
		s.size += int64(len(line))
		return nil
	}
	// Undo the partial write so the journal ends on a whole line.
	if terr := s.file.Truncate(s.size); terr != nil {
		s.broken = fmt.Errorf("schema journal unusable after a failed write (%v) and a failed truncate: %w", err, terr)
		return s.broken
	}
	return fmt.Errorf("write schema journal: %w", err)
}

func (st *embeddedState) apply(e journalEntry) {
	switch e.Op {
	case "add":
		if e.Schema != nil {
			st.schemas[e.Schema.ID] = *e.Schema
			st.byFP[e.Schema.Fingerprint] = e.Schema.ID
			st.highestID = max(st.highestID, e.Schema.ID)
		}
		vs := append(st.subjects[e.Subject], Version{Subject: e.Subject, Version: e.Version, ID: e.ID})
		sort.Slice(vs, func(i, j int) bool { return vs[i].Version < vs[j].Version })
		st.subjects[e.Subject] = vs
	case "softdelete":
		for i, v := range st.subjects[e.Subject] {
			if containsInt(e.Versions, v.Version) {
				st.subjects[e.Subject][i].Deleted = true
			}
		}
	case "purge":
		st.purge(e.Subject, e.Versions)
	case "set":
		st.settings[string(e.Kind)+"\x00"+e.Subject] = e.Value
	case "unset":
		delete(st.settings, string(e.Kind)+"\x00"+e.Subject)
	case "highest": // written by compaction: ids up to here were handed out
		st.highestID = max(st.highestID, e.ID)
	}
}

func (st *embeddedState) purge(subject string, versions []int) {
	var kept []Version
	for _, v := range st.subjects[subject] {
		if !containsInt(versions, v.Version) {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		delete(st.subjects, subject)
	} else {
		st.subjects[subject] = kept
	}
	used := map[int]bool{}
	for _, vs := range st.subjects {
		for _, v := range vs {
			used[v.ID] = true
		}
	}
	for id, sc := range st.schemas {
		if !used[id] {
			delete(st.schemas, id)
			delete(st.byFP, sc.Fingerprint)
		}
	}
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// Schema implements Store.
func (s *EmbeddedStore) Schema(_ context.Context, id int) (StoredSchema, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sc, ok := s.mu.state.schemas[id]
	if !ok {
		return StoredSchema{}, ErrStoreNotFound
	}
	return sc, nil
}

// SchemaID implements Store.
func (s *EmbeddedStore) SchemaID(_ context.Context, fp string) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.mu.state.byFP[fp]
	if !ok {
		return 0, ErrStoreNotFound
	}
	return id, nil
}

// Subjects implements Store.
func (s *EmbeddedStore) Subjects(context.Context) ([]SubjectInfo, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]SubjectInfo, 0, len(s.mu.state.subjects))
	for name, vs := range s.mu.state.subjects {
		out = append(out, SubjectInfo{Name: name, Live: len(live(vs))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Versions implements Store.
func (s *EmbeddedStore) Versions(_ context.Context, subject string) ([]Version, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]Version(nil), s.mu.state.subjects[subject]...), nil
}

// VersionsOf implements Store.
func (s *EmbeddedStore) VersionsOf(_ context.Context, id int) ([]Version, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Version
	for _, vs := range s.mu.state.subjects {
		for _, v := range vs {
			if v.ID == id {
				out = append(out, v)
			}
		}
	}
	sortVersions(out)
	return out, nil
}

func sortVersions(vs []Version) {
	sort.Slice(vs, func(i, j int) bool {
		if vs[i].Subject != vs[j].Subject {
			return vs[i].Subject < vs[j].Subject
		}
		return vs[i].Version < vs[j].Version
	})
}

// ReferencedBy implements Store: ids of schemas with a live version that
// reference subject/version.
func (s *EmbeddedStore) ReferencedBy(_ context.Context, subject string, version int) ([]int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	liveIDs := map[int]bool{}
	for _, vs := range s.mu.state.subjects {
		for _, v := range vs {
			liveIDs[v.ID] = liveIDs[v.ID] || !v.Deleted
		}
	}
	var out []int
	for id, sc := range s.mu.state.schemas {
		for _, ref := range sc.References {
			if ref.Subject == subject && ref.Version == version && liveIDs[id] {
				out = append(out, id)
				break
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// AddVersion implements Store.
func (s *EmbeddedStore) AddVersion(_ context.Context, w NewVersion) (Version, error) {
	e, err := s.append(func(st *embeddedState) (journalEntry, error) {
		vs := st.subjects[w.Subject]
		latest := 0
		if len(vs) > 0 {
			latest = vs[len(vs)-1].Version
		}
		if latest != w.ExpectLatest {
			return journalEntry{}, ErrStoreConflict
		}
		e := journalEntry{Op: "add", Subject: w.Subject, Version: w.Version}
		if e.Version == 0 {
			e.Version = latest + 1
		}
		for _, v := range vs {
			if v.Version == e.Version {
				return e, ErrVersionInUse
			}
		}
		id, known := st.byFP[w.Schema.Fingerprint]
		switch {
		case known && w.ID != 0 && w.ID != id:
			return e, ErrIDInUse
		case known:
			e.ID = id
			return e, nil
		case w.ID != 0:
			if _, taken := st.schemas[w.ID]; taken {
				return e, ErrIDInUse
			}
			e.ID = w.ID
		default:
			e.ID = st.highestID + 1
		}
		sc := w.Schema
		sc.ID = e.ID
		e.Schema = &sc
		return e, nil
	})
	if err != nil {
		return Version{}, err
	}
	return Version{Subject: e.Subject, Version: e.Version, ID: e.ID}, nil
}

// SoftDelete implements Store.
func (s *EmbeddedStore) SoftDelete(_ context.Context, subject string, versions []int) error {
	_, err := s.append(func(*embeddedState) (journalEntry, error) {
		return journalEntry{Op: "softdelete", Subject: subject, Versions: versions}, nil
	})
	return err
}

// Purge implements Store.
func (s *EmbeddedStore) Purge(_ context.Context, subject string, versions []int) error {
	_, err := s.append(func(*embeddedState) (journalEntry, error) {
		return journalEntry{Op: "purge", Subject: subject, Versions: versions}, nil
	})
	return err
}

// Setting implements Store.
func (s *EmbeddedStore) Setting(_ context.Context, kind SettingKind, subject string) (string, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.mu.state.settings[string(kind)+"\x00"+subject]
	return v, ok, nil
}

// SetSetting implements Store.
func (s *EmbeddedStore) SetSetting(_ context.Context, kind SettingKind, subject, value string) error {
	_, err := s.append(func(*embeddedState) (journalEntry, error) {
		return journalEntry{Op: "set", Kind: kind, Subject: subject, Value: value}, nil
	})
	return err
}

// DeleteSetting implements Store.
func (s *EmbeddedStore) DeleteSetting(_ context.Context, kind SettingKind, subject string) error {
	_, err := s.append(func(*embeddedState) (journalEntry, error) {
		return journalEntry{Op: "unset", Kind: kind, Subject: subject}, nil
	})
	return err
}

// Watch implements Store; this store has no other writers.
func (s *EmbeddedStore) Watch(func(subject string)) {}

// Path is the journal's path.
func (s *EmbeddedStore) Path() string { return s.path }

// Close implements Store.
func (s *EmbeddedStore) Close() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	s.file = nil
	return err
}

var _ Store = (*EmbeddedStore)(nil)
