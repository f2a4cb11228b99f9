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

	indexes
}

// journalFile is what the store needs of its file; tests inject faults.
type journalFile interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
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
	// Expect is set on the topic store's adds only (topicstore.go): the
	// subject's latest version the write was checked against, with ID and
	// Version the imported ones (0: assign); applying decides the rest.
	Expect *int `json:"expect,omitempty"`
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
	s.state = newEmbeddedState()
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
		s.state.apply(e)
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
	e, err := check(&s.state)
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
	s.state.apply(e)
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

// AddVersion implements Store.
func (s *EmbeddedStore) AddVersion(_ context.Context, w NewVersion) (Version, error) {
	e, err := s.append(func(st *embeddedState) (journalEntry, error) { return st.planAdd(w) })
	if err != nil {
		return Version{}, err
	}
	return Version{Subject: e.Subject, Version: e.Version, ID: e.ID, Created: e.Schema != nil}, nil
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
