package handlers

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"gale/config"
)

// BenchmarkServeAccess serves one respond route bare, with access rules,
// with a rate limit that never refuses, with both, and with matchers and a
// path_regex, so that what each costs per request reads off the lines.
// The parallel variant runs the rate limit from every P, as the event
// loops do.
func BenchmarkServeAccess(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "gale.yaml")
	os.WriteFile(file, []byte(`listen: ["127.0.0.1:0"]
routes:
  - path: /bare
    respond: {body: ok}
  - path: /access
    access: [{deny: 10.0.0.0/8}, {allow: 127.0.0.0/8}]
    respond: {body: ok}
  - path: /limit
    rate_limit: {rate: 1000000/s, burst: 1000000}
    respond: {body: ok}
  - path: /both
    access: [{deny: 10.0.0.0/8}, {allow: 127.0.0.0/8}]
    rate_limit: {rate: 1000000/s, burst: 1000000}
    respond: {body: ok}
  - path: /matched
    match: {methods: [GET], headers: {Accept: "*"}, remote: [127.0.0.0/8]}
    respond: {body: ok}
  - path: /re/
    match: {path_regex: '/re/[a-z]+/[0-9]+'}
    respond: {body: ok}
`), 0o644)
	cfg, err := config.Load(file)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := Build(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	for _, target := range []string{"/bare", "/access", "/limit", "/both", "/matched", "/re/abc/42"} {
		b.Run(target[1:], func(b *testing.B) {
			c := newCtx(request("GET", "example.com", target, "Accept", "*/*", "User-Agent", "bench"))
			c.Remote = netip.MustParseAddrPort("127.0.0.2:40000")
			b.ReportAllocs()
			for b.Loop() {
				c.Scratch = c.Scratch[:0]
				rt.Serve(c)
			}
			if c.Resp.Status != 200 {
				b.Fatal(c.Resp.Status)
			}
		})
	}
	b.Run("limit-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			c := newCtx(request("GET", "example.com", "/limit", "Accept", "*/*"))
			c.Remote = netip.MustParseAddrPort("127.0.0.2:40000")
			for pb.Next() {
				c.Scratch = c.Scratch[:0]
				rt.Serve(c)
			}
		})
	})
}

// BenchmarkBasicAuthRemembered is the cost basic_auth and a rate limit
// add to routing a request whose credentials verified before: the
// route's admission with both, against the same route without them.
func BenchmarkBasicAuthRemembered(b *testing.B) {
	rt := yamlRouter(b, b.TempDir(), `
  - path: /plain/
    respond: {body: ok}
  - path: /auth/
    rate_limit: {rate: 1000000/s, burst: 1000000}
    basic_auth: {users: {alice: "$2a$04$FxxBKMKXSGAv6nRhKjp.eemloTS3TBOIvSnAeNuJOPZhOM8Xb0wiu"}}
    respond: {body: ok}
`)
	for _, path := range []string{"/plain/x", "/auth/x"} {
		b.Run(path, func(b *testing.B) {
			req := request("GET", "example.com", path, "Authorization", "Basic YWxpY2U6c2VjcmV0")
			c := newCtx(req)
			c.Remote = netip.MustParseAddrPort("127.0.0.2:1")
			rt.Serve(c) // verifies once (no engine: here), then remembered
			b.ReportAllocs()
			for b.Loop() {
				c.Scratch = c.Scratch[:0]
				rt.Serve(c)
			}
			if c.Resp.Status != 200 {
				b.Fatalf("status %d", c.Resp.Status)
			}
		})
	}
}

// BenchmarkVerifyUnknownUser times a wrong password for a known user
// against any password for an unknown one: the same bcrypt work, so that
// a 401's timing does not tell which user names exist.
func BenchmarkVerifyUnknownUser(b *testing.B) {
	a, err := newBasicAuth(&config.BasicAuth{Realm: "gale", Users: map[string]string{
		"alice": "$2a$10$kwGDYw.N4QttJECnEVPiteSum9si3c92uSiNkJvFGrvHm4tklnuJK"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, who := range []string{"alice", "mallory"} {
		b.Run(who, func(b *testing.B) {
			for b.Loop() {
				hash, known := a.users[who]
				if !known {
					hash = a.dummy
				}
				w := &authVerify{a: a, known: known, hash: hash, pass: []byte("wrong")}
				w.verify()
				if w.ok {
					b.Fatal("verified")
				}
			}
		})
	}
}
