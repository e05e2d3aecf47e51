package matrix

import (
	"fmt"
	"math/rand/v2"
	"os"
)

// proto is a client protocol of the matrix.
type proto int

const (
	h1Plain proto = iota // HTTP/1.1 over a raw TCP socket
	h1TLS                // HTTP/1.1 over a raw TLS socket (ALPN http/1.1)
	h2TLS                // HTTP/2 over TLS (net/http)
	h2c                  // HTTP/2 over cleartext, prior knowledge (net/http)
	h3                   // HTTP/3 (quic-go)
)

var protos = []proto{h1Plain, h1TLS, h2TLS, h2c, h3}

func (p proto) String() string {
	return [...]string{"h1", "h1-tls", "h2-tls", "h2c", "h3"}[p]
}

// raw reports whether the test frames the protocol's bytes itself.
func (p proto) raw() bool { return p == h1Plain || p == h1TLS }

// arrival is how the client hands a request's bytes to the socket.
type arrival int

const (
	whole    arrival = iota // one write (HTTP/2, HTTP/3: the body in one read)
	headBody                // the head, then the body (HTTP/1.1)
	trickle                 // random pieces (HTTP/2, HTTP/3: the body read in random pieces)
)

func (a arrival) String() string { return [...]string{"whole", "head+body", "trickle"}[a] }

// route is a route of the site and what its answers look like.
type route struct {
	name   string   // e.g. "auth/fcgi"
	base   string   // up1, up2, up3 (https), up4 (h2 over TLS), fcgi, php, static, respond, redirect
	prefix string   // the route's path
	reads  bool     // the handler reads request bodies (the application gets them)
	fcgi   bool     // a FastCGI route kind: bodies of unknown length are 411
	auth   bool     // behind basic_auth
	frames []string // the response framings the application offers
}

var (
	bodySizes = []int{-1, 0, 1, 16<<10 - 1, 64 << 10, 1 << 20, 8 << 20} // -1: no body at all
	respSizes = []int{0, 100, 64 << 10, 8 << 20}
)

const respondBody = "respond\n"

// routes lists every route of the site (config in fixture_test.go).
func routes() []*route {
	out := []*route{
		{name: "static", base: "static", prefix: "/static/", frames: []string{"file"}},
		{name: "respond", base: "respond", prefix: "/respond", frames: []string{"fixed"}},
		{name: "redirect", base: "redirect", prefix: "/redirect/", frames: []string{"fixed"}},
	}
	for _, w := range wrappers {
		out = append(out,
			&route{name: w + "/up1", base: "up1", prefix: "/" + w + "/up1/", reads: true, auth: w == "auth", frames: []string{"cl", "chunked", "close"}},
			&route{name: w + "/up2", base: "up2", prefix: "/" + w + "/up2/", reads: true, auth: w == "auth", frames: []string{"cl", "chunked"}},
			&route{name: w + "/up3", base: "up3", prefix: "/" + w + "/up3/", reads: true, auth: w == "auth", frames: []string{"cl", "chunked", "close"}},
			&route{name: w + "/up4", base: "up4", prefix: "/" + w + "/up4/", reads: true, auth: w == "auth", frames: []string{"cl", "chunked"}},
			&route{name: w + "/fcgi", base: "fcgi", prefix: "/" + w + "/fcgi/", reads: true, fcgi: true, auth: w == "auth", frames: []string{"cl", "stream"}},
			&route{name: w + "/php", base: "php", prefix: "/" + w + "/php/", reads: true, fcgi: true, auth: w == "auth", frames: []string{"cl", "stream"}},
		)
	}
	return out
}

// cell is one request of the matrix and the response it asks for.
type cell struct {
	proto   proto
	route   *route
	body    int  // request body bytes; -1 = none (a GET without framing)
	unknown bool // the body's length is not declared: chunked (HTTP/1.1), no content-length (HTTP/2, HTTP/3)
	expect  bool // Expect: 100-continue (HTTP/1.1)
	arrival arrival
	respN   int    // response body bytes asked for (static: the file's size)
	respF   string // response framing asked for
	seed    uint64 // the body's bytes and the arrival's splits
	noAuth  bool   // no credentials for a basic_auth route: 401
}

