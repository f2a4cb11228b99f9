package storage

// SetIndexCacheLimit sets the byte budget of the sealed segments' index
// cache for a test and returns a function restoring it.
func SetIndexCacheLimit(n int64) (restore func()) {
	c := sealedIndexCache
	c.mu.Lock()
	old := c.limit
	c.limit = n
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.limit = old
		c.mu.Unlock()
	}
}

// IndexCacheUsed is the memory the cache accounts for.
func IndexCacheUsed() int64 {
	c := sealedIndexCache
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
