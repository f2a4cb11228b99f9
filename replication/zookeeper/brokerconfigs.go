package zookeeper

import (
	"fmt"
	"strconv"
)

// Dynamic broker configs live where Kafka keeps them:
// /config/brokers/<id> for one broker, /config/brokers/<default> for
// every broker without its own value, each {"version":1,"config":{…}},
// announced like topic configs with a /config/changes notification
// naming brokers/<entity>.

const (
	brokerConfigsPath = "/config/brokers"
	// DefaultBrokerEntity is every broker's configs (Kafka's <default>).
	DefaultBrokerEntity = "<default>"
)

// validBrokerEntity keeps a name to a broker id or the default, so it
// cannot escape its znode.
func validBrokerEntity(entity string) error {
	if entity == DefaultBrokerEntity {
		return nil
	}
	if id, err := strconv.ParseInt(entity, 10, 32); err != nil || id < 0 || strconv.FormatInt(id, 10) != entity {
		return fmt.Errorf("zookeeper: broker config entity %q is neither a broker id nor %s", truncate(entity), DefaultBrokerEntity)
	}
	return nil
}

// BrokerConfigs reads /config/brokers/<entity>; none is an empty map.
func (c *Client) BrokerConfigs(entity string) (map[string]string, error) {
	if err := validBrokerEntity(entity); err != nil {
		return nil, err
	}
	return c.EntityConfig("brokers/" + entity)
}

// SetBrokerConfigs replaces an entity's dynamic configs and, in the same
// multi, notifies every broker.
func (c *Client) SetBrokerConfigs(entity string, configs map[string]string) error {
	if err := validBrokerEntity(entity); err != nil {
		return err
	}
	return c.setConfigAnnounced(brokerConfigsPath, entity, "brokers/"+entity, configs)
}
