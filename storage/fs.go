package storage

import (
	"io"
	"os"
	"sort"
)

// FS is the small filesystem interface through which the log does all its
// file access, so tests can inject faults (see storage/errorfs) and count
// bytes read. OSFS is the real-disk implementation and the default.
type FS interface {
	// OpenFile opens or creates a file, like os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove deletes a file or an empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// ReadDir returns the names of the entries of dir, sorted.
	ReadDir(dir string) ([]string, error)
	// Stat describes a file; a missing file gives an error satisfying
	// errors.Is(err, fs.ErrNotExist).
	Stat(name string) (os.FileInfo, error)
}

// File is an open file of an FS. The log uses positional reads and writes
// only, so a File is safe for concurrent ReadAt calls and one writer.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Closer
	// Sync makes the file's data durable. The real-disk implementation uses
	// fdatasync on Linux: the log never depends on file metadata other than
	// its size, which fdatasync covers.
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
}

// OSFS is the real-disk FS.
type OSFS struct{}

var _ FS = OSFS{}

// OpenFile implements FS.
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Remove implements FS.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// Rename implements FS.
func (OSFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// MkdirAll implements FS.
func (OSFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

// Stat implements FS.
func (OSFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// ReadDir implements FS.
func (OSFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

type osFile struct{ *os.File }

// Sync uses fdatasync where the platform has it (sync_linux.go).
func (f osFile) Sync() error { return datasync(f.File) }
