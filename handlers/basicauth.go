package handlers

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/bcrypt"

	"gale/cache"
	"gale/codec"
	"gale/config"
)

// errVerified is what an exchange waiting for a verification is woken
// with, through its file-cache wake (it names no entry).
var errVerified = errors.New("handlers: credentials verified")

// HTTP Basic authentication (RFC 7617) for a route. bcrypt costs
// milliseconds a verification, which would stall every connection of a
// loop, so a verification runs on a goroutine and the exchange waits for
// it as it waits for a file-cache load (Pending). Credentials that
// verified are remembered (a digest of the field, in a bounded set shared
// by the loops in shards), so that a client that logged in costs a hash
// and a lookup per request, without allocating. An unknown user is
// verified against a hash of the same cost as a known one, so that the
// time of a 401 does not tell which user names exist. The route's rate
// limit runs first, so it bounds the verifications a client can ask for.

// basicAuth is a route's compiled basic_auth section.
type basicAuth struct {
	challenge []byte            // the WWW-Authenticate value
	users     map[string][]byte // user -> bcrypt hash
	dummy     []byte            // what an unknown user's password is compared with
	forward   bool              // forward_authorization
	cache     authCache
	running   chan struct{} // bounds the verifications at once
}

// newBasicAuth compiles ba.
func newBasicAuth(ba *config.BasicAuth) (*basicAuth, error) {
	a := &basicAuth{
		challenge: []byte(`Basic realm="` + ba.Realm + `", charset="UTF-8"`),
		users:     make(map[string][]byte, len(ba.Users)),
		forward:   ba.Forward,
		running:   make(chan struct{}, max(2, runtime.GOMAXPROCS(0))),
	}
	cost := bcrypt.MinCost
	for u, h := range ba.Users {
		a.users[u] = []byte(h)
		if c, err := bcrypt.Cost([]byte(h)); err == nil && c > cost {
			cost = c
		}
	}
	var pw [16]byte
	_, _ = rand.Read(pw[:])
	dummy, err := bcrypt.GenerateFromPassword(pw[:], cost)
	if err != nil {
		return nil, err
	}
	a.dummy = dummy
	return a, nil
}

// authOutcome is what checking an exchange's credentials found.
type authOutcome uint8

const (
	authPass authOutcome = iota // verified now or before
	authDeny                    // missing or malformed credentials: 401 at once
	authWait                    // being verified off the loop: c.Resp.Pending is set
)

// check looks at c's credentials for route r.
func (a *basicAuth) check(r *Route, c *Ctx) authOutcome {
	token, ok := basicToken(c.Req.Header("Authorization"))
	if !ok {
		return authDeny
	}
	key := sha256.Sum256(token)
	if a.cache.has(key) {
		return authPass
	}
	mark := len(c.Scratch)
	c.Scratch = append(c.Scratch, make([]byte, base64.StdEncoding.DecodedLen(len(token)))...)
	n, err := base64.StdEncoding.Decode(c.Scratch[mark:], token)
	cred := c.Scratch[mark : mark+n]
	c.Scratch = c.Scratch[:mark]
	if err != nil {
		return authDeny
	}
	colon := bytes.IndexByte(cred, ':')
	if colon < 0 {
		return authDeny
	}
	user, pass := cred[:colon], cred[colon+1:]
	hash, known := a.users[string(user)]
	if !known {
		hash = a.dummy
	}
	w := &authVerify{a: a, r: r, key: key, known: known, hash: hash, pass: append([]byte(nil), pass...)}
	if c.Cache == nil {
		w.verify() // no engine to wake (a Ctx made by hand): verify here
		if w.ok {
			a.cache.add(key)
			return authPass
		}
		return authDeny
	}
	w.wake = c.Cache.CacheDone(token)
	c.Resp.Pending = w
	go w.run()
	return authWait
}

// basicToken returns the token of a Basic Authorization field value: the
// scheme is case-insensitive (RFC 9110 section 11.1), one or more spaces
// follow it.
func basicToken(v []byte) ([]byte, bool) {
	const scheme = "basic "
	if len(v) <= len(scheme) || !codec.EqualFold(v[:len(scheme)], scheme) {
		return nil, false
	}
	t := codec.TrimOWS(v[len(scheme):])
	return t, len(t) > 0
}

// deny answers 401 with the challenge.
func (a *basicAuth) deny(c *Ctx) {
	c.Error(401)
	c.Resp.Add(hdrWWWAuthenticate, a.challenge)
}

var hdrWWWAuthenticate = []byte("WWW-Authenticate")

// authVerify is one verification off the loop, and the exchange's
// continuation while it runs.
type authVerify struct {
	a     *basicAuth
	r     *Route
	key   [32]byte
	known bool
	hash  []byte
	pass  []byte
	wake  cache.Done
	ok    bool // written before done
	done  atomic.Bool
}

// run verifies on its own goroutine, at most cap(running) at once, and
// wakes the exchange.
func (w *authVerify) run() {
	w.a.running <- struct{}{}
	w.verify()
	<-w.a.running
	w.done.Store(true)
	w.wake(nil, errVerified)
}

// verify compares the password with the user's hash (or the dummy one).
func (w *authVerify) verify() {
	err := bcrypt.CompareHashAndPassword(w.hash, w.pass)
	w.ok = err == nil && w.known
	clear(w.pass)
}

// Resume implements Pending: once verified, the request goes on to the
// route's rewrite and handler, or is answered 401.
func (w *authVerify) Resume(c *Ctx) Progress {
	if !w.done.Load() {
		return Waiting
	}
	c.Resp.Reset()
	if !w.ok {
		w.a.deny(c)
		w.r.ApplyResponseHeaders(&c.Resp)
		return Answered
	}
	w.a.cache.add(w.key)
	w.r.serveAdmitted(c)
	return Answered
}

// Closed implements Pending: the goroutine ends by itself.
func (*authVerify) Closed() {}

// authCache remembers the credentials that verified, by a digest of the
// field's token: a set of fixed size in shards, each with its own lock,
// so that loops rarely meet on one; a full shard is emptied.
type authCache struct {
	shards [authShards]authShard
}

const (
	authShards   = 16
	authPerShard = 256
)

type authShard struct {
	mu  sync.Mutex
	set map[[32]byte]struct{}
	_   [40]byte // a cache line of its own
}

func (ac *authCache) shard(k [32]byte) *authShard { return &ac.shards[k[0]%authShards] }

// has reports whether k verified before.
func (ac *authCache) has(k [32]byte) bool {
	s := ac.shard(k)
	s.mu.Lock()
	_, ok := s.set[k]
	s.mu.Unlock()
	return ok
}

// add remembers k.
func (ac *authCache) add(k [32]byte) {
	s := ac.shard(k)
	s.mu.Lock()
	if s.set == nil || len(s.set) >= authPerShard {
		s.set = make(map[[32]byte]struct{}, authPerShard)
	}
	s.set[k] = struct{}{}
	s.mu.Unlock()
}
