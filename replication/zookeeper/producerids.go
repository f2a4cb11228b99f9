package zookeeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// Producer ids are unique across the cluster as Kafka makes them
// (ZkProducerIdManager): each broker reserves a block of ids by moving
// /latest_producer_id_block forward with a write conditional on the
// znode's version, and hands out ids from its block alone.
// {"version":1,"broker":2,"block_start":"1000","block_end":"1999"}

const producerIDBlockPath = "/latest_producer_id_block"

// maxBlockAttempts bounds the retries of a block reservation that other
// brokers keep winning.
const maxBlockAttempts = 64

type producerIDBlock struct {
	Version    int    `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

// ReserveProducerIDs reserves the next size producer ids for brokerID
// and returns the first; the cluster's first block starts at from.
func (c *Client) ReserveProducerIDs(brokerID int32, size, from int64) (int64, error) {
	if size < 1 {
		return 0, fmt.Errorf("zookeeper: producer id block of %d", size)
	}
	for attempt := 0; attempt < maxBlockAttempts; attempt++ {
		data, version, err := c.get(producerIDBlockPath)
		absent := errors.Is(err, ErrNotFound)
		if err != nil && !absent {
			return 0, err
		}
		start := from
		if !absent && len(data) > 0 {
			var cur producerIDBlock
			if err := decodeJSON(producerIDBlockPath, data, &cur); err != nil {
				return 0, err
			}
			end, err := strconv.ParseInt(cur.BlockEnd, 10, 64)
			if err != nil || end < -1 {
				return 0, fmt.Errorf("%w: %s block_end %q", ErrCorrupt, producerIDBlockPath, cur.BlockEnd)
			}
			start = max(end+1, from)
		}
		if start > (1<<63-1)-size {
			return 0, fmt.Errorf("zookeeper: producer ids exhausted")
		}
		next, _ := json.Marshal(producerIDBlock{Version: 1, Broker: brokerID,
			BlockStart: strconv.FormatInt(start, 10), BlockEnd: strconv.FormatInt(start+size-1, 10)})
		err = c.do(func(bool) error {
			if absent {
				_, err := c.conn.Create(c.abs(producerIDBlockPath), next, 0, openACL)
				return err
			}
			_, err := c.conn.Set(c.abs(producerIDBlockPath), next, version)
			return err
		})
		switch {
		case err == nil:
			return start, nil
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
			continue // another broker took the block: take the next one
		default:
			return 0, fmt.Errorf("zookeeper: reserve producer ids: %w", err)
		}
	}
	return 0, fmt.Errorf("zookeeper: reserve producer ids: %d attempts lost to other brokers", maxBlockAttempts)
}
