package zookeeper

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

const clusterIDPath = "/cluster/id"

// ClusterID returns the id in /cluster/id (ErrNotFound when none).
func (c *Client) ClusterID() (string, error) {
	data, _, err := c.get(clusterIDPath)
	if err != nil {
		return "", err
	}
	return decodeClusterID(data)
}

// GetOrCreateClusterID writes proposed as the cluster id unless one
// exists, and returns the one that is stored: the first broker to create
// the znode wins and every other one reads its id.
func (c *Client) GetOrCreateClusterID(proposed string) (string, error) {
	if len(proposed) != 22 {
		return "", fmt.Errorf("zookeeper: cluster id %q is not a 22-character base64url uuid", proposed)
	}
	err := c.do(func(bool) error {
		if err := c.ensurePath("/cluster"); err != nil {
			return err
		}
		_, err := c.conn.Create(c.abs(clusterIDPath), encodeClusterID(proposed), 0, openACL)
		return err
	})
	if err == nil {
		return proposed, nil
	}
	if !errors.Is(err, zk.ErrNodeExists) {
		return "", fmt.Errorf("zookeeper: create %s: %w", clusterIDPath, err)
	}
	return c.ClusterID()
}
