package kcli

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProducerOpts turns --acks (0, 1, all or -1) and --compression (none,
// gzip, snappy, lz4, zstd) into kgo options. Idempotent writes need
// acks=all, so they are disabled for 0 and 1, as the Java producer does.
func ProducerOpts(acks, compression string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("--acks %q: want 0, 1 or all", acks)
	}
	codec, err := compressionCodec(compression)
	if err != nil {
		return nil, err
	}
	return append(opts, kgo.ProducerBatchCompression(codec)), nil
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", name)
}
