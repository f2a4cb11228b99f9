package records

// Murmur2 is the Java client's Utils.murmur2: MurmurHash2 with Kafka's seed,
// reading 4-byte little-endian words. Keyed records must land where Java
// producers put them, so this has to match it bit for bit.
func Murmur2(key []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(key))
	for ; len(key) >= 4; key = key[4:] {
		k := uint32(key[0]) | uint32(key[1])<<8 | uint32(key[2])<<16 | uint32(key[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(key) {
	case 3:
		h ^= uint32(key[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(key[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(key[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// PartitionForKey is Kafka's default partitioner for a keyed record:
// toPositive(murmur2(key)) % numPartitions, where toPositive clears the sign
// bit (it is not Math.abs). Records with a null key are not hashed by Kafka;
// choosing their partition is the caller's job. numPartitions <= 0 yields -1,
// which no partition has, rather than a division panic.
func PartitionForKey(key []byte, numPartitions int32) int32 {
	if numPartitions <= 0 {
		return -1
	}
	return (Murmur2(key) & 0x7fffffff) % numPartitions
}
