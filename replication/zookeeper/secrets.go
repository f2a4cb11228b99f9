package zookeeper

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// secretsPath holds ferry's own cluster-wide secrets (Kafka has none
// such): the key that signs the admin page's session cookies, which every
// node must share so a login on one is honoured by all. ZooKeeper's ACLs
// guard it as they guard the SCRAM verifiers in /config/users.
const secretsPath = "/ferry/secrets"

// GetOrCreateSecret stores proposed under name unless a secret is already
// there, and returns the stored one: the first broker's wins.
func (c *Client) GetOrCreateSecret(name string, proposed []byte) ([]byte, error) {
	p := secretsPath + "/" + name
	if err := validatePath(p); err != nil || len(proposed) == 0 {
		return nil, fmt.Errorf("zookeeper: secret %q: bad name or empty value", name)
	}
	err := c.do(func(bool) error {
		if err := c.ensurePath(secretsPath); err != nil {
			return err
		}
		_, err := c.conn.Create(c.abs(p), proposed, 0, openACL)
		return err
	})
	if err == nil {
		return proposed, nil
	}
	if !errors.Is(err, zk.ErrNodeExists) {
		return nil, fmt.Errorf("zookeeper: create %s: %w", p, err)
	}
	data, _, err := c.get(p)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("zookeeper: %s is empty", p)
	}
	return data, nil
}
