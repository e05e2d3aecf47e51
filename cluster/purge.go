package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// purgeState is the purge fan-out: purges accepted by one instance are
// published on the channel PREFIX+"purge" and applied by every other.
// Pub/sub delivers at most once: an instance that lost the store may have
// missed purges, so when the store is back it purges everything it holds
// (Store.setUp).
type purgeState struct {
	id      string // this process's id in messages, so it skips its own
	mu      sync.Mutex
	apply   func(path string) // the local purge; nil = none yet
	ps      *redis.PubSub
	missed  atomic.Bool   // the store was lost since the last full purge
	applied atomic.Uint64 // purges received and applied
}

// purgeChannel is the channel's name under the prefix.
func (s *Store) purgeChannel() string { return s.key("purge") }

// OnPurge subscribes to the purges other instances publish and applies
// each with apply: "" for everything, else a URL path ("/a.css") or a
// subtree ("/img/"). It returns once the subscription is in place (or
// the store did not answer; it keeps trying). Call it once.
func (s *Store) OnPurge(apply func(path string)) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	s.purge.id = hex.EncodeToString(b[:])
	s.purge.mu.Lock()
	s.purge.apply = apply
	s.purge.mu.Unlock()
	c, cancel := ctx()
	defer cancel()
	ps := s.rdb.Subscribe(c, s.purgeChannel())
	if _, err := ps.Receive(c); err != nil {
		s.setDown(err)
	}
	s.purge.ps = ps
	s.wg.Add(1)
	go s.purgeLoop(ps.Channel())
}

// purgeLoop applies the purges of other instances until Close.
func (s *Store) purgeLoop(msgs <-chan *redis.Message) {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			_ = s.purge.ps.Close()
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			from, path, found := strings.Cut(m.Payload, " ")
			if !found || from == s.purge.id {
				continue
			}
			s.applyPurge(path)
		}
	}
}

func (s *Store) applyPurge(path string) {
	s.purge.mu.Lock()
	apply := s.purge.apply
	s.purge.mu.Unlock()
	if apply != nil {
		apply(path)
		s.purge.applied.Add(1)
	}
}

// Purged counts purges received from other instances and applied.
func (s *Store) Purged() uint64 { return s.purge.applied.Load() }

// PublishPurge sends a purge this instance applied to the others. It
// waits for the store (at most a second); the error says the purge
// reached this instance only.
func (s *Store) PublishPurge(path string) error {
	c, cancel := ctx()
	defer cancel()
	err := s.rdb.Publish(c, s.purgeChannel(), s.purge.id+" "+path).Err()
	if err != nil {
		s.setDown(err)
	}
	return err
}

// purgeMissed purges everything once the store is back after a loss:
// purges published meanwhile did not reach this instance.
func (s *Store) purgeMissed() {
	if s.purge.missed.Swap(false) {
		go s.applyPurge("")
	}
}
