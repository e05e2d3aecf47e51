package cluster

import (
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// beatEvery is the heartbeat's period: how soon an unreachable store is
// noticed when nothing else calls it, and how soon it is found back.
const beatEvery = time.Second

// instanceTTL is how long an instance counts as present after its last
// heartbeat.
const instanceTTL = 15 * time.Second

// heartbeat beats until Close.
func (s *Store) heartbeat() {
	defer s.wg.Done()
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.beat()
		}
	}
}

// beat records this instance in the store's set of instances (scored by
// the time of its heartbeat), forgets those silent for instanceTTL, and
// learns how many remain.
func (s *Store) beat() {
	c, cancel := ctx()
	defer cancel()
	now := time.Now()
	set := s.key("instances")
	var card *redis.IntCmd
	_, err := s.rdb.TxPipelined(c, func(p redis.Pipeliner) error {
		p.ZAdd(c, set, redis.Z{Score: float64(now.UnixMilli()), Member: s.instance})
		p.ZRemRangeByScore(c, set, "-inf", strconv.FormatInt(now.Add(-instanceTTL).UnixMilli(), 10))
		card = p.ZCard(c, set)
		p.PExpire(c, set, 2*instanceTTL)
		return nil
	})
	if err != nil {
		s.setDown(err)
		return
	}
	s.setUp()
	if s.fixedN == 0 {
		s.instances.Store(int32(max(1, card.Val())))
	}
}

// leave takes this instance out of the set of instances.
func (s *Store) leave() {
	c, cancel := ctx()
	defer cancel()
	_ = s.rdb.ZRem(c, s.key("instances"), s.instance).Err()
}
