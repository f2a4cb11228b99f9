package replication

import (
	"fmt"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/replication/fence"
)

// SessionGuard is the broker's ZooKeeper session as replication/fence
// sees it, shared by its partitions: the broker's session watcher feeds
// it, each leader asks it (Partition.Fenced). Safe for concurrent use.
type SessionGuard struct {
	mu sync.Mutex
	s  fence.Session
}

// NewSessionGuard is a connected session with ZooKeeper's session timeout
// (a cut counts as lost after it plus fence.ExpiryRounding).
func NewSessionGuard(timeout time.Duration) *SessionGuard {
	return &SessionGuard{s: fence.Session{Timeout: timeout, Grace: fence.ExpiryRounding}}
}

// Connected: the same session reconnected, or a new one replaced it.
func (g *SessionGuard) Connected() { g.mu.Lock(); g.s.Connected(); g.mu.Unlock() }

// Disconnected: the connection dropped; lastContact is when the broker
// last read from ZooKeeper.
func (g *SessionGuard) Disconnected(lastContact time.Time) {
	g.mu.Lock()
	g.s.Disconnected(lastContact)
	g.mu.Unlock()
}

// Expired: ZooKeeper said the session expired.
func (g *SessionGuard) Expired() { g.mu.Lock(); g.s.Expired(); g.mu.Unlock() }

// lost is fence.Session.LostFor a leadership given at roleExpiries.
func (g *SessionGuard) lost(roleExpiries int, now time.Time) (lost bool, cutFor, timeout time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.s.LostFor(roleExpiries, now), g.s.CutFor(now), g.s.Timeout
}

// expiries is fence.Session.Expiries.
func (g *SessionGuard) expiries() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.s.Expiries()
}

// Fenced says whether this broker, leading the partition, has stopped
// acting as its leader (replication/fence's rule: cut from ZooKeeper for
// its session timeout and no follower fetch for as long). A fenced leader
// still serves its followers' fetches (one ends the fence) and
// OffsetForLeaderEpoch; produce and consumer reads answer ErrNotLeader.
//
// The broker calls it periodically while the session is cut (CheckFences):
// when the fence starts, produces waiting for acks=all answer
// NOT_LEADER_OR_FOLLOWER at once instead of at their timeout, so their
// clients move to the new leader.
func (p *Replica) Fenced() bool {
	if p.session == nil {
		return false
	}
	now := p.now()
	p.mu.Lock()
	fenced := p.fencedLocked(now) != nil
	announce := fenced && !p.mu.fenceAnnounced
	p.mu.fenceAnnounced = fenced
	p.mu.Unlock()
	if announce && p.waiters != nil {
		p.waiters.Notify(p.key(), delayed.State{Gone: true})
	}
	return fenced
}

// Cut says whether the session has no connection now or has expired:
// only then can a leader be fenced, so the broker checks its leaders
// (CheckFences) only then.
func (g *SessionGuard) Cut(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.s.CutFor(now) > 0 || g.s.Lost(now) || g.s.Expiries() > 0
}

// fencedLocked is Fenced's answer as the error a fenced leader gives (nil:
// not fenced); it logs when the fence starts and ends. Expects mu.
func (p *Replica) fencedLocked(now time.Time) error {
	l := p.mu.leader
	if p.session == nil || l == nil {
		return nil
	}
	lost, cutFor, timeout := p.session.lost(p.mu.roleExpiries, now)
	heard, replaceable := l.HeardFromFollower()
	fenced := fence.LeaderFenced(lost, replaceable, heard, now, timeout)
	if fenced != p.mu.fenced {
		p.mu.fenced = fenced
		if fenced {
			p.logger.Warn("no longer acting as leader: cut from ZooKeeper for a session timeout and no follower fetched",
				"epoch", l.Epoch(), "cut_for", cutFor.Round(time.Millisecond), "last_follower_fetch", now.Sub(heard).Round(time.Millisecond))
		} else {
			p.logger.Info("acting as leader again", "epoch", l.Epoch())
		}
	}
	if !fenced {
		return nil
	}
	return fmt.Errorf("%w: %s-%d: broker %d lost its ZooKeeper session (cut for %v) and no follower fetched for %v; another broker leads it or will shortly",
		ErrNotLeader, p.topic, p.index, p.brokerID, cutFor.Round(time.Millisecond), now.Sub(heard).Round(time.Millisecond))
}

// checkLeading is the leader check of produce and consumer reads: this
// broker leads the partition in role r and is not fenced.
func (p *Replica) checkLeading(r *Role) error {
	if r.Leader != p.brokerID {
		return p.notLeader(r)
	}
	if p.session == nil {
		return nil
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fencedLocked(now)
}

// CheckLeading says whether produce and consumer reads may be served here:
// nil when this broker leads the partition and is not fenced, ErrNotLeader
// otherwise.
func (p *Replica) CheckLeading() error { return p.checkLeading(p.role.Load()) }
