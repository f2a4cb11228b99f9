package zookeeper

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

const (
	controllerPath      = "/controller"
	controllerEpochPath = "/controller_epoch"
)

// Election is a won controller election: the new controller epoch and
// the /controller_epoch znode version every fenced write checks.
type Election struct {
	Epoch        int32
	EpochVersion int32
}

// TryElect makes brokerID the controller if there is none, as Kafka's
// registerControllerAndIncrementControllerEpoch does: one multi creates
// the ephemeral /controller and bumps /controller_epoch conditionally on
// the version read (creating it as "0" first if missing), so exactly one
// broker wins each epoch. ErrNotElected when another broker holds
// /controller or won the race.
func (c *Client) TryElect(brokerID int32, timestampMs int64) (Election, error) {
	epoch, version, err := c.readOrCreateControllerEpoch()
	if err != nil {
		return Election{}, err
	}
	next := Election{Epoch: epoch + 1}
	err = c.do(func(retried bool) error {
		res, err := c.conn.Multi(
			&zk.CreateRequest{Path: c.abs(controllerPath), Data: encodeController(brokerID, timestampMs), Acl: openACL, Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: c.abs(controllerEpochPath), Data: encodeControllerEpoch(next.Epoch), Version: version},
		)
		if _, opErr := multiError(res, err); opErr != nil {
			return opErr
		}
		next.EpochVersion = res[1].Stat.Version
		return nil
	})
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) {
		return c.checkElected(brokerID, next.Epoch)
	}
	if err != nil {
		return Election{}, fmt.Errorf("zookeeper: elect controller: %w", err)
	}
	return next, nil
}

// checkElected settles a failed or ambiguous election (a retry after a
// lost reply): it won only if /controller names this broker and the
// epoch is the one it wrote.
func (c *Client) checkElected(brokerID, epoch int32) (Election, error) {
	id, err := c.Controller()
	if errors.Is(err, ErrNotFound) {
		return Election{}, fmt.Errorf("%w: %s went away during the election", ErrNotElected, controllerPath)
	}
	if err != nil {
		return Election{}, err
	}
	if id == brokerID {
		got, version, err := c.ControllerEpoch()
		if err != nil {
			return Election{}, err
		}
		if got == epoch {
			return Election{Epoch: epoch, EpochVersion: version}, nil
		}
	}
	return Election{}, fmt.Errorf("%w: broker %d", ErrNotElected, id)
}

func (c *Client) readOrCreateControllerEpoch() (epoch, version int32, err error) {
	epoch, version, err = c.ControllerEpoch()
	if !errors.Is(err, ErrNotFound) {
		return epoch, version, err
	}
	err = c.do(func(bool) error {
		_, err := c.conn.Create(c.abs(controllerEpochPath), encodeControllerEpoch(0), 0, openACL)
		return err
	})
	if err == nil {
		return 0, 0, nil
	}
	if !errors.Is(err, zk.ErrNodeExists) {
		return 0, 0, fmt.Errorf("zookeeper: create %s: %w", controllerEpochPath, err)
	}
	return c.ControllerEpoch()
}

// Controller returns the controller's broker id (ErrNotFound when there
// is none).
func (c *Client) Controller() (int32, error) {
	data, _, err := c.get(controllerPath)
	if err != nil {
		return 0, err
	}
	return decodeController(data)
}

// ControllerEpoch returns the epoch and its znode version.
func (c *Client) ControllerEpoch() (epoch, version int32, err error) {
	data, version, err := c.get(controllerEpochPath)
	if err != nil {
		return 0, 0, err
	}
	epoch, err = decodeControllerEpoch(data)
	return epoch, version, err
}

// ControllerState is /controller as a watch sees it.
type ControllerState struct {
	ID      int32
	Present bool // false: no controller, run an election
}

// WatchController delivers the controller now and after every change; a
// state with Present false is the cue to call TryElect.
func (c *Client) WatchController() *Watch[ControllerState] {
	return startWatch(c, controllerPath, func() (ControllerState, <-chan zk.Event, error) {
		data, _, present, fired, err := c.watchData(controllerPath)
		if err != nil || !present {
			return ControllerState{}, fired, err
		}
		id, err := decodeController(data)
		if err != nil { // unreadable: treat as absent only once it goes away
			c.log.Warn("unreadable controller znode", "err", err)
			return ControllerState{ID: -1, Present: true}, fired, nil
		}
		return ControllerState{ID: id, Present: true}, fired, nil
	})
}

// Resign deletes /controller, fenced by the epoch version the election
// returned, so a controller that was already replaced deletes nothing
// (ErrControllerMoved).
func (c *Client) Resign(e Election) error {
	err := c.fenced(e.EpochVersion, &zk.DeleteRequest{Path: c.abs(controllerPath), Version: -1})
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// fenced runs one write in a multi behind a check of /controller_epoch's
// version, as Kafka's controller writes are: ErrControllerMoved when a
// newer controller bumped the epoch.
func (c *Client) fenced(epochVersion int32, op any) error {
	_, err := c.fencedMulti(epochVersion, op)
	return err
}

// fencedMulti runs ops behind the epoch check, returning their results
// (without the check's).
func (c *Client) fencedMulti(epochVersion int32, ops ...any) ([]zk.MultiResponse, error) {
	all := append([]any{&zk.CheckVersionRequest{Path: c.abs(controllerEpochPath), Version: epochVersion}}, ops...)
	var res []zk.MultiResponse
	err := c.do(func(bool) error {
		var err error
		res, err = c.conn.Multi(all...)
		i, opErr := multiError(res, err)
		switch {
		case opErr == nil:
			return nil
		case i == 0 && errors.Is(opErr, zk.ErrBadVersion):
			return fmt.Errorf("%w: %s is no longer at version %d", ErrControllerMoved, controllerEpochPath, epochVersion)
		case i == 0 && errors.Is(opErr, zk.ErrNoNode):
			return fmt.Errorf("%w: %s is missing", ErrControllerMoved, controllerEpochPath)
		}
		return opErr
	})
	if err != nil {
		return nil, err
	}
	return res[1:], nil
}

// DeposeController deletes /controller when it names brokerID, in a multi
// checking /controller_epoch's version read before /controller: a broker
// elected since (which bumps that version in its election's multi) is left
// alone. It is for another broker's evidence that brokerID's process is
// gone (its listener refuses connections) before its session expires, so
// a new controller is elected at once. A deposed controller that is alive
// after all finds its fenced writes refused and resigns. It reports
// whether it deleted the znode.
func (c *Client) DeposeController(brokerID int32) (bool, error) {
	_, epochVersion, err := c.ControllerEpoch()
	if errors.Is(err, ErrNotFound) {
		return false, nil // never a controller
	}
	if err != nil {
		return false, err
	}
	id, err := c.Controller()
	if errors.Is(err, ErrNotFound) || (err == nil && id != brokerID) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = c.fenced(epochVersion, &zk.DeleteRequest{Path: c.abs(controllerPath), Version: -1})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrControllerMoved), errors.Is(err, zk.ErrNoNode):
		return false, nil
	}
	return false, fmt.Errorf("zookeeper: depose controller %d: %w", brokerID, err)
}
