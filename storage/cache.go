package storage

import (
	"container/list"
	"sync"
)

// sealedIndexCache bounds the memory held by the in-memory indexes of sealed
// segments across all logs of the process. A 1 GiB segment's index is about
// 4 MiB, so keeping every index ever read would grow without bound; instead
// views of sealed segments are dropped, oldest loaded first with a second
// chance for recently used ones (CLOCK), and reloaded from the index files
// on next use. Active segments are never in it.
var sealedIndexCache = &viewCache{limit: 256 << 20}

// indexEntryCost is the memory of one in-memory index entry.
const indexEntryCost = 16

type viewCache struct {
	mu    sync.Mutex
	limit int64 // bytes of index entries
	used  int64
	ring  list.List // of *segment, oldest first
}

// add registers s, whose view v was just loaded or sealed, and drops the
// views of other segments while over the limit. Call it holding no
// segment's loadMu.
func (c *viewCache) add(s *segment, v *segView) {
	cost := int64(len(v.entries))*indexEntryCost + 64
	s.recent.Store(true)
	c.mu.Lock()
	c.removeLocked(s)
	s.cacheElem = c.ring.PushBack(s)
	s.cacheCost = cost
	c.used += cost
	var victims []*segment
	for passes := 0; c.used > c.limit && c.ring.Len() > 0 && passes < 2*c.ring.Len(); passes++ {
		e := c.ring.Front()
		victim := e.Value.(*segment)
		if victim.recent.Swap(false) {
			c.ring.MoveToBack(e)
			continue
		}
		c.removeLocked(victim)
		victims = append(victims, victim)
	}
	c.mu.Unlock()
	for _, victim := range victims {
		victim.dropView()
	}
}

// remove forgets s (deleted, closed, or active again).
func (c *viewCache) remove(s *segment) {
	c.mu.Lock()
	c.removeLocked(s)
	c.mu.Unlock()
}

func (c *viewCache) removeLocked(s *segment) {
	if s.cacheElem == nil {
		return
	}
	c.ring.Remove(s.cacheElem)
	s.cacheElem = nil
	c.used -= s.cacheCost
}

// dropView forgets a sealed segment's view; readers holding it keep using
// it (views are immutable) and the next ensureView reloads it.
func (s *segment) dropView() {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.sealed.Load() {
		s.view.Store(nil)
	}
}

// seal marks s as no longer active: its view may now be dropped.
func (s *segment) seal(v *segView) {
	s.sealedSize.Store(v.size)
	s.sealed.Store(true)
	sealedIndexCache.add(s, v)
}

// unseal makes s the active segment again (TruncateTo): its view stays.
func (s *segment) unseal() {
	s.loadMu.Lock()
	s.sealed.Store(false)
	s.loadMu.Unlock()
	sealedIndexCache.remove(s)
}
