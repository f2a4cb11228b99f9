package records_test

import (
	"fmt"
	"sync"

	"github.com/ferry-mq/ferry/server/records"
)

// builders is how a request handler reuses Builders, so that producing
// allocates per batch rather than per record.
var builders = sync.Pool{New: func() any { return new(records.Builder) }}

func Example() {
	b := builders.Get().(*records.Builder)
	defer builders.Put(b)
	b.Reset()
	for i, v := range []string{"alpha", "beta"} {
		key := fmt.Appendf(nil, "user-%d", i)
		b.Add(records.Record{Key: key, Value: []byte(v), Timestamp: 1700000000000})
	}
	batch, err := b.AppendBatch(nil, records.BatchOptions{Codec: records.Zstd})
	if err != nil {
		panic(err)
	}
	fmt.Println("partition of user-0:", records.PartitionForKey([]byte("user-0"), 6))

	// A log read returns whole batches; Decode yields offsets from 1 on.
	err = records.Decode(batch, 1, 0, func(r records.Record) bool {
		fmt.Printf("offset %d: %s=%s\n", r.Offset, r.Key, r.Value)
		return true
	})
	fmt.Println("err:", err)
	// Output:
	// partition of user-0: 1
	// offset 1: user-1=beta
	// err: <nil>
}
