package handshake

import (
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// expirySkew treats a cookie as expired a little early, so a request never
// leaves with a cookie that dies on its way.
const expirySkew = 30 * time.Second

// cacheKey is what one upstream cookie is good for: the app binds its auth
// cookie to the Host it was issued for, and a new pod UID is a new app.
type cacheKey struct {
	user   string
	podUID string
	host   string
}

// flightKey is the singleflight key. The parts are validated to hold no
// control characters, so NUL separates them unambiguously.
func (k cacheKey) flightKey() string { return k.user + "\x00" + k.podUID + "\x00" + k.host }

// cacheEntry is one cached Cookie header value.
type cacheEntry struct {
	cookie  string
	expires time.Time // zero: no expiry given by the app
}

func (e cacheEntry) valid(now time.Time) bool {
	return e.expires.IsZero() || now.Before(e.expires.Add(-expirySkew))
}

// cookieCache is a bounded LRU of upstream cookies, safe for concurrent use.
type cookieCache struct {
	lru *lru.Cache[cacheKey, cacheEntry]
}

func newCookieCache(size int) (*cookieCache, error) {
	c, err := lru.New[cacheKey, cacheEntry](size)
	if err != nil {
		return nil, err
	}
	return &cookieCache{lru: c}, nil
}

// get returns the valid entry for k, dropping an expired one.
func (c *cookieCache) get(k cacheKey, now time.Time) (cacheEntry, bool) {
	e, ok := c.lru.Get(k)
	if !ok {
		return cacheEntry{}, false
	}
	if !e.valid(now) {
		c.lru.Remove(k)
		return cacheEntry{}, false
	}
	return e, true
}

func (c *cookieCache) add(k cacheKey, e cacheEntry) { c.lru.Add(k, e) }

func (c *cookieCache) remove(k cacheKey) { c.lru.Remove(k) }

// removeIf drops every entry whose key matches and reports how many.
func (c *cookieCache) removeIf(match func(cacheKey) bool) int {
	n := 0
	for _, k := range c.lru.Keys() {
		if match(k) && c.lru.Remove(k) {
			n++
		}
	}
	return n
}
