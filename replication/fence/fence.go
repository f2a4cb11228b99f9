// Package fence decides when a partition leader cut off from the cluster
// stops acting as leader (issue 23), without I/O: the caller feeds it the
// broker's ZooKeeper session events and asks with the time and the
// partition's last follower fetch.
//
// The rule. A leader stops answering as leader (produce and consumer
// fetches get NOT_LEADER_OR_FOLLOWER, Metadata does not name it, the HTTP
// gateway answers 503) for a partition that has other replicas when both:
//
//   - its ZooKeeper session has been without contact for the session
//     timeout (counted from the last bytes read from ZooKeeper, so it does
//     not wait to hear "expired", which it cannot hear while cut off), or
//     ZooKeeper said the session expired after the controller last gave
//     this leadership (a new session alone does not end that: the
//     controller's LeaderAndIsr does, which follows the broker's new
//     registration at once); and
//   - no follower has fetched from it in this leadership for the session
//     timeout.
//
// By then ZooKeeper has expired the session (it counts the same timeout
// from the same last contact, rounded up to its tick), so the controller
// has elected another leader, or is doing so; clients sent
// NOT_LEADER_OR_FOLLOWER ask for metadata and move to it. A follower that
// still fetches shows that no leader it knows of replaced this one, so a
// ZooKeeper outage of the whole cluster, where followers go on fetching,
// fences nothing. A single node (no session) and a partition whose ISR
// is its leader alone (RF 1, or its followers fell out: no clean election
// could replace it, so its writes stay committed) are never fenced.
//
// Safety does not rest on this: a cut-off leader cannot acknowledge an
// acks=all write (its followers fetch from the new leader) and its ISR
// writes are refused by the znode version. Fencing only stops it from
// holding clients for the whole cut. Reconnecting the same session, or a
// new session, ends the fence at once; the controller's LeaderAndIsr then
// says what this broker leads.
package fence

import "time"

// Session is this broker's view of its ZooKeeper session. The zero value
// is a connected session with the Timeout unset (never lost). It is not
// safe for concurrent use.
type Session struct {
	// Timeout is zookeeper.session.timeout.ms; Grace is added to it for
	// the cut (ExpiryRounding), so the fence starts once ZooKeeper has
	// expired the session, not a tick before.
	Timeout     time.Duration
	Grace       time.Duration
	cut         bool      // no connection since lastContact
	expired     bool      // ZooKeeper said so; no new session yet
	expiries    int       // how many times ZooKeeper said so
	lastContact time.Time // the last bytes read from ZooKeeper before the cut
}

// Connected: the session (the same one, or a new one replacing an
// expired one) is connected again.
func (s *Session) Connected() { s.cut, s.expired = false, false }

// Disconnected: the connection dropped; lastContact is when the broker
// last read from ZooKeeper (the zero time: unknown, counted from now by
// the caller).
func (s *Session) Disconnected(lastContact time.Time) {
	if !s.cut {
		s.cut, s.lastContact = true, lastContact
	}
}

// Expired: ZooKeeper expired the session: the broker's registration is
// gone, so another broker may lead its partitions already.
func (s *Session) Expired() { s.expired, s.expiries = true, s.expiries+1 }

// Expiries counts the session's expiries so far: a leadership given when
// it was n (Partition's role) is lost once it is above n.
func (s *Session) Expiries() int { return s.expiries }

// LostFor says whether the session is lost for a leadership the
// controller gave when Expiries was roleExpiries: Lost, or expired since.
func (s *Session) LostFor(roleExpiries int, now time.Time) bool {
	if s.Timeout <= 0 {
		return false
	}
	return s.Lost(now) || s.expiries > roleExpiries
}

// Lost says whether the session is lost as of now: expired, or cut for
// at least the timeout.
func (s *Session) Lost(now time.Time) bool {
	if s.Timeout <= 0 {
		return false
	}
	return s.expired || (s.cut && now.Sub(s.lastContact) >= s.Timeout+s.Grace)
}

// ExpiryRounding is the Grace a broker gives its session: ZooKeeper
// checks expiries once a tick (tickTime, 2 s by default and in Kafka's
// shipped zookeeper.properties), so a session expires up to a tick after
// its timeout. A leader that fenced itself before that would send its
// clients to ask for metadata while every other broker still names it:
// clients that limit their metadata refreshes (franz-go: one per 5 s)
// would then learn the new leader one refresh later. Measured (3 brokers,
// 6 s timeout): fencing at the timeout, the new leader was in the other
// brokers' Metadata 1.1 s after the fence and the producer stalled 11 s.
const ExpiryRounding = 2 * time.Second

// CutFor is how long the session has been without contact (0 while
// connected), for messages.
func (s *Session) CutFor(now time.Time) time.Duration {
	if !s.cut {
		return 0
	}
	return now.Sub(s.lastContact)
}

// LeaderFenced applies the rule to one partition this broker leads:
// sessionLost is Session.Lost, replaceable whether the ISR holds another
// replica, lastHeard the later of when this leadership began and the
// last follower fetch in it.
func LeaderFenced(sessionLost, replaceable bool, lastHeard, now time.Time, timeout time.Duration) bool {
	return sessionLost && replaceable && now.Sub(lastHeard) >= timeout
}
