package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// Flush fsyncs everything appended so far and advances the recovery point.
func (l *Log) Flush() error {
	l.mu.Lock()
	end, closed := l.mu.endOffset, l.mu.closed
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return l.syncTo(end)
}

// MaybeFlush fsyncs when FlushInterval has passed since the oldest append
// that is not yet fsynced. The core calls it from one ticker for all logs.
func (l *Log) MaybeFlush(now time.Time) error {
	l.mu.Lock()
	first, interval, end, closed := l.mu.firstUnflushed, l.mu.cfg.FlushInterval, l.mu.endOffset, l.mu.closed
	l.mu.Unlock()
	if closed || interval <= 0 || first.IsZero() || now.Sub(first) < interval {
		return nil
	}
	return l.syncTo(end)
}

// syncTo returns once every offset below target is fsynced. It is the group
// commit: a caller that finds no fsync in flight becomes the syncer and
// fsyncs up to the current log end, which covers every appender that wrote
// before; the others wait and are woken when it is done. So N concurrent
// Sync appends cost one or two fsyncs, not N.
func (l *Log) syncTo(target int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		// TruncateTo may have lowered the end below an old target.
		if l.mu.recoveryPoint >= min(target, l.mu.endOffset) {
			return nil
		}
		switch {
		case l.mu.failed != nil:
			return l.failedErr(l.mu.failed)
		case l.mu.closed:
			return ErrClosed
		case l.mu.syncing:
			l.mu.syncCond.Wait()
		default:
			if err := l.syncLocked(); err != nil {
				return err
			}
		}
	}
}

// syncLocked takes the sync token, fsyncs with mu released, and advances
// the recovery point. Expects mu (held again on return) and no token.
func (l *Log) syncLocked() error {
	l.mu.syncing = true
	started := l.now()
	timer := time.Now() // monotonic, unlike the injectable l.now
	end, dirDirty := l.mu.endOffset, l.mu.dirDirty
	l.mu.dirDirty = false
	segs := l.mu.segs[segIndex(l.mu.segs, l.mu.recoveryPoint):]
	for _, s := range segs {
		s.refs.Add(1) // in the list, so alive
	}
	l.mu.Unlock()

	err := l.syncSegments(segs, dirDirty)
	if err == nil && l.onFlush != nil {
		l.onFlush(time.Since(timer))
	}
	if err == nil {
		// An optimisation only, written after the data is durable: a lost
		// or stale checkpoint means a longer rescan, never lost data.
		if cerr := l.checkpoint.write(end); cerr != nil {
			l.logger.Warn("recovery point checkpoint not written", "err", cerr)
		}
	}
	for _, s := range segs {
		s.release()
	}

	l.mu.Lock()
	l.mu.syncing = false
	l.mu.syncCond.Broadcast()
	if err != nil {
		l.mu.dirDirty = l.mu.dirDirty || dirDirty
		l.failLocked(err)
		return l.failedErr(err)
	}
	l.mu.recoveryPoint = max(l.mu.recoveryPoint, end)
	if l.mu.recoveryPoint >= l.mu.endOffset {
		l.mu.firstUnflushed = time.Time{}
	} else {
		l.mu.firstUnflushed = started
	}
	return nil
}

// syncSegments fsyncs the directory when segments were created, every
// sealed segment not yet durable (data and indexes), and the active one's
// data. Expects the sync token.
func (l *Log) syncSegments(segs []*segment, dirDirty bool) error {
	if dirDirty {
		if err := l.syncDir(); err != nil {
			return err
		}
	}
	for i, s := range segs {
		sealed := i < len(segs)-1
		if sealed && s.indexSynced {
			continue
		}
		if err := s.logFile.with(File.Sync); err != nil {
			return fmt.Errorf("fsync segment %d: %w", s.base, err)
		}
		if sealed {
			if err := s.syncSealedIndexes(); err != nil {
				return err
			}
			s.indexSynced = true
		}
	}
	return nil
}

// syncSealedIndexes fsyncs the index files of a sealed segment (a missing
// one is rebuilt when next used, so there is nothing to sync).
func (s *segment) syncSealedIndexes() error {
	for _, cf := range []*cachedFile{s.idxFile, s.tidxFile} {
		err := cf.with(File.Sync)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("fsync index of segment %d: %w", s.base, err)
		}
	}
	return nil
}
