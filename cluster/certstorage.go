package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/redis/go-redis/v9"
)

// CertStorage is a certmagic.Storage in the shared store, so that every
// instance serves a certificate one of them obtained. Under the prefix:
//
//	cert:f:KEY    a hash: v (the value), m (modified, Unix nanoseconds)
//	cert:idx      a sorted set of every KEY (all scores 0, ordered by
//	              name), for List and for Exists and Delete of directories
//	cert:lock:N   a lock: a random token, with an expiry renewed while
//	              its holder lives
//
// A lock expires lockTTL after its holder last renewed it (every
// lockTTL/3), so a crashed holder frees it within lockTTL. Methods are
// safe for concurrent use.
type CertStorage struct {
	s       *Store
	lockTTL time.Duration

	mu    sync.Mutex
	locks map[string]*heldLock // locks this instance holds, by name
}

// heldLock is a lock this instance holds, and its renewer.
type heldLock struct {
	token string
	stop  chan struct{}
	done  chan struct{}
}

// DefaultLockTTL is how long a lock outlives its holder's last renewal.
const DefaultLockTTL = 30 * time.Second

// lockPoll is how often Lock tries again while another holds the lock.
const lockPoll = 200 * time.Millisecond

var _ certmagic.Storage = (*CertStorage)(nil)
var _ certmagic.LockLeaseRenewer = (*CertStorage)(nil)

// CertStorage returns the store's certmagic storage with locks expiring
// ttl after their last renewal (DefaultLockTTL when 0).
func (s *Store) CertStorage(ttl time.Duration) *CertStorage {
	if ttl <= 0 {
		ttl = DefaultLockTTL
	}
	return &CertStorage{s: s, lockTTL: ttl, locks: map[string]*heldLock{}}
}

func (c *CertStorage) file(key string) string { return c.s.key("cert:f:", key) }
func (c *CertStorage) index() string          { return c.s.key("cert:idx") }
func (c *CertStorage) lock(name string) string {
	return c.s.key("cert:lock:", name)
}

// norm makes a key canonical: no leading, trailing or doubled slashes.
func norm(key string) string {
	parts := strings.Split(key, "/")
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "/")
}

// Store implements certmagic.Storage.
func (c *CertStorage) Store(ctx context.Context, key string, value []byte) error {
	key = norm(key)
	_, err := c.s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, c.file(key), "v", value, "m", strconv.FormatInt(time.Now().UnixNano(), 10))
		p.ZAdd(ctx, c.index(), redis.Z{Member: key})
		return nil
	})
	return err
}

// Load implements certmagic.Storage.
func (c *CertStorage) Load(ctx context.Context, key string) ([]byte, error) {
	v, err := c.s.rdb.HGet(ctx, c.file(norm(key)), "v").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fs.ErrNotExist
	}
	return v, err
}

// Delete implements certmagic.Storage: the key, and every key under it.
func (c *CertStorage) Delete(ctx context.Context, key string) error {
	key = norm(key)
	under, err := c.under(ctx, key, 0)
	if err != nil {
		return err
	}
	keys := append([]string{key}, under...)
	files := make([]string, len(keys))
	members := make([]any, len(keys))
	for i, k := range keys {
		files[i], members[i] = c.file(k), k
	}
	_, err = c.s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, files...)
		p.ZRem(ctx, c.index(), members...)
		return nil
	})
	return err
}

// under returns the keys below dir ("" = all), at most limit (0 = all).
func (c *CertStorage) under(ctx context.Context, dir string, limit int64) ([]string, error) {
	min, max := "-", "+"
	if dir != "" {
		min, max = "["+dir+"/", "("+dir+"0" // '0' follows '/'
	}
	return c.s.rdb.ZRangeByLex(ctx, c.index(), &redis.ZRangeBy{Min: min, Max: max, Count: limit}).Result()
}

// Exists implements certmagic.Storage: a key, or a directory of keys.
func (c *CertStorage) Exists(ctx context.Context, key string) bool {
	key = norm(key)
	if n, err := c.s.rdb.Exists(ctx, c.file(key)).Result(); err == nil && n > 0 {
		return true
	}
	under, err := c.under(ctx, key, 1)
	return err == nil && len(under) > 0
}

