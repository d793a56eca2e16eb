package scrape

// Test-only views of the shell's bounded state.

// Workers returns how many worker goroutines the cache has started.
func (c *Cache) Workers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.workers
}

// Queued returns the FIFO length.
func (c *Cache) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Queued()
}
