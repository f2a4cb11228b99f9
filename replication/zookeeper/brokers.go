package zookeeper

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

const brokerIDsPath = "/brokers/ids"

func brokerPath(id int32) string { return brokerIDsPath + "/" + strconv.Itoa(int(id)) }

// Register creates the broker's ephemeral /brokers/ids/<id>. When the
// znode exists it succeeds only if this session owns it (a retry after a
// lost reply); another live session's znode is ErrBrokerIDTaken. After a
// session expiry the client registers the same info again by itself
// (see NewSession).
func (c *Client) Register(b BrokerInfo) error {
	if err := validBroker(b); err != nil {
		return err
	}
	if err := c.createBroker(b); err != nil {
		return err
	}
	c.mu.Lock()
	c.mu.registered = &b
	c.mu.Unlock()
	return nil
}

// Deregister deletes the registration (a controlled stop); the client no
// longer re-registers after expiry.
func (c *Client) Deregister() error {
	c.mu.Lock()
	b := c.mu.registered
	c.mu.registered = nil
	c.mu.Unlock()
	if b == nil {
		return nil
	}
	err := c.do(func(bool) error { return c.conn.Delete(c.abs(brokerPath(b.ID)), -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zookeeper: delete %s: %w", brokerPath(b.ID), err)
	}
	return nil
}

func (c *Client) reregister() error {
	c.mu.Lock()
	b := c.mu.registered
	c.mu.Unlock()
	if b == nil {
		return nil
	}
	err := c.createBroker(*b)
	if err != nil {
		c.log.Error("re-register broker after session expiry", "broker", b.ID, "err", err)
	}
	return err
}

func validBroker(b BrokerInfo) error {
	if b.ID < 0 {
		return fmt.Errorf("zookeeper: broker id %d is negative", b.ID)
	}
	if len(b.Endpoints) == 0 {
		return fmt.Errorf("zookeeper: broker %d has no endpoint", b.ID)
	}
	seen := map[string]bool{}
	for _, e := range b.Endpoints {
		if e.Listener == "" || strings.ContainsAny(e.Listener, ":/") || seen[e.Listener] || e.Port < 0 || e.Port > 65535 || e.SecurityProtocol == "" {
			return fmt.Errorf("zookeeper: broker %d: invalid endpoint %+v", b.ID, e)
		}
		seen[e.Listener] = true
	}
	return nil
}

// createBroker writes the registration the way Kafka's CheckedEphemeral
// does — create empty, then set the data at version 0, in one multi — so
// even the znode's stat (dataVersion 1) is what an operator knows.
func (c *Client) createBroker(b BrokerInfo) error {
	p := brokerPath(b.ID)
	data := encodeBroker(b)
	err := c.do(func(bool) error {
		if err := c.ensurePath(brokerIDsPath); err != nil {
			return err
		}
		_, err := multiError(c.conn.Multi(
			&zk.CreateRequest{Path: c.abs(p), Acl: openACL, Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: c.abs(p), Data: data, Version: 0}))
		if errors.Is(err, zk.ErrNodeExists) {
			return c.checkOwner(p)
		}
		return err
	})
	if err != nil && !errors.Is(err, ErrBrokerIDTaken) {
		return fmt.Errorf("zookeeper: register %s: %w", p, err)
	}
	return err
}

// checkOwner accepts an existing ephemeral znode only if this session
// created it.
func (c *Client) checkOwner(p string) error {
	_, st, err := c.conn.Get(c.abs(p))
	if errors.Is(err, zk.ErrNoNode) {
		return zk.ErrConnectionClosed // gone meanwhile: create again
	}
	if err != nil {
		return err
	}
	if st.EphemeralOwner != c.conn.SessionID() {
		return fmt.Errorf("%w: %s is held by session 0x%x", ErrBrokerIDTaken, p, st.EphemeralOwner)
	}
	return nil
}

// Brokers lists the live brokers, sorted by id. A registration that does
// not decode is skipped with a log line rather than failing the list.
func (c *Client) Brokers() ([]BrokerInfo, error) {
	ids, err := c.children(brokerIDsPath)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.readBrokers(ids), nil
}

// Broker reads one registration (ErrNotFound when that broker is not
// live).
func (c *Client) Broker(id int32) (BrokerInfo, error) {
	data, _, err := c.get(brokerPath(id))
	if err != nil {
		return BrokerInfo{}, err
	}
	return decodeBroker(id, data)
}

func (c *Client) readBrokers(ids []string) []BrokerInfo {
	out := make([]BrokerInfo, 0, len(ids))
	for _, name := range ids {
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil || id < 0 {
			c.log.Warn("ignoring a non-numeric broker znode", "name", truncate(name))
			continue
		}
		b, err := c.Broker(int32(id))
		if errors.Is(err, ErrNotFound) {
			continue // went away between the list and the read
		}
		if err != nil {
			c.log.Warn("ignoring an unreadable broker registration", "broker", id, "err", err)
			continue
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b BrokerInfo) int { return int(a.ID) - int(b.ID) })
	return out
}

// WatchBrokers delivers the live brokers now and after every change.
func (c *Client) WatchBrokers() *Watch[[]BrokerInfo] {
	return startWatch(c, brokerIDsPath, func() ([]BrokerInfo, <-chan zk.Event, error) {
		if err := c.ensurePath(brokerIDsPath); err != nil {
			return nil, nil, err
		}
		ids, fired, err := c.watchChildren(brokerIDsPath)
		if err != nil {
			return nil, nil, err
		}
		return c.readBrokers(ids), fired, nil
	})
}
