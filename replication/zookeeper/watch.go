package zookeeper

import (
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// Watch delivers snapshots of some ZooKeeper state: the current one at
// once, then a fresh one after every change. C holds only the latest
// snapshot, so a slow reader skips intermediate ones but never misses
// the last. A watch survives reconnects and session expiry (it is set
// again in the new session); Stop ends it and closes C.
type Watch[T any] struct {
	C    <-chan T
	stop chan struct{}
	done chan struct{}
}

// Stop ends the watch and waits for its goroutine.
func (w *Watch[T]) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// readFunc reads the state and sets a one-shot ZooKeeper watch on it.
type readFunc[T any] func() (T, <-chan zk.Event, error)

func startWatch[T any](c *Client, what string, read readFunc[T]) *Watch[T] {
	ch := make(chan T, 1)
	w := &Watch[T]{C: ch, stop: make(chan struct{}), done: make(chan struct{})}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(w.done)
		defer close(ch)
		watchLoop(c, w, ch, what, read)
	}()
	return w
}

func watchLoop[T any](c *Client, w *Watch[T], ch chan T, what string, read readFunc[T]) {
	backoff := 20 * time.Millisecond
	for {
		v, fired, err := read()
		if errors.Is(err, zk.ErrClosing) {
			return
		}
		if err != nil {
			c.log.Debug("watch read failed; retrying", "watch", what, "err", err)
			if !sleepOrQuit(c, w, backoff) {
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 20 * time.Millisecond
		replaceLatest(ch, v)
		select { // a change, or the watch dropped (expiry, close): read again
		case <-fired:
		case <-w.stop:
			return
		case <-c.quit:
			return
		}
	}
}

func replaceLatest[T any](ch chan T, v T) {
	select {
	case <-ch:
	default:
	}
	ch <- v
}

func sleepOrQuit[T any](c *Client, w *Watch[T], d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-w.stop:
	case <-c.quit:
	}
	return false
}

// watchData is the read for a data znode that may be absent: present
// reports whether it exists.
func (c *Client) watchData(p string) (data []byte, version int32, present bool, fired <-chan zk.Event, err error) {
	data, st, fired, err := c.conn.GetW(c.abs(p))
	if errors.Is(err, zk.ErrNoNode) {
		var ok bool
		ok, st, fired, err = c.conn.ExistsW(c.abs(p))
		if err != nil || !ok {
			return nil, 0, false, fired, err
		}
		// created between the two calls: the exists watch fires at once
		return nil, 0, false, closedEvents(), nil
	}
	if err != nil {
		return nil, 0, false, nil, err
	}
	return data, st.Version, true, fired, nil
}

// watchChildren is the read for a parent znode that may be absent.
func (c *Client) watchChildren(p string) ([]string, <-chan zk.Event, error) {
	names, _, fired, err := c.conn.ChildrenW(c.abs(p))
	if errors.Is(err, zk.ErrNoNode) {
		ok, _, fired, err := c.conn.ExistsW(c.abs(p))
		if err != nil {
			return nil, nil, err
		}
		if ok {
			return nil, closedEvents(), nil
		}
		return nil, fired, nil
	}
	return names, fired, err
}

func closedEvents() <-chan zk.Event {
	ch := make(chan zk.Event)
	close(ch)
	return ch
}
