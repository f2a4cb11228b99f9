package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// The cleaner's crash protocol (Kafka's .cleaned → .swap → rename, with
// the replaced range in the swap file's name). See doc.go, "Compaction".
//
//	1. <base>.log.cleaned          written and fsynced; a crash here: the
//	                               file is deleted at open, old log intact
//	2. rename to <base>.log.<next>.swap, fsync dir: the commit point
//	3. remove the .log, .index and .timeindex of every segment with base
//	   in [base, next), fsync dir
//	4. rename the swap to <base>.log, fsync dir
//
// Open completes any swap it finds (steps 3 and 4 again; each is
// idempotent), so a crash at any point leaves the old segments or the
// new one, never both and never neither.

func swapName(base, next int64) string { return fmt.Sprintf("%020d.log.%020d.swap", base, next) }

// parseSwapName returns the range a swap file replaces.
func parseSwapName(name string) (base, next int64, ok bool) {
	if len(name) != 20+5+20+5 || !strings.HasSuffix(name, ".swap") || name[20:25] != ".log." {
		return 0, 0, false
	}
	b, err1 := strconv.ParseInt(name[:20], 10, 64)
	n, err2 := strconv.ParseInt(name[25:45], 10, 64)
	return b, n, err1 == nil && err2 == nil && b >= 0 && n > b
}

// swapIn replaces group (the segments from its first base up to next,
// sizes as the pass read them) by the cleaned file, unless retention or
// truncation changed them meanwhile, in which case the file is dropped
// and the group waits for the next pass. An error after the commit point
// fails the log: reopening it completes the swap.
func (l *Log) swapIn(group []*segment, sizes []int64, cleaned string, next int64) (bool, error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	at, ok := l.groupUnchanged(group, sizes)
	if !ok {
		return false, l.fs.Remove(cleaned)
	}
	if err := l.dropCleanMarker(); err != nil {
		return false, errors.Join(err, l.fs.Remove(cleaned))
	}
	base := group[0].base
	swap := l.path(swapName(base, next))
	if err := l.fs.Rename(cleaned, swap); err != nil {
		return false, errors.Join(fmt.Errorf("swap in cleaned segment %d: %w", base, err), l.fs.Remove(cleaned))
	}
	err := l.syncDir()
	if err == nil {
		err = l.replaceFiles(group, swap, base)
	}
	var s *segment
	if err == nil {
		s, err = openSegment(l.fs, l.files, l.dir, base, false)
	}
	if err != nil {
		l.mu.Lock()
		l.failLocked(fmt.Errorf("swap in cleaned segment %d: %w", base, err))
		l.mu.Unlock()
		return false, l.failedErr(err)
	}
	s.sealed.Store(true)
	s.indexSynced = true
	l.mu.Lock()
	l.mu.segs = slices.Concat(l.mu.segs[:at], []*segment{s}, l.mu.segs[at+len(group):])
	l.mu.Unlock()
	releaseAll(group)
	return true, nil
}

// groupUnchanged finds group in the segment list, still whole, sealed and
// of the sizes the pass read. Expects writeMu.
func (l *Log) groupUnchanged(group []*segment, sizes []int64) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.mu.failed != nil {
		return 0, false
	}
	segs := l.mu.segs
	at := slices.Index(segs, group[0])
	if at < 0 || at+len(group) >= len(segs) {
		return 0, false
	}
	for k, s := range group {
		if segs[at+k] != s || s.size() != sizes[k] {
			return 0, false
		}
	}
	return at, true
}

// replaceFiles is steps 3 and 4 for a running log: the old segments'
// files go (their .log stays open for readers in flight), the swap
// becomes the segment. Expects writeMu.
func (l *Log) replaceFiles(group []*segment, swap string, base int64) error {
	if err := l.mergedTxnIndex(group); err != nil {
		return err
	}
	for _, s := range group {
		if err := s.removeFiles(); err != nil {
			return err
		}
	}
	if err := l.syncDir(); err != nil {
		return err
	}
	if err := l.fs.Rename(swap, segmentPath(l.dir, base, ".log")); err != nil {
		return err
	}
	return l.syncDir()
}

// finishSwaps runs at open, before the segments are listed: it deletes
// .cleaned files (passes that did not commit) and completes every swap
// (passes that did), and reports whether it changed anything.
func (l *Log) finishSwaps(names []string) (bool, error) {
	changed := false
	for _, name := range names {
		if strings.HasSuffix(name, ".cleaned") {
			if err := l.fs.Remove(l.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return changed, fmt.Errorf("remove %s: %w", name, err)
			}
			changed = true
			continue
		}
		base, next, ok := parseSwapName(name)
		if !ok {
			continue
		}
		if err := l.completeSwap(names, name, base, next); err != nil {
			return changed, fmt.Errorf("complete %s: %w", name, err)
		}
		l.logger.Info("completed a cleaner swap interrupted by a crash", "segment", base, "replaces_below", next)
		changed = true
	}
	if changed {
		return true, l.syncDir()
	}
	return false, nil
}

// completeSwap removes the files of segments with base in [base, next),
// then renames the swap file into place.
func (l *Log) completeSwap(names []string, swap string, base, next int64) error {
	for _, name := range names {
		if len(name) < 20 {
			continue
		}
		b, err := strconv.ParseInt(name[:20], 10, 64)
		ext := name[20:]
		segFile := ext == ".log" || ext == ".index" || ext == ".timeindex" || ext == txnIndexExt && b > base
		if err != nil || b < base || b >= next || !segFile {
			continue
		}
		if err := l.fs.Remove(l.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := l.syncDir(); err != nil {
		return err
	}
	return l.fs.Rename(l.path(swap), segmentPath(l.dir, base, ".log"))
}
