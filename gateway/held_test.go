package gateway

import (
	"net"
	"testing"
	"time"

	"gale/codec"
	"gale/config"
	"gale/handlers"
	"gale/upstream"
)

// A client that takes nothing: its sink never has room, and nothing ever
// resumes the exchange, as for an HTTP/2 stream whose exchange another
// handler ended without a word (the proxy's sweep, ending a recycled
// stream, did so: the FastCGI exchange of the stream that took its slot
// was left holding its connection and a PHP worker until the server
// stopped, and its client saw the stream ended short).
type deafSink struct{ aborted, finished bool }

func (*deafSink) WriteInterim(int, []codec.Header) {}
func (*deafSink) WriteHead(handlers.Head)          {}
func (*deafSink) Room() int                        { return 0 }
func (*deafSink) WriteBody([]byte)                 {}
func (*deafSink) Flush()                           {}
func (s *deafSink) Finish([]codec.Header)          { s.finished = true }
func (s *deafSink) Abort()                         { s.aborted = true }

type deafClient struct {
	ended bool
	res   handlers.Result
}

func (c *deafClient) End(r handlers.Result)             { c.ended, c.res = true, r }
func (*deafClient) Wake()                               {}
func (*deafClient) Settings() handlers.ExchangeSettings { return handlers.ExchangeSettings{} }
func (*deafClient) Closing() bool                       { return false }
func (*deafClient) Local(handlers.LocalKind) any        { return nil }

// TestHeldExchangeEndsAtWriteTimeout holds a response (read off the loop,
// as a large one is) for a client that never has room and never resumes
// the exchange, and drives the route's sweep by hand: the exchange waits
// through timeouts.write, then ends cut (the client's side aborted, its
// connection to close) and lets go of the FastCGI connection.
func TestHeldExchangeEndsAtWriteTimeout(t *testing.T) {
	rt := &handlers.Route{Conf: &config.Route{Path: "/", FastCGI: &config.FastCGI{
		To:       []config.Upstream{{Network: "tcp", Address: "127.0.0.1:9", Raw: "127.0.0.1:9"}},
		MaxConns: 1,
		Timeouts: config.ProxyTimeouts{Connect: time.Second, ResponseHeader: time.Minute, Idle: time.Minute},
	}}}
	h, err := New(rt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lp := newLoop(h, upstream.NewLoop(nil, nil))
	ex := lp.getExchange()
	cl, sink := &deafClient{}, &deafSink{}
	ex.h, ex.cl, ex.sink = h, cl, sink
	ex.set.WriteTimeout = 3 * time.Second
	ex.started, ex.headDone, ex.reqDone = true, true, true // the head went out; records wait

	nc, peer := net.Pipe()
	defer peer.Close()
	released := 0
	ex.off = &offReader{nc: nc, buf: make([]byte, 0, 64), res: make(chan offRead, 1), release: func() { released++ }}
	ex.offResume() // no room: the exchange holds
	if !ex.held || cl.ended {
		t.Fatalf("held %v ended %v, want held and going on", ex.held, cl.ended)
	}

	start := ex.now
	lp.sweep(start + int64(ex.set.WriteTimeout) - int64(time.Millisecond))
	if cl.ended || !ex.Listed() {
		t.Fatal("the exchange ended before timeouts.write")
	}
	lp.sweep(start + int64(ex.set.WriteTimeout) + int64(time.Millisecond))
	if !cl.ended || !sink.aborted || sink.finished || !cl.res.Close {
		t.Fatalf("after timeouts.write: ended %v aborted %v finished %v close %v; want a cut response that closes",
			cl.ended, sink.aborted, sink.finished, cl.res.Close)
	}
	if lp.exchanges.Len() != 0 || released != 1 {
		t.Fatalf("%d exchanges in flight, off-loop descriptor released %d times; want 0 and 1", lp.exchanges.Len(), released)
	}
}
