package wire

// TopicSlot is the index in *list of topic's entry, appending newEntry(topic)
// the first time: Kafka's requests list partitions under their topic, in
// the order topics first appear. slots remembers where each topic is.
func TopicSlot[T any](slots map[string]int, list *[]T, topic string, newEntry func(string) T) int {
	if i, ok := slots[topic]; ok {
		return i
	}
	slots[topic] = len(*list)
	*list = append(*list, newEntry(topic))
	return len(*list) - 1
}
