package protobuf

import (
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
)

// TestFileIsSafeForConcurrentUse: the registry caches one *File per schema
// id and every request and broker goroutine uses it at once.
func TestFileIsSafeForConcurrentUse(t *testing.T) {
	f := mustParse(t, orderSchema, nil)
	other := mustParse(t, orderSchema+"message More { int32 x = 1; }", nil)
	payload, _ := proto.Marshal(newOrder(t, f))
	canonical := f.Canonical()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := f.Validate(nil, payload); err != nil {
					t.Error(err)
					return
				}
				if _, err := f.ToJSON(nil, payload, 1<<20); err != nil {
					t.Error(err)
					return
				}
				if _, err := f.FromJSON("shop.Order", []byte(`{"extra":{"@type":"type.googleapis.com/shop.Node","label":"x"}}`)); err != nil {
					t.Error(err)
					return
				}
				if f.Canonical() != canonical {
					t.Error("canonical form changed under concurrent use")
					return
				}
				if p := Check(other, f); len(p) != 0 {
					t.Error(p)
					return
				}
			}
		}()
	}
	wg.Wait()
}
