package server

import "github.com/ferry-mq/ferry/replication"

// SetPartitionRole applies the controller's decision for one partition
// this broker holds (LeaderAndIsr): who leads in which epoch, the assigned
// replicas and the ISR.
func (b *Broker) SetPartitionRole(topicName string, partition int32, r replication.Role) error {
	p, err := b.partition(topicName, partition)
	if err != nil {
		return err
	}
	return p.SetRole(r)
}
