package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Log is one partition's segmented, append-only log. All methods are safe
// for concurrent use.
//
// Locks: writeMu serialises the writers (Append, roll, retention,
// AdvanceStartOffset, TruncateTo, Close) and is held across write(2) calls;
// readers never take it. mu is short: it guards the segment list and the
// offsets, and no disk I/O happens under it. Take writeMu before mu.
type Log struct {
	dir    string
	fs     FS
	files  *FileCache
	logger *slog.Logger
	now    func() time.Time
	// onFlush and onRoll are Options.OnFlush and OnRoll (may be nil).
	onFlush func(time.Duration)
	onRoll  func(base int64)

	// checkpoint is owned by the sync token holder (mu.syncing) once open.
	checkpoint *recoveryCheckpoint

	// cleanMu serialises cleaning passes (Clean); take it before writeMu.
	cleanMu sync.Mutex

	writeMu sync.Mutex
	// Owned by writeMu: buffers reused by every append.
	newEntries []indexEntry
	encoded    []byte
	// cleanMarker (owned by writeMu): the clean-shutdown marker is still on
	// disk, because nothing changed the files since a clean Open. The
	// first change removes it (see dropCleanMarker), so opening an idle
	// partition costs no write and no directory fsync.
	cleanMarker bool
	// truncations counts TruncateTo calls (owned by writeMu), so a cleaning
	// pass that a truncation overlapped does not record a stale first
	// dirty offset.
	truncations uint64

	mu struct {
		sync.Mutex
		cfg Config
		// segs is copy-on-write: it is replaced, never modified in place, so
		// a reader may keep using the slice it saw under mu.
		segs          []*segment
		startOffset   int64
		endOffset     int64
		recoveryPoint int64 // everything below is fsynced
		cleanedTo     int64 // the cleaner's first dirty offset (cleaner.go)
		// lastPass and lastPassTook: the last pass that cleaned something.
		lastPass     time.Time
		lastPassTook time.Duration
		// firstUnflushed is when the oldest append above recoveryPoint
		// happened (zero when none), for MaybeFlush.
		firstUnflushed time.Time
		// syncing is the group-commit token: its holder fsyncs with mu
		// released; the others wait on syncCond.
		syncing  bool
		syncCond sync.Cond
		dirDirty bool  // a segment file was created since the last dir fsync
		failed   error // first write or fsync error: no more appends
		closed   bool
	}
}