func (c *cell) String() string {
	fr := "cl"
	if c.unknown {
		fr = map[bool]string{true: "chunked", false: "no-cl"}[c.proto.raw()]
	}
	if c.body < 0 {
		fr = "none"
	}
	name := c.route.name
	if c.noAuth {
		name += "(no credentials)"
	}
	return fmt.Sprintf("%s %s body=%d/%s expect=%v %s resp=%d/%s seed=%d", c.proto, name, c.body, fr, c.expect, c.arrival, c.respN, c.respF, c.seed)
}

// method is the request's method: GET for static routes and for requests
// without a body, POST otherwise.
func (c *cell) method() string {
	if c.body < 0 || c.route.base == "static" {
		return "GET"
	}
	return "POST"
}

// target is the request target.
func (c *cell) target() string {
	q := fmt.Sprintf("?n=%d&f=%s", c.respN, c.respF)
	switch c.route.base {
	case "static":
		return fmt.Sprintf("/static/f%d", c.respN)
	case "respond":
		return "/respond"
	case "redirect":
		return "/redirect/a/b?c=d"
	case "fcgi", "php":
		return c.route.prefix + "echo.php" + q
	}
	return c.route.prefix + "echo" + q
}

// want is what a cell's response must be.
type want struct {
	status   int
	got      string // X-Got: what the application read; "" = not checked
	body     []byte // the response body; nil = not checked
	location string // "" = not checked
	keep     bool   // the connection must stay open (HTTP/1.1)
	alt      *want  // another acceptable answer, or nil
}

// want returns what the response to c, whose body is body, must be.
// Over HTTP/1.1 the connection must stay open after a route that reads
// no body (it drains the body; but with Expect: 100-continue, where the
// answer comes before the body, it says it closes) and after a body read
// whole, unless the application delimited its response by closing.
func (c *cell) want(body []byte) want {
	keep := c.proto.raw() && !c.expect
	switch c.route.base {
	case "static":
		return want{status: 200, body: pattern(c.respN), keep: keep}
	case "respond":
		return want{status: 200, body: []byte(respondBody), keep: keep}
	case "redirect":
		return want{status: 308, location: "/elsewhere/a/b?c=d", keep: keep}
	}
	if c.noAuth {
		return want{status: 401, keep: keep} // refused before the body, which is drained
	}
	if body == nil {
		body = []byte{}
	}
	// A response the application ends by closing its connection ends the
	// client's too (package proxy).
	ok := want{status: 200, got: digest(body), body: pattern(c.respN), keep: c.proto.raw() && c.respF != "close"}
	if !c.route.fcgi || !c.unknown || c.body < 0 {
		return ok
	}
	// gateway/doc.go: CGI needs CONTENT_LENGTH before the body, so a body
	// of unknown length is 411. HTTP/3 tells only with the stream's end
	// whether a body follows, and app/h3 reads one buffer (h3PeekBytes)
	// before deciding (forward.go, peek): a stream that ends with its head
	// has no body, and a body that ended within that read has its length,
	// which happens when its last DATA frame and the stream's end arrive
	// together.
	refused := want{status: 411}
	switch {
	case c.proto != h3 || c.body > h3PeekBytes:
		return refused
	case c.body == 0:
		return ok
	}
	refused.alt = &ok
	return refused
}

// h3PeekBytes is the buffer app/h3 reads a body of undeclared length
// into before it decides whether the length is known.
const h3PeekBytes = 32 << 10

// full reports whether GALE_MATRIX=full asks for the whole product.
func full() bool { return os.Getenv("GALE_MATRIX") == "full" }

// arrivals are the arrival patterns of p.
func arrivals(p proto) []arrival {
	if p.raw() {
		return []arrival{whole, headBody, trickle}
	}
	return []arrival{whole, trickle}
}

