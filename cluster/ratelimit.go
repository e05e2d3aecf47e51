package cluster

import (
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"gale/handlers"
)

// gcraLease is GCRA in the store, for a lease of several requests at once
// (one script call, atomic in Redis). KEYS[1] holds the key's theoretical
// arrival time (TAT) in microseconds of the store's clock (TIME, so that
// the instances' clocks never matter). ARGV: interval and tau in
// microseconds, and the requests wanted. It grants as many as fit, moves
// the TAT by that many intervals, and returns {granted, microseconds
// until one more would fit}.
var gcraLease = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tau = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local room = math.floor((now + tau - tat) / interval) + 1
if room < 0 then room = 0 end
local granted = math.min(want, room)
if granted > 0 then
  tat = tat + granted * interval
  redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
end
local wait = 0
if granted < want then
  wait = tat - tau - now
  if wait < 0 then wait = 0 end
end
return {granted, wait}
`)

// errDown answers lease requests while the store is unreachable.
var errDown = errors.New("cluster store unreachable")

// Lease implements handlers.LimitStore: it queues req for the lease
// worker, false when the queue is full.
func (s *Store) Lease(req handlers.LeaseRequest) bool {
	select {
	case s.leases <- req:
		return true
	default:
		return false
	}
}

// leaseLoop answers lease requests, one script call each, until Close.
func (s *Store) leaseLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			return
		case req := <-s.leases:
			s.serveLease(&req)
		}
	}
}

// serveLease asks the store for req and reports the answer to its sink.
func (s *Store) serveLease(req *handlers.LeaseRequest) {
	if !s.Up() {
		req.Sink.Leased(req, 0, 0, errDown)
		return
	}
	c, cancel := ctx()
	defer cancel()
	key := s.key("rl:", req.Route, strconv.FormatUint(req.Key, 16))
	res, err := gcraLease.Run(c, s.rdb, []string{key}, max(1, req.Interval/1000), req.Tau/1000, req.Want).Int64Slice()
	if err == nil && len(res) != 2 {
		err = errors.New("unexpected answer to the rate limit script")
	}
	if err != nil {
		s.setDown(err)
		req.Sink.Leased(req, 0, 0, err)
		return
	}
	s.setUp()
	s.leased.Add(1)
	req.Sink.Leased(req, int(res[0]), time.Duration(res[1])*time.Microsecond, nil)
}