// Open opens the log in dir, creating dir if missing, and recovers it: after
// a clean Close it trusts the index files and reads only the tail of the
// active segment; otherwise it rescans from the recovery point (see doc.go).
func Open(dir string, cfg Config, opts Options) (*Log, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.FS == nil {
		opts.FS = OSFS{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FileCache == nil {
		opts.FileCache = defaultFileCache
	}
	l := &Log{dir: dir, fs: opts.FS, files: opts.FileCache, logger: opts.Logger.With("component", "storage", "dir", dir), now: opts.Now,
		onFlush: opts.OnFlush, onRoll: opts.OnRoll}
	l.mu.cfg = cfg
	l.mu.syncCond.L = &l.mu.Mutex
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	if err := l.load(); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	return l, nil
}

// load runs open on a log not yet shared and releases what it opened when
// it fails.
func (l *Log) load() error {
	err := l.open()
	if err != nil {
		for _, s := range l.mu.segs {
			s.release()
		}
		if l.checkpoint != nil {
			l.checkpoint.close()
		}
	}
	return err
}

// open loads the segments and checkpoints; called before l is shared.
func (l *Log) open() error {
	bases, clean, err := l.listDir()
	if err != nil {
		return err
	}
	start, _, err := readCheckpoint(l.fs, l.path(logStartFile))
	if err != nil {
		return err
	}
	rp, rpOK, err := readCheckpoint(l.fs, l.path(recoveryPointFile))
	if err != nil {
		return err
	}
	if err := l.loadCleanedTo(); err != nil {
		return err
	}
	segs, err := l.openSegments(bases, start)
	l.mu.segs = segs
	if err != nil {
		return err
	}
	interval := int64(l.mu.cfg.IndexIntervalBytes)
	if clean {
		_, err = segs[len(segs)-1].load(interval, math.MaxInt64, true)
	} else {
		segs, err = l.recover(segs, rp)
		l.mu.segs = segs
		if err == nil {
			// A crash may have cut markers whose index entries were written.
			last := segs[len(segs)-1]
			err = last.trimTxnIndex(last.view.Load().nextOffset)
		}
	}
	if err != nil {
		return err
	}
	return l.start(clean, start, rp, rpOK)
}

// start publishes the recovered state and readies the active segment.
func (l *Log) start(clean bool, start, rp int64, rpOK bool) (err error) {
	segs := l.mu.segs
	active := segs[len(segs)-1]
	active.created = l.now()
	end := active.view.Load().nextOffset
	l.mu.startOffset = min(max(start, segs[0].base), end)
	l.mu.endOffset = end
	// A truncation into a cleaned segment's gap can leave the end, once
	// reloaded, below the cleaner's offset: what is appended there is dirty.
	l.mu.cleanedTo = min(l.mu.cleanedTo, end)
	cp := end
	if !clean {
		cp = min(rp, end)
	}
	if l.checkpoint, err = openRecoveryCheckpoint(l.fs, l.files, l.path(recoveryPointFile), cp, rpOK && rp == cp); err != nil {
		return err
	}
	if !clean {
		// Recovered bytes above the recovery point may sit in the page
		// cache only: make them durable before serving them.
		l.mu.recoveryPoint = min(rp, end)
		return l.syncTo(end)
	}
	l.mu.recoveryPoint = end
	l.cleanMarker = true
	return nil
}

// dropCleanMarker removes the clean-shutdown marker, durably, before the
// first change to the log's files since a clean Open: a crash from then on
// must be seen as unclean. Until then the files are as Close left them,
// so a crash leaving the marker in place is still a clean state. Expects
// writeMu.
func (l *Log) dropCleanMarker() error {
	if !l.cleanMarker {
		return nil
	}
	if err := l.fs.Remove(l.path(cleanShutdownFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove clean shutdown marker: %w", err)
	}
	if err := l.syncDir(); err != nil {
		return err
	}
	l.cleanMarker = false
	return nil
}

// listDir finds the segments' base offsets and the clean-shutdown marker,
// and removes temporary files a crash left behind.
func (l *Log) listDir() (bases []int64, clean bool, err error) {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, false, fmt.Errorf("list dir: %w", err)
	}
	if changed, err := l.finishSwaps(names); err != nil {
		return nil, false, err
	} else if changed {
		if names, err = l.fs.ReadDir(l.dir); err != nil {
			return nil, false, fmt.Errorf("list dir: %w", err)
		}
	}
	for _, name := range names {
		switch {
		case name == cleanShutdownFile:
			clean = true
		case strings.HasSuffix(name, ".tmp"):
			if err := l.fs.Remove(l.path(name)); err != nil {
				return nil, false, fmt.Errorf("remove %s: %w", name, err)
			}
		case len(name) == 24 && strings.HasSuffix(name, ".log"):
			base, err := strconv.ParseInt(name[:20], 10, 64)
			if err == nil && base >= 0 {
				bases = append(bases, base)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, clean, nil
}

// openSegments opens every segment file, removing those wholly below the
// log start offset (a crash between persisting the start offset and
// deleting them), and creates the first segment of an empty log.
func (l *Log) openSegments(bases []int64, start int64) ([]*segment, error) {
	var segs []*segment
	for i, base := range bases {
		s, err := openSegment(l.fs, l.files, l.dir, base, false)
		if err != nil {
			return segs, err
		}
		if i+1 < len(bases) && bases[i+1] <= start {
			err = s.removeFiles()
			s.release()
			if err != nil {
				return segs, err
			}
			continue
		}
		s.indexSynced = true
		segs = append(segs, s)
	}
	if len(segs) > 0 {
		for _, s := range segs[:len(segs)-1] {
			s.sealed.Store(true)
		}
		return segs, nil
	}
	s, err := openSegment(l.fs, l.files, l.dir, start, true)
	if err != nil {
		return nil, err
	}
	if err := s.createIndexFiles(); err != nil {
		s.release()
		return nil, err
	}
	return []*segment{s}, nil
}

// recover rescans the segments from the one holding the recovery point:
// every batch there is checked (length, CRC, increasing offsets), the first
// invalid one and everything after it is dropped, and the indexes of the
// rescanned segments are rebuilt. Segments below are trusted untouched.
func (l *Log) recover(segs []*segment, rp int64) ([]*segment, error) {
	interval := int64(l.mu.cfg.IndexIntervalBytes)
	first := segIndex(segs, rp)
	for j := first; j < len(segs); j++ {
		s := segs[j]
		trust := s.base
		if j == first {
			trust = rp
		}
		before := s.size()
		truncated, err := s.load(interval, trust, true)
		if err != nil {
			return segs, err
		}
		s.indexSynced = false
		v := s.view.Load()
		if truncated {
			l.logger.Warn("recovery truncated a corrupt or torn tail", "segment", s.base, "from", before, "to", v.size)
		}
		if j+1 < len(segs) && !truncated && segs[j+1].base >= v.nextOffset {
			sealedIndexCache.add(s, v)
			continue
		}
		if j+1 < len(segs) {
			for _, d := range segs[j+1:] {
				l.logger.Warn("recovery deleted a segment after a corrupt one", "segment", d.base)
				err = errors.Join(err, d.removeFiles())
				d.release()
			}
			s.sealed.Store(false) // the new active segment
			return segs[:j+1], err
		}
	}
	return segs, nil
}

// segIndex returns the index of the segment holding offset: the last whose
// base is at or below it (0 when none is).
func segIndex(segs []*segment, offset int64) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset })
	return max(i-1, 0)
}

func (l *Log) path(name string) string { return filepath.Join(l.dir, name) }

// syncDir makes created, renamed and removed names in dir durable.
func (l *Log) syncDir() error {
	if err := syncDir(l.fs, l.dir); err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	return nil
}

// LogStartOffset is the first offset a read may ask for.
func (l *Log) LogStartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.startOffset
}

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.endOffset
}

