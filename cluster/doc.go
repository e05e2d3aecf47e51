// Package cluster is what several gale instances share through one Redis
// (or Valkey) server: the GCRA state of rate limits with scope cluster
// (leases, ratelimit.go), automatic certificates and their locks
// (certmagic storage, certstorage.go), and purge notices (pub/sub,
// purge.go). The client is github.com/redis/go-redis/v9.
//
// Every shared feature has a stated behaviour while the server cannot be
// reached (Store.Up false): it is logged once per transition, counted,
// and the store recovers by itself (heartbeat.go).
package cluster