// product returns every request shape of p on r: body size x framing x
// expectation x arrival, each with a response shape drawn by rng, then
// every response shape of r with a small request drawn by rng, and on a
// basic_auth route every body size without credentials.
func product(p proto, r *route, rng *rand.Rand) []cell {
	var out []cell
	shape := func() (int, string) {
		return respSizes[rng.IntN(len(respSizes))], r.frames[rng.IntN(len(r.frames))]
	}
	for _, body := range bodySizes {
		for _, unknown := range []bool{false, true} {
			if body < 0 && unknown {
				continue
			}
			for _, expect := range []bool{false, true} {
				if expect && (!p.raw() || body < 0) {
					continue
				}
				for _, a := range arrivals(p) {
					n, f := shape()
					out = append(out, cell{proto: p, route: r, body: body, unknown: unknown && body >= 0, expect: expect, arrival: a, respN: n, respF: f, seed: rng.Uint64()})
				}
			}
		}
	}
	for _, n := range respSizes {
		for _, f := range r.frames {
			out = append(out, smallCell(p, r, bodySizes[rng.IntN(4)], n, f, rng))
		}
	}
	if r.auth {
		for _, body := range bodySizes {
			c := smallCell(p, r, body, 100, r.frames[0], rng)
			c.noAuth = true
			out = append(out, c)
		}
	}
	return out
}

// smallCell returns a cell of p on r with a body of body bytes and the
// response shape n, f, its other dimensions drawn by rng.
func smallCell(p proto, r *route, body, n int, f string, rng *rand.Rand) cell {
	c := cell{proto: p, route: r, body: body, respN: n, respF: f, seed: rng.Uint64()}
	if c.body >= 0 {
		c.unknown = rng.IntN(2) == 0
		c.expect = p.raw() && rng.IntN(2) == 0
	}
	as := arrivals(p)
	c.arrival = as[rng.IntN(len(as))]
	return c
}

// large reports whether c moves a megabyte or more either way.
func (c *cell) large() bool { return c.body >= 1<<20 || c.respN >= 1<<20 }

// cellsFor returns the cells of protocol p (index pi among protos), in
// the order they run: the whole product with GALE_MATRIX=full, else a
// fixed sample: a few small cells of every route, and nine large ones:
// an 8 MiB body and two 1 MiB bodies on a rotation of the route kinds,
// an 8 MiB response from every route kind that has one, and an 8 MiB
// file asked for with an 8 MiB body.
func cellsFor(p proto, pi int, rng *rand.Rand) []cell {
	var all []cell
	for _, r := range routes() {
		all = append(all, product(p, r, rng)...)
	}
	if !full() {
		all = sample(all, pi, rng)
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all
}

// sample picks the default run's cells out of all (one protocol's).
func sample(all []cell, pi int, rng *rand.Rand) []cell {
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	bases := []string{"up1", "up2", "up3", "up4", "fcgi", "php"}
	nb := len(bases)
	slots := []func(c *cell) bool{
		func(c *cell) bool { return c.body == 8<<20 && c.route.base == bases[pi%nb] && c.respN < 1<<20 },
		func(c *cell) bool { return c.body == 1<<20 && c.route.base == bases[(pi+1)%nb] && c.respN < 1<<20 },
		func(c *cell) bool { return c.body == 1<<20 && c.route.base == bases[(pi+2)%nb] && c.respN < 1<<20 },
		// A static file sent while a large body it discards arrives.
		func(c *cell) bool { return c.respN == 8<<20 && c.route.base == "static" && c.body == 8<<20 },
	}
	for _, base := range append(bases, "static") {
		slots = append(slots, func(c *cell) bool { return c.respN == 8<<20 && c.route.base == base && c.body < 1<<20 })
	}
	perRoute := map[string]int{}
	var out []cell
	for i := range all {
		c := &all[i]
		if c.large() {
			for k, slot := range slots {
				if slot != nil && slot(c) {
					out = append(out, *c)
					slots[k] = nil
					break
				}
			}
			continue
		}
		quota := 5
		if c.route.reads {
			quota = 10
		}
		if perRoute[c.route.name] < quota {
			perRoute[c.route.name]++
			out = append(out, *c)
		}
	}
	return out
}