// FlushedOffset is the recovery point: every offset below it is fsynced.
func (l *Log) FlushedOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.recoveryPoint
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// SegmentCount is the number of segments, the active one included.
func (l *Log) SegmentCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.segs)
}

// Size is the total size of the segment files in bytes.
func (l *Log) Size() int64 {
	l.mu.Lock()
	segs := l.mu.segs
	l.mu.Unlock()
	var n int64
	for _, s := range segs {
		n += s.size()
	}
	return n
}

// Config returns the settings in effect.
func (l *Log) Config() Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.cfg
}

// SetConfig changes the settings at run time (a topic config change); zero
// fields take defaults. An invalid config is logged and ignored.
func (l *Log) SetConfig(cfg Config) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		l.logger.Error("ignoring invalid config", "err", err)
		return
	}
	l.mu.Lock()
	l.mu.cfg = cfg
	l.mu.Unlock()
}

// Close fsyncs the log, closes its files and writes the clean-shutdown
// marker, so the next Open trusts the indexes. Reads in flight finish on
// their open files. After Close every method returns ErrClosed.
func (l *Log) Close() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	end, failed := l.mu.endOffset, l.mu.failed
	l.mu.Unlock()
	var err error
	untouched := l.cleanMarker // nothing to sync, the marker is in place
	if failed == nil && !untouched {
		if err = l.syncTo(end); err == nil {
			err = l.syncActiveIndexes()
		}
	}
	l.mu.Lock()
	for l.mu.syncing {
		l.mu.syncCond.Wait()
	}
	l.mu.closed = true
	segs := l.mu.segs
	l.mu.syncCond.Broadcast()
	l.mu.Unlock()
	for _, s := range segs {
		s.release()
	}
	l.checkpoint.close()
	if err != nil || failed != nil {
		return errors.Join(err, l.failedErr(failed))
	}
	if untouched {
		return nil
	}
	if err := l.writeCleanMarker(end); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return l.syncDir()
}

// writeCleanMarker creates the clean-shutdown marker. Only its existence
// counts (its content, the log end, is for people), and everything it
// vouches for is fsynced already, so it needs no fsync of its own, only
// the directory's, and no rename: a torn marker still says clean.
func (l *Log) writeCleanMarker(end int64) error {
	f, err := l.fs.OpenFile(l.path(cleanShutdownFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(checkpointVersion + "\n" + strconv.FormatInt(end, 10) + "\n"))
	return errors.Join(err, f.Close())
}

// syncActiveIndexes fsyncs the active segment's index files, which a clean
// restart trusts. Expects writeMu.
func (l *Log) syncActiveIndexes() error {
	active := l.active()
	if !active.indexDirty {
		return nil
	}
	for _, cf := range []*cachedFile{active.idxFile, active.tidxFile} {
		err := cf.with(File.Sync)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sync index of segment %d: %w", active.base, err)
		}
	}
	active.indexDirty = false
	return nil
}

// Delete closes the log and removes its directory with everything in it.
func (l *Log) Delete() error {
	if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrFailed) {
		l.logger.Warn("delete: close failed", "err", err)
	}
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("delete log %s: %w", l.dir, err)
	}
	var errs []error
	for _, name := range names {
		if err := l.fs.Remove(l.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := l.fs.Remove(l.dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete log %s: %w", l.dir, err)
	}
	return nil
}

// active is the segment appends go to. Expects writeMu or mu.
func (l *Log) active() *segment { return l.mu.segs[len(l.mu.segs)-1] }

// failedErr wraps the first failure for callers refused because of it.
func (l *Log) failedErr(cause error) error {
	if cause == nil {
		return nil
	}
	return fmt.Errorf("log %s: %w after: %w", l.dir, ErrFailed, cause)
}

// failLocked records the first write or fsync failure. Expects mu.
func (l *Log) failLocked(err error) {
	if l.mu.failed == nil {
		l.mu.failed = err
		l.logger.Error("log failed; refusing appends", "err", err)
	}
}