// List implements certmagic.Storage.
func (c *CertStorage) List(ctx context.Context, path string, recursive bool) ([]string, error) {
	path = norm(path)
	under, err := c.under(ctx, path, 0)
	if err != nil {
		return nil, err
	}
	if len(under) == 0 {
		return nil, fs.ErrNotExist
	}
	if recursive {
		return under, nil
	}
	var out []string
	seen := map[string]bool{}
	base := len(path)
	if path != "" {
		base++
	}
	for _, k := range under {
		child, _, _ := strings.Cut(k[base:], "/")
		name := child
		if path != "" {
			name = path + "/" + child
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

// Stat implements certmagic.Storage.
func (c *CertStorage) Stat(ctx context.Context, key string) (certmagic.KeyInfo, error) {
	key = norm(key)
	var m *redis.StringCmd
	var size *redis.IntCmd
	_, err := c.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		m = p.HGet(ctx, c.file(key), "m")
		size = p.HStrLen(ctx, c.file(key), "v")
		return nil
	})
	if err == nil {
		ns, _ := strconv.ParseInt(m.Val(), 10, 64)
		return certmagic.KeyInfo{Key: key, Modified: time.Unix(0, ns), Size: size.Val(), IsTerminal: true}, nil
	}
	if !errors.Is(err, redis.Nil) {
		return certmagic.KeyInfo{}, err
	}
	if under, err := c.under(ctx, key, 1); err == nil && len(under) > 0 {
		return certmagic.KeyInfo{Key: key, IsTerminal: false}, nil
	}
	return certmagic.KeyInfo{}, fs.ErrNotExist
}

// Lock implements certmagic.Locker: it waits, honouring ctx, until the
// lock is free or its holder's lease has expired, takes it, and renews
// it until Unlock.
func (c *CertStorage) Lock(ctx context.Context, name string) error {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	for {
		ok, err := c.s.rdb.SetNX(ctx, c.lock(name), token, c.lockTTL).Result()
		if err != nil {
			return err
		}
		if ok {
			break
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	h := &heldLock{token: token, stop: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	if old := c.locks[name]; old != nil {
		close(old.stop) // a lock lost to its expiry and taken again
	}
	c.locks[name] = h
	c.mu.Unlock()
	go c.renew(name, h)
	return nil
}

// renew extends h's lease every lockTTL/3 until Unlock.
func (c *CertStorage) renew(name string, h *heldLock) {
	defer close(h.done)
	t := time.NewTicker(c.lockTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-c.s.done:
			return
		case <-t.C:
			cx, cancel := ctx()
			_ = c.extend(cx, name, h.token, c.lockTTL)
			cancel()
		}
	}
}

// extendLock sets a lock's expiry only while token holds it.
var extendLock = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// releaseLock deletes a lock only while token holds it.
var releaseLock = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

func (c *CertStorage) extend(cx context.Context, name, token string, ttl time.Duration) error {
	return extendLock.Run(cx, c.s.rdb, []string{c.lock(name)}, token, ttl.Milliseconds()).Err()
}

// RenewLockLease implements certmagic.LockLeaseRenewer. certmagic asks
// at every obtain attempt for a lease of minutes (the retry interval plus
// the obtain timeout) so that the lock outlasts the attempt; the lock is
// renewed every lockTTL/3 for as long as it is held anyway, so the lease
// is renewed by lockTTL only: a holder that dies right after asking must
// not hold the others off for minutes.
func (c *CertStorage) RenewLockLease(cx context.Context, name string, _ time.Duration) error {
	c.mu.Lock()
	h := c.locks[name]
	c.mu.Unlock()
	if h == nil {
		return errors.New("lock " + name + " is not held")
	}
	return c.extend(cx, name, h.token, c.lockTTL)
}

// Unlock implements certmagic.Locker.
func (c *CertStorage) Unlock(cx context.Context, name string) error {
	c.mu.Lock()
	h := c.locks[name]
	delete(c.locks, name)
	c.mu.Unlock()
	if h == nil {
		return errors.New("lock " + name + " is not held")
	}
	close(h.stop)
	<-h.done
	return releaseLock.Run(cx, c.s.rdb, []string{c.lock(name)}, h.token).Err()
}

// String names the storage in certmagic's logs.
func (c *CertStorage) String() string { return "redis://" + c.s.rdb.Options().Addr + "/" + c.s.prefix }
