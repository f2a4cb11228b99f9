package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ferry-mq/ferry/storage"
)

// MaxFileSize bounds what ReadFile reads. A data directory's offset
// checkpoint holds one line per partition (under 300 bytes each), so 64 MiB
// is some 200,000 partitions: far beyond a broker, well below harm.
const MaxFileSize = 64 << 20

// WriteFile replaces path with data, durably (storage.WriteFileAtomic), so
// that a crash leaves the old file or the new one, never a mix or nothing,
// as Kafka's CheckpointFile does.
func WriteFile(fsys storage.FS, path string, data []byte) error {
	return storage.WriteFileAtomic(fsys, path, data, 0o644, storage.Durable)
}

// ReadFile returns the contents of path; a missing file gives nil and no
// error (no checkpoint yet). A file above MaxFileSize is malformed rather
// than read.
func ReadFile(fsys storage.FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%w: %s is %d bytes (limit %d)", ErrMalformed, filepath.Base(path), fi.Size(), MaxFileSize)
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return b[:n], nil
}

// ReadEpochs reads a leader-epoch-checkpoint; a missing file has no
// entries.
func ReadEpochs(fsys storage.FS, path string) ([]EpochEntry, error) {
	b, err := ReadFile(fsys, path)
	if err != nil {
		return nil, err
	}
	entries, err := DecodeEpochs(b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return entries, nil
}

// WriteEpochs replaces a leader-epoch-checkpoint with entries.
func WriteEpochs(fsys storage.FS, path string, entries []EpochEntry) error {
	return WriteFile(fsys, path, EncodeEpochs(entries))
}

// ReadOffsets reads a replication-offset-checkpoint or
// recovery-point-offset-checkpoint; a missing file has no entries.
func ReadOffsets(fsys storage.FS, path string) ([]OffsetEntry, error) {
	b, err := ReadFile(fsys, path)
	if err != nil {
		return nil, err
	}
	entries, err := DecodeOffsets(b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return entries, nil
}

// WriteOffsets replaces an offset checkpoint with entries.
func WriteOffsets(fsys storage.FS, path string, entries []OffsetEntry) error {
	b, err := EncodeOffsets(entries)
	if err != nil {
		return err
	}
	return WriteFile(fsys, path, b)
}
