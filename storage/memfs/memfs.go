// Package memfs is an in-memory storage.FS that can simulate a crash: it
// remembers what each file held at its last Sync, and CrashImage returns a
// new FS holding only that (plus, optionally, part of what was written
// after), as a machine that lost power would. Tests use it to check that
// what the log acknowledged as durable survives, without a real disk.
package memfs

import (
	"errors"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/storage"
)

// FS is an in-memory filesystem. Safe for concurrent use.
type FS struct {
	mu    sync.Mutex
	files map[string]*node // by clean path
	dirs  map[string]bool
	// synced holds each directory's entries (base name → file) as of its
	// last fsync, and journal the changes to them since, in order: a
	// power loss keeps the first and a prefix of the second, as a
	// journaling filesystem commits metadata in order (PowerLossImage).
	synced  map[string]map[string]*node
	journal map[string][]dirOp
}

// dirOp is one change to a directory's names: a creation, a removal (nil
// node) or a rename within it (both at once).
type dirOp []dirChange

type dirChange struct {
	name string
	n    *node
}

// logOp journals op in dir. Expects mu.
func (fs *FS) logOp(dir string, op ...dirChange) {
	if fs.journal == nil {
		fs.journal = map[string][]dirOp{}
	}
	fs.journal[dir] = append(fs.journal[dir], op)
}

type node struct {
	data    []byte // what reads see
	durable []byte // what survives a crash: data at the last Sync
	mtime   time.Time
}

var _ storage.FS = (*FS)(nil)

// New returns an empty FS.
func New() *FS { return &FS{files: map[string]*node{}, dirs: map[string]bool{"/": true, ".": true}} }

// CrashImage returns the FS a crash would leave: each file holds its
// durable content; with keepRandom, a random prefix of the bytes written
// after the last Sync survives too (the kernel wrote some pages back), as
// can happen on a real disk. Names (creations, renames, removals) are
// kept as they are: the log fsyncs its directory where it matters, and this
// FS does not model lost directory entries.
func (fs *FS) CrashImage(r *rand.Rand) *FS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.imageLocked(fs.files, func(n *node) []byte { return durableData(n, r) })
}

// PowerLossImage is CrashImage with directory entries lost as well: each
// directory that was ever fsynced holds the names it held at its last
// fsync, then a random prefix (none when r is nil) of the creations,
// renames and removals made in it since, so a missing directory fsync
// shows. A directory never fsynced keeps its current names (whoever
// created it answers for it).
func (fs *FS) PowerLossImage(r *rand.Rand) *FS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	files := map[string]*node{}
	for p, n := range fs.files {
		if _, synced := fs.synced[filepath.Dir(p)]; !synced {
			files[p] = n
		}
	}
	for dir, names := range fs.synced {
		for name, n := range names {
			files[filepath.Join(dir, name)] = n
		}
		ops := fs.journal[dir]
		kept := 0
		if r != nil {
			kept = r.Intn(len(ops) + 1)
		}
		for _, op := range ops[:kept] {
			for _, c := range op {
				if c.n == nil {
					delete(files, filepath.Join(dir, c.name))
				} else {
					files[filepath.Join(dir, c.name)] = c.n
				}
			}
		}
	}
	return fs.imageLocked(files, func(n *node) []byte { return durableData(n, r) })
}

// KillImage returns the FS a killed process leaves (kill -9, the machine
// still up): every name and every byte written, fsynced or not, since
// the kernel holds them.
func (fs *FS) KillImage() *FS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.imageLocked(fs.files, func(n *node) []byte { return append([]byte(nil), n.data...) })
}

// imageLocked copies the directories and files into a new FS, each
// file's content chosen by data. Expects mu.
func (fs *FS) imageLocked(files map[string]*node, data func(*node) []byte) *FS {
	out := New()
	for p := range fs.dirs {
		out.dirs[p] = true
	}
	for p, n := range files {
		d := data(n)
		out.files[p] = &node{data: d, durable: append([]byte(nil), d...), mtime: n.mtime}
	}
	return out
}

// durableData is what survives of n in a crash: its durable content and,
// with r, a random part of what was written after it.
func durableData(n *node, r *rand.Rand) []byte {
	data := append([]byte(nil), n.durable...)
	if r != nil && len(n.data) > len(n.durable) && prefixOf(n.durable, n.data) {
		extra := r.Intn(len(n.data) - len(n.durable) + 1)
		data = append(data, n.data[len(n.durable):len(n.durable)+extra]...)
	}
	return data
}

func prefixOf(a, b []byte) bool { return len(a) <= len(b) && string(a) == string(b[:len(a)]) }

func clean(name string) string { return filepath.Clean(name) }

// OpenFile implements storage.FS.
func (fs *FS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := clean(name)
	if fs.dirs[p] {
		return &file{fs: fs, path: p, dir: true}, nil
	}
	n, ok := fs.files[p]
	switch {
	case !ok && flag&os.O_CREATE == 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: errNotExist}
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: errExist}
	case !ok:
		if !fs.dirs[path.Dir(p)] && !fs.dirs[filepath.Dir(p)] {
			return nil, &os.PathError{Op: "open", Path: name, Err: errNotExist}
		}
		n = &node{mtime: time.Now()}
		fs.files[p] = n
		fs.logOp(filepath.Dir(p), dirChange{filepath.Base(p), n})
	}
	if flag&os.O_TRUNC != 0 {
		n.data = nil
	}
	return &file{fs: fs, path: p, node: n, append: flag&os.O_APPEND != 0}, nil
}

