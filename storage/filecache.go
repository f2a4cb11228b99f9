package storage

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// DefaultMaxOpenFiles is the budget of the process-wide FileCache used by
// logs opened without Options.FileCache.
const DefaultMaxOpenFiles = 1024

// fileCacheShardSize is the budget share below which the cache does not
// split into more shards: small budgets keep one exact LRU.
const (
	fileCacheShardSize = 256
	fileCacheMaxShards = 16
)

// errFileForgotten: a handle used after its segment released it, a bug.
var errFileForgotten = errors.New("file handle used after release")

// FileCache bounds the file descriptors held by the logs that share it (the
// broker passes one to all its partitions). Segment, index and checkpoint
// files are opened on first use and stay open while used; an idle one is
// closed when the cache is over budget, least recently used first, and
// reopened on its next use. A handle that a read, append or fsync holds
// is never closed under it, so the budget is exceeded only while handles
// are in use that many at once. The cache is sharded (each file belongs
// to one shard, each shard has its share of the budget and its own LRU)
// so that appends to different partitions do not meet on one mutex;
// budgets under 512 keep one shard, an exact LRU.
type FileCache struct {
	shards []fileShard
	next   atomic.Uint32 // round-robin shard assignment
	limit  int
	opened atomic.Int64 // open(2) calls made, for tests and metrics
}

// fileShard is one LRU of idle open handles with its share of the budget.
type fileShard struct {
	mu struct {
		sync.Mutex
		limit int
		open  int
		// idle is the ring of open handles no one holds, least recently
		// used at idle.next. The sentinel is never a file.
		idle cachedFile
	}
}

// NewFileCache returns a cache holding at most maxOpen descriptors open
// while idle (at least 1).
func NewFileCache(maxOpen int) *FileCache {
	maxOpen = max(maxOpen, 1)
	n := min(max(maxOpen/fileCacheShardSize, 1), fileCacheMaxShards)
	c := &FileCache{shards: make([]fileShard, n), limit: maxOpen}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.limit = maxOpen / n
		if i < maxOpen%n {
			sh.mu.limit++
		}
		sh.mu.idle.prev, sh.mu.idle.next = &sh.mu.idle, &sh.mu.idle
	}
	return c
}

var defaultFileCache = NewFileCache(DefaultMaxOpenFiles)

// Limit is the budget the cache was made with.
func (c *FileCache) Limit() int { return c.limit }

// Open is the number of descriptors the cache holds open now.
func (c *FileCache) Open() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += sh.mu.open
		sh.mu.Unlock()
	}
	return n
}

// Opened is the number of files the cache has opened since it was made.
func (c *FileCache) Opened() int64 { return c.opened.Load() }

// cachedFile is one file known to the cache, open or not. Its owner (a
// segment or a checkpoint) forgets it when done with it for good.
type cachedFile struct {
	shard *fileShard
	cache *FileCache
	fs    FS
	path  string
	flag  int
	// openMu serialises opens of this file, so two readers of a closed
	// handle open it once, without holding the shard's lock during open(2).
	openMu sync.Mutex

	// Guarded by shard.mu.
	f          File
	refs       int
	prev, next *cachedFile // in the idle ring while open and refs == 0
	forgotten  bool
}

// file registers path with the cache, not yet open. flag is what a reopen
// uses (never O_TRUNC).
func (c *FileCache) file(fsys FS, path string, flag int) *cachedFile {
	sh := &c.shards[int(c.next.Add(1))%len(c.shards)]
	return &cachedFile{shard: sh, cache: c, fs: fsys, path: path, flag: flag}
}

// adopt hands the cache f, just opened (or created) for cf by its owner,
// as an idle open handle.
func (cf *cachedFile) adopt(f File) {
	sh := cf.shard
	sh.mu.Lock()
	if cf.f != nil || cf.forgotten {
		sh.mu.Unlock()
		f.Close()
		return
	}
	cf.f = f
	sh.mu.open++
	sh.pushIdleLocked(cf)
	victims := sh.evictLocked()
	sh.mu.Unlock()
	closeAll(victims)
}

