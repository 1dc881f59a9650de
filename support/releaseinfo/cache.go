package releaseinfo

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// payloadCache keeps the payloads read so far, keyed by manifest digest, and
// evicts the least recently used once it holds more than max. Concurrent
// misses for one digest share a single read.
type payloadCache struct {
	mu       sync.Mutex
	max      int
	order    *list.List // of *cacheEntry, most recently used first
	entries  map[string]*list.Element
	inflight map[string]*inflightRead
}

type cacheEntry struct {
	digest  string
	release *ReleaseImage
}

type inflightRead struct {
	done    chan struct{}
	release *ReleaseImage
	err     error
}

func newPayloadCache(size int) *payloadCache {
	return &payloadCache{
		max:      size,
		order:    list.New(),
		entries:  map[string]*list.Element{},
		inflight: map[string]*inflightRead{},
	}
}

// get returns the payload cached under digest, or calls read to produce it.
// Callers must not modify the result. Failed reads are not cached.
func (c *payloadCache) get(ctx context.Context, digest string, read func() (*ReleaseImage, error)) (*ReleaseImage, error) {
	for {
		c.mu.Lock()
		if el, ok := c.entries[digest]; ok {
			c.order.MoveToFront(el)
			release := el.Value.(*cacheEntry).release
			c.mu.Unlock()
			return release, nil
		}
		if call, ok := c.inflight[digest]; ok {
			c.mu.Unlock()
			select {
			case <-call.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			// The reader's own context ending says nothing about the
			// payload: try again with ours.
			if call.err != nil && isContextError(call.err) && ctx.Err() == nil {
				continue
			}
			return call.release, call.err
		}
		call := &inflightRead{done: make(chan struct{})}
		c.inflight[digest] = call
		c.mu.Unlock()

		c.read(digest, call, read)
		return call.release, call.err
	}
}

func (c *payloadCache) read(digest string, call *inflightRead, read func() (*ReleaseImage, error)) {
	defer func() {
		c.mu.Lock()
		delete(c.inflight, digest)
		if call.err == nil && call.release != nil {
			c.add(digest, call.release)
		}
		c.mu.Unlock()
		close(call.done)
	}()
	call.err = errors.New("payload read did not complete")
	call.release, call.err = read()
}

// add stores release under digest; c.mu must be held.
func (c *payloadCache) add(digest string, release *ReleaseImage) {
	if c.max <= 0 {
		return
	}
	c.entries[digest] = c.order.PushFront(&cacheEntry{digest: digest, release: release})
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).digest)
	}
}

// len reports how many payloads are cached.
func (c *payloadCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
