// Package errorfs is a fault-injecting twin of storage.FS for tests: it
// wraps another FS, counts the bytes read through it, and fails chosen
// operations on chosen files — with a torn write (a prefix written, then
// the error), ENOSPC, an fsync error, or any error given.
package errorfs

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ferry-mq/ferry/storage"
)

// Op is a kind of file operation a Fault can hit.
type Op int

// Operations a Fault can target.
const (
	OpOpen Op = iota
	OpRead
	OpWrite // WriteAt and Write
	OpSync
	OpTruncate
	OpRemove
	OpRename
)

// Fault describes an injected failure.
type Fault struct {
	Op Op
	// PathSuffix limits the fault to paths ending with it ("" for any),
	// e.g. ".log", ".index", "recovery-point-offset-checkpoint".
	PathSuffix string
	// Err is returned; default EIO.
	Err error
	// TornBytes, for OpWrite, writes this many bytes of the request (at
	// most all of it) before failing: a torn write.
	TornBytes int
	// After lets this many matching operations succeed first.
	After int
	// Times is how often it fails; 0 means every time from then on.
	Times int
	// Hook, when set, runs (outside the FS's lock) as the operation is
	// about to happen; with Err nil the operation then proceeds normally.
	// Tests use it to interleave another call at an exact point.
	Hook func(path string)
}

// ENOSPC and EIO are the usual errors to inject.
var (
	ENOSPC error = syscall.ENOSPC
	EIO    error = syscall.EIO
)

// FS wraps an FS with injected faults and counters. Safe for concurrent use.
type FS struct {
	inner     storage.FS
	bytesRead atomic.Int64
	syncs     atomic.Int64

	mu     sync.Mutex
	faults []*Fault
}

var _ storage.FS = (*FS)(nil)

// New wraps inner (the real disk when nil).
func New(inner storage.FS) *FS {
	if inner == nil {
		inner = storage.OSFS{}
	}
	return &FS{inner: inner}
}

// Inject adds a fault.
func (fs *FS) Inject(f Fault) {
	if f.Err == nil && f.Hook == nil {
		f.Err = EIO
	}
	fs.mu.Lock()
	fs.faults = append(fs.faults, &f)
	fs.mu.Unlock()
}

// Clear removes every fault.
func (fs *FS) Clear() {
	fs.mu.Lock()
	fs.faults = nil
	fs.mu.Unlock()
}

// BytesRead is the number of bytes read through ReadAt since the last
// ResetCounters.
func (fs *FS) BytesRead() int64 { return fs.bytesRead.Load() }

// Syncs is the number of successful Sync calls since the last ResetCounters.
func (fs *FS) Syncs() int64 { return fs.syncs.Load() }

// ResetCounters zeroes BytesRead and Syncs.
func (fs *FS) ResetCounters() {
	fs.bytesRead.Store(0)
	fs.syncs.Store(0)
}

// check returns the fault hitting op on path, if any, consuming it, after
// running its hook.
func (fs *FS) check(op Op, path string) *Fault {
	f := fs.match(op, path)
	if f == nil {
		return nil
	}
	if f.Hook != nil {
		f.Hook(path)
	}
	if f.Err == nil {
		return nil
	}
	return f
}

func (fs *FS) match(op Op, path string) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.faults {
		if f.Op != op || !strings.HasSuffix(path, f.PathSuffix) {
			continue
		}
		if f.After > 0 {
			f.After--
			continue
		}
		if f.Times > 0 {
			if f.Times--; f.Times == 0 {
				fs.faults = append(fs.faults[:i:i], fs.faults[i+1:]...)
			}
		}
		return f
	}
	return nil
}

func pathErr(op, path string, err error) error { return &os.PathError{Op: op, Path: path, Err: err} }

// OpenFile implements storage.FS.
func (fs *FS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	if f := fs.check(OpOpen, name); f != nil {
		return nil, pathErr("open", name, f.Err)
	}
	inner, err := fs.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &file{fs: fs, inner: inner, path: name}, nil
}

// Remove implements storage.FS.
func (fs *FS) Remove(name string) error {
	if f := fs.check(OpRemove, name); f != nil {
		return pathErr("remove", name, f.Err)
	}
	return fs.inner.Remove(name)
}

// Rename implements storage.FS.
func (fs *FS) Rename(oldname, newname string) error {
	if f := fs.check(OpRename, newname); f != nil {
		return pathErr("rename", newname, f.Err)
	}
	return fs.inner.Rename(oldname, newname)
}

// MkdirAll implements storage.FS.
func (fs *FS) MkdirAll(dir string, perm os.FileMode) error { return fs.inner.MkdirAll(dir, perm) }

// ReadDir implements storage.FS.
func (fs *FS) ReadDir(dir string) ([]string, error) { return fs.inner.ReadDir(dir) }

// Stat implements storage.FS.
func (fs *FS) Stat(name string) (os.FileInfo, error) { return fs.inner.Stat(name) }

type file struct {
	fs    *FS
	inner storage.File
	path  string
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if ft := f.fs.check(OpRead, f.path); ft != nil {
		return 0, pathErr("read", f.path, ft.Err)
	}
	n, err := f.inner.ReadAt(p, off)
	f.fs.bytesRead.Add(int64(n))
	return n, err
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if ft := f.fs.check(OpWrite, f.path); ft != nil {
		n, _ := f.inner.WriteAt(p[:min(ft.TornBytes, len(p))], off)
		return n, pathErr("write", f.path, ft.Err)
	}
	return f.inner.WriteAt(p, off)
}

func (f *file) Write(p []byte) (int, error) {
	if ft := f.fs.check(OpWrite, f.path); ft != nil {
		n, _ := f.inner.Write(p[:min(ft.TornBytes, len(p))])
		return n, pathErr("write", f.path, ft.Err)
	}
	return f.inner.Write(p)
}

func (f *file) Sync() error {
	if ft := f.fs.check(OpSync, f.path); ft != nil {
		return pathErr("sync", f.path, ft.Err)
	}
	err := f.inner.Sync()
	if err == nil {
		f.fs.syncs.Add(1)
	}
	return err
}

func (f *file) Truncate(size int64) error {
	if ft := f.fs.check(OpTruncate, f.path); ft != nil {
		return pathErr("truncate", f.path, ft.Err)
	}
	return f.inner.Truncate(size)
}

func (f *file) Stat() (os.FileInfo, error) { return f.inner.Stat() }
func (f *file) Close() error               { return f.inner.Close() }