// acquire returns the open file, opening it when the cache had closed it.
// The caller must release it and must not close it.
func (cf *cachedFile) acquire() (File, error) { return cf.acquireFlag(0) }

// acquireFlag is acquire with extra open flags for this open only
// (O_CREATE for the writer of an index that may not exist yet).
func (cf *cachedFile) acquireFlag(extra int) (File, error) {
	if f, ok := cf.tryHit(); ok {
		return f, nil
	}
	cf.openMu.Lock()
	defer cf.openMu.Unlock()
	if f, ok := cf.tryHit(); ok {
		return f, nil
	}
	f, err := cf.fs.OpenFile(cf.path, cf.flag|extra, 0o644)
	if err != nil {
		return nil, fmt.Errorf("reopen %s: %w", cf.path, err)
	}
	cf.cache.opened.Add(1)
	sh := cf.shard
	sh.mu.Lock()
	if cf.forgotten {
		sh.mu.Unlock()
		f.Close()
		return nil, errFileForgotten
	}
	cf.f, cf.refs = f, 1
	sh.mu.open++
	victims := sh.evictLocked()
	sh.mu.Unlock()
	closeAll(victims)
	return f, nil
}

// tryHit takes a reference on an open handle.
func (cf *cachedFile) tryHit() (File, bool) {
	sh := cf.shard
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if cf.f == nil {
		return nil, false
	}
	if cf.refs == 0 {
		cf.unlinkIdleLocked()
	}
	cf.refs++
	return cf.f, true
}

// release drops a reference taken by acquire.
func (cf *cachedFile) release() {
	sh := cf.shard
	sh.mu.Lock()
	cf.refs--
	var victims []File
	if cf.refs == 0 {
		if cf.forgotten {
			victims = append(victims, cf.f)
			cf.f = nil
			sh.mu.open--
		} else {
			sh.pushIdleLocked(cf)
			victims = sh.evictLocked()
		}
	}
	sh.mu.Unlock()
	closeAll(victims)
}

// forget closes the handle (at once, or when its last holder releases it)
// and makes any later acquire fail: the owner is done with the file.
func (cf *cachedFile) forget() {
	sh := cf.shard
	sh.mu.Lock()
	cf.forgotten = true
	var f File
	if cf.f != nil && cf.refs == 0 {
		cf.unlinkIdleLocked()
		f, cf.f = cf.f, nil
		sh.mu.open--
	}
	sh.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// with runs fn on the acquired file.
func (cf *cachedFile) with(fn func(File) error) error {
	f, err := cf.acquire()
	if err != nil {
		return err
	}
	defer cf.release()
	return fn(f)
}

func (sh *fileShard) pushIdleLocked(cf *cachedFile) {
	tail := sh.mu.idle.prev
	cf.prev, cf.next = tail, &sh.mu.idle
	tail.next = cf
	sh.mu.idle.prev = cf
}

func (cf *cachedFile) unlinkIdleLocked() {
	if cf.prev == nil {
		return
	}
	cf.prev.next, cf.next.prev = cf.next, cf.prev
	cf.prev, cf.next = nil, nil
}

// evictLocked takes the least recently used idle handles off while the
// shard is over its budget; the caller closes them without the lock.
func (sh *fileShard) evictLocked() []File {
	var victims []File
	for sh.mu.open > sh.mu.limit && sh.mu.idle.next != &sh.mu.idle {
		v := sh.mu.idle.next
		v.unlinkIdleLocked()
		victims = append(victims, v.f)
		v.f = nil
		sh.mu.open--
	}
	return victims
}

func closeAll(files []File) {
	for _, f := range files {
		f.Close()
	}
}

// segmentFileFlag is how segment and index files are reopened: never
// created, so a reopen cannot bring back a file retention deleted.
const segmentFileFlag = os.O_RDWR