// Remove implements storage.FS.
func (fs *FS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := clean(name)
	if _, ok := fs.files[p]; ok {
		delete(fs.files, p)
		fs.logOp(filepath.Dir(p), dirChange{filepath.Base(p), nil})
		return nil
	}
	if fs.dirs[p] {
		for f := range fs.files {
			if strings.HasPrefix(f, p+"/") {
				return &os.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
			}
		}
		delete(fs.dirs, p)
		return nil
	}
	return &os.PathError{Op: "remove", Path: name, Err: errNotExist}
}

// Rename implements storage.FS.
func (fs *FS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, ok := fs.files[clean(oldname)]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errNotExist}
	}
	oldp, newp := clean(oldname), clean(newname)
	delete(fs.files, oldp)
	fs.files[newp] = n
	if od, nd := filepath.Dir(oldp), filepath.Dir(newp); od == nd {
		fs.logOp(od, dirChange{filepath.Base(oldp), nil}, dirChange{filepath.Base(newp), n})
	} else {
		fs.logOp(od, dirChange{filepath.Base(oldp), nil})
		fs.logOp(nd, dirChange{filepath.Base(newp), n})
	}
	return nil
}

// MkdirAll implements storage.FS.
func (fs *FS) MkdirAll(dir string, perm os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for p := clean(dir); !fs.dirs[p]; p = filepath.Dir(p) {
		fs.dirs[p] = true
	}
	return nil
}

// ReadDir implements storage.FS.
func (fs *FS) ReadDir(dir string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := clean(dir)
	if !fs.dirs[p] {
		return nil, &os.PathError{Op: "readdir", Path: dir, Err: errNotExist}
	}
	var names []string
	for f := range fs.files {
		if filepath.Dir(f) == p {
			names = append(names, filepath.Base(f))
		}
	}
	for d := range fs.dirs {
		if d != p && filepath.Dir(d) == p {
			names = append(names, filepath.Base(d))
		}
	}
	sort.Strings(names)
	return names, nil
}

// Stat implements storage.FS.
func (fs *FS) Stat(name string) (os.FileInfo, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := clean(name)
	if fs.dirs[p] {
		return info{name: filepath.Base(p), dir: true}, nil
	}
	n, ok := fs.files[p]
	if !ok {
		return nil, &os.PathError{Op: "stat", Path: name, Err: errNotExist}
	}
	return info{name: filepath.Base(p), size: int64(len(n.data)), mtime: n.mtime}, nil
}

var (
	errNotExist = fs.ErrNotExist
	errExist    = fs.ErrExist
)

// file is an open handle. Like a real descriptor it keeps the node even
// after the name is removed.
type file struct {
	fs     *FS
	path   string
	node   *node
	dir    bool
	append bool
	pos    int64
	closed bool
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.dir || f.closed {
		return 0, &os.PathError{Op: "read", Path: f.path, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.dir || f.closed {
		return 0, &os.PathError{Op: "write", Path: f.path, Err: fs.ErrInvalid}
	}
	if end := off + int64(len(p)); end > int64(len(f.node.data)) {
		f.node.data = append(f.node.data, make([]byte, end-int64(len(f.node.data)))...)
	}
	copy(f.node.data[off:], p)
	f.node.mtime = time.Now()
	return len(p), nil
}

func (f *file) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	off := f.pos
	if f.append && f.node != nil {
		off = int64(len(f.node.data))
	}
	f.fs.mu.Unlock()
	n, err := f.WriteAt(p, off)
	f.pos = off + int64(n)
	return n, err
}

func (f *file) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "sync", Path: f.path, Err: fs.ErrClosed}
	}
	if !f.dir {
		f.node.durable = append(f.node.durable[:0], f.node.data...)
		return nil
	}
	names := map[string]*node{}
	for p, n := range f.fs.files {
		if filepath.Dir(p) == f.path {
			names[filepath.Base(p)] = n
		}
	}
	if f.fs.synced == nil {
		f.fs.synced = map[string]map[string]*node{}
	}
	f.fs.synced[f.path] = names
	delete(f.fs.journal, f.path)
	return nil
}

func (f *file) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.dir || f.closed || size < 0 {
		return &os.PathError{Op: "truncate", Path: f.path, Err: fs.ErrInvalid}
	}
	if size <= int64(len(f.node.data)) {
		f.node.data = f.node.data[:size]
	} else {
		f.node.data = append(f.node.data, make([]byte, size-int64(len(f.node.data)))...)
	}
	// Shrinking a file is metadata a real fsync makes durable; model the
	// worst case only for data, not for a size that went down.
	if len(f.node.durable) > len(f.node.data) {
		f.node.durable = append([]byte(nil), f.node.data...)
	}
	return nil
}

func (f *file) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.dir {
		return info{name: filepath.Base(f.path), dir: true}, nil
	}
	return info{name: filepath.Base(f.path), size: int64(len(f.node.data)), mtime: f.node.mtime}, nil
}

func (f *file) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

type info struct {
	name  string
	size  int64
	mtime time.Time
	dir   bool
}

func (i info) Name() string       { return i.name }
func (i info) Size() int64        { return i.size }
func (i info) ModTime() time.Time { return i.mtime }
func (i info) IsDir() bool        { return i.dir }
func (i info) Sys() any           { return nil }
func (i info) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
