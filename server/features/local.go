package features

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/ferry-mq/ferry/replication/checkpoint"
	"github.com/ferry-mq/ferry/storage"
)

// LocalFile is a single node's finalized features, beside its topic
// table in the data dir:
//
//	{"version":1,"epoch":0,"features":{"transaction.version":2}}
const LocalFile = "ferry-features.json"

// maxLocalFileBytes bounds the read of a file that holds a few levels.
const maxLocalFileBytes = 64 << 10

// LocalStore is a Store in dir's LocalFile, rewritten atomically; one
// process owns a data dir, so the epoch check is against what it holds.
type LocalStore struct {
	path string
	mu   sync.Mutex
}

// NewLocalStore is dir's store.
func NewLocalStore(dir string) *LocalStore { return &LocalStore{path: filepath.Join(dir, LocalFile)} }

type localFile struct {
	Version  int              `json:"version"`
	Epoch    int64            `json:"epoch"`
	Features map[string]int16 `json:"features"`
}

func (s *LocalStore) Read() (Finalized, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read()
}

// read expects mu.
func (s *LocalStore) read() (Finalized, error) {
	fh, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return Finalized{Levels: map[string]int16{}, Epoch: -1}, nil
	}
	if err != nil {
		return Finalized{}, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxLocalFileBytes+1))
	if err != nil {
		return Finalized{}, err
	}
	if len(data) > maxLocalFileBytes {
		return Finalized{}, fmt.Errorf("%s: larger than %d bytes", s.path, maxLocalFileBytes)
	}
	f, err := parseLocalFile(data)
	if err != nil {
		return Finalized{}, fmt.Errorf("%s: %w", s.path, err)
	}
	return f, nil
}

// parseLocalFile reads LocalFile's bytes.
func parseLocalFile(data []byte) (Finalized, error) {
	var f localFile
	if err := json.Unmarshal(data, &f); err != nil {
		return Finalized{}, err
	}
	if f.Version != 1 || f.Epoch < 0 {
		return Finalized{}, fmt.Errorf("version %d, epoch %d", f.Version, f.Epoch)
	}
	levels := map[string]int16{}
	for n, l := range f.Features {
		if l < 0 || n == "" {
			return Finalized{}, fmt.Errorf("feature %q at level %d", n, l)
		}
		if l > 0 {
			levels[n] = l
		}
	}
	return Finalized{Levels: levels, Epoch: f.Epoch}, nil
}

func (s *LocalStore) Write(levels map[string]int16, epoch int64) (Finalized, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.read()
	if err != nil {
		return Finalized{}, err
	}
	if cur.Epoch != epoch || epoch >= math.MaxInt32 {
		return Finalized{}, ErrChanged
	}
	next := Finalized{Levels: map[string]int16{}, Epoch: epoch + 1}
	for n, l := range levels {
		if l > 0 {
			next.Levels[n] = l
		}
	}
	data, _ := json.Marshal(localFile{Version: 1, Epoch: next.Epoch, Features: maps.Clone(next.Levels)})
	if err := checkpoint.WriteFile(storage.OSFS{}, s.path, data); err != nil {
		return Finalized{}, fmt.Errorf("write %s: %w", s.path, err)
	}
	return next, nil
}
