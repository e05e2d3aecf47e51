package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"gale/config"
	"gale/handlers"
)

// callTimeout bounds every call to the store: a store slower than this
// counts as unreachable.
const callTimeout = time.Second

// Store is one instance's connection to the shared store. Its methods are
// safe for concurrent use.
type Store struct {
	rdb      *redis.Client
	prefix   string
	instance string
	fixedN   int // cluster.instances; 0 = learned
	log      *slog.Logger

	up        atomic.Bool
	instances atomic.Int32 // at least 1
	failures  atomic.Uint64
	leased    atomic.Uint64 // lease calls answered
	leases    chan handlers.LeaseRequest

	done     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
	purge    purgeState
}

// leaseQueue bounds the lease requests waiting for the store.
const leaseQueue = 4096

// New connects to c's store (it dials lazily), checks it once and starts
// the heartbeat and the lease worker. instance is this instance's name.
// It never fails: an unreachable store is logged and the instance runs on
// its fallbacks until the store answers.
func New(c *config.Cluster, instance string, log *slog.Logger) *Store {
	r := c.Redis
	opt := &redis.Options{
		Addr:                     r.Address,
		Username:                 r.Username,
		Password:                 r.Password,
		DB:                       r.DB,
		DialTimeout:              callTimeout,
		ReadTimeout:              callTimeout,
		WriteTimeout:             callTimeout,
		MaxRetries:               -1, // a failed call is reported at once: the fallbacks take over
		PoolSize:                 8,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if r.TLS {
		host := r.Address
		if h, _, ok := cutPort(host); ok {
			host = h
		}
		opt.TLSConfig = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	clientLog.Do(func() { redis.SetLogger(debugLogger{log}) })
	s := &Store{
		rdb: redis.NewClient(opt), prefix: r.Prefix, instance: instance, fixedN: c.Instances,
		log: log, leases: make(chan handlers.LeaseRequest, leaseQueue), done: make(chan struct{}),
	}
	s.instances.Store(int32(max(1, c.Instances)))
	s.up.Store(true)
	s.beat()
	s.wg.Add(2)
	go s.heartbeat()
	go s.leaseLoop()
	return s
}

// cutPort splits "host:port".
func cutPort(a string) (string, string, bool) {
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] == ':' {
			h := a[:i]
			if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
				h = h[1 : len(h)-1]
			}
			return h, a[i+1:], true
		}
	}
	return "", "", false
}

// Close stops the store's goroutines and closes its connections.
func (s *Store) Close() {
	s.stopOnce.Do(func() {
		close(s.done)
		s.wg.Wait()
		s.leave()
		_ = s.rdb.Close()
	})
}

// Up reports whether the store answered its latest call.
func (s *Store) Up() bool { return s.up.Load() }

// Instances is how many instances share the store: cluster.instances, or
// those whose heartbeat the store saw lately; at least 1.
func (s *Store) Instances() int { return int(s.instances.Load()) }

// Instance is this instance's name.
func (s *Store) Instance() string { return s.instance }

// Failures counts the store's transitions to unreachable.
func (s *Store) Failures() uint64 { return s.failures.Load() }

// Leases counts the lease calls the store answered.
func (s *Store) Leases() uint64 { return s.leased.Load() }

// key returns the store's name for a key of kind under the prefix.
func (s *Store) key(kind string, parts ...string) string {
	n := len(s.prefix) + len(kind)
	for _, p := range parts {
		n += 1 + len(p)
	}
	b := make([]byte, 0, n)
	b = append(b, s.prefix...)
	b = append(b, kind...)
	for i, p := range parts {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, p...)
	}
	return string(b)
}

// setDown records a failed call: the first after a success is logged
// and counted.
func (s *Store) setDown(err error) {
	if s.up.Swap(false) {
		s.failures.Add(1)
		s.purge.missed.Store(true)
		s.log.Warn("cluster store unreachable: rate limits with scope cluster apply their on_store_failure (local: rate/"+strconv.Itoa(s.Instances())+" on this instance) until it answers again",
			"address", s.rdb.Options().Addr, "error", err.Error())
	}
}

// setUp records a successful call: the first after a failure is logged.
func (s *Store) setUp() {
	if !s.up.Swap(true) {
		s.log.Info("cluster store reachable again: rate limits with scope cluster are shared again; the static cache is purged, as purges published meanwhile were missed", "address", s.rdb.Options().Addr)
		s.purgeMissed()
	}
}

// clientLog sets the client library's logger once: it is global to the
// process.
var clientLog sync.Once

// debugLogger routes the client library's own messages (a failed dial
// each time the pool retries) to the log at debug level: gale logs the
// store's transitions itself, once each.
type debugLogger struct{ log *slog.Logger }

func (d debugLogger) Printf(c context.Context, format string, v ...any) {
	if d.log.Enabled(c, slog.LevelDebug) {
		d.log.Debug("redis client: " + fmt.Sprintf(format, v...))
	}
}

// ctx returns a context bounded by callTimeout.
func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}
