package upstream

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/fds"
)

// fakeGnet is the part of a gnet connection the core touches.
type fakeGnet struct {
	gnet.Conn
	in int
}

func (f *fakeGnet) InboundBuffered() int { return f.in }

// user records the events of a connection it uses, and waits as a
// Waiter.
type user struct {
	conn      *Conn
	connected int
	lost      int
	failed    int
	dequeued  int
	room      int // Dequeued with room to dial
}

func (u *user) Connected(*Conn)      { u.connected++ }
func (u *user) Traffic() gnet.Action { return gnet.None }
func (u *user) Lost(error)           { u.lost++ }
func (u *user) DialFailed(error)     { u.failed++ }
func (u *user) Dequeued(c *Conn) {
	u.dequeued++
	if c == nil {
		u.room++
		return
	}
	u.conn = c
	c.Attach(u)
}

// testLoop is a loop whose dials are recorded, not made.
func testLoop() (*Loop, *[]*Conn) {
	return testLoopIn(nil)
}

// testLoopIn is testLoop as one of the loops of g.
func testLoopIn(g *Group) (*Loop, *[]*Conn) {
	lp := NewLoop(nil, g)
	var dialed []*Conn
	lp.SetDial(func(c *Conn) { dialed = append(dialed, c) })
	return lp, &dialed
}

// TestPoolSharedByAddress: one pool per address on a loop, whoever asks.
func TestPoolSharedByAddress(t *testing.T) {
	lp, _ := testLoop()
	a := lp.Pool(Key{Proto: "fastcgi", Network: "unix", Address: "/run/php.sock"})
	if b := lp.Pool(Key{Proto: "fastcgi", Network: "unix", Address: "/run/php.sock"}); b != a {
		t.Fatal("two pools for one address")
	}
	plain := lp.Pool(Key{Proto: "http/1.1", Network: "tcp", Address: "127.0.0.1:443"})
	if lp.Pool(Key{Proto: "http/1.1", Network: "tcp", Address: "127.0.0.1:443", TLS: "a1"}) == plain ||
		lp.Pool(Key{Proto: "http/1.1", Network: "tcp", Address: "127.0.0.1:443", TLS: "b2"}) == lp.Pool(Key{Proto: "http/1.1", Network: "tcp", Address: "127.0.0.1:443", TLS: "a1"}) {
		t.Fatal("plain and TLS connections, or TLS ones with other settings, share a pool")
	}
	if c := lp.Pool(Key{Proto: "fastcgi", Network: "tcp", Address: "127.0.0.1:9000"}); c == a {
		t.Fatal("one pool for two addresses")
	}
}

// TestPoolQueueAndReuse: under MaxConns a second user waits, and takes
// the first one's connection once it is released; counts and the
// descriptor budget follow the connection's life.
func TestPoolQueueAndReuse(t *testing.T) {
	lp, dialed := testLoop()
	budget := fds.New(100, 0)
	p := lp.Pool(Key{Proto: "fastcgi", Network: "tcp", Address: "127.0.0.1:9"})
	p.Configure(Limits{MaxIdle: 1, MaxConns: 1, IdleTimeout: time.Second, Budget: budget})
	var count Counters
	u1, u2 := &user{}, &user{}
	c, err := p.Dial(u1, &count)
	if err != nil || len(*dialed) != 1 || !p.Full() || count.Dials.Load() != 1 {
		t.Fatalf("dial: %v %d %v", c, len(*dialed), p.Full())
	}
	c.Attach(u1)
	p.Wait(u2)
	g := &fakeGnet{}
	c.OnOpen(g)
	if u1.connected != 1 || !c.Busy() || count.Open.Load() != 1 {
		t.Fatalf("open: connected %d busy %v", u1.connected, c.Busy())
	}
	c.Detach(u1)
	if !c.Release(1) || u2.conn != c || !c.Busy() || !c.Reused() {
		t.Fatalf("release: waiter got %v", u2.conn)
	}
	c.Detach(u2)
	if !c.Release(2) || p.Idle() != 1 {
		t.Fatalf("release: idle %d", p.Idle())
	}
	if got := p.Take(); got != c || p.Idle() != 0 {
		t.Fatal("take")
	}
	if c.Release(3); p.Idle() != 1 {
		t.Fatal("second release")
	}
	// Past the idle timeout the sweep closes it (gnet's Close needs a
	// loop; without one the state is what tells).
	lp.Sweep(3 + int64(2*time.Second))
	if p.Idle() != 0 || !c.Closed() {
		t.Fatalf("reap: idle %d closed %v", p.Idle(), c.Closed())
	}
	c.OnClose(g, nil)
	if p.Conns() != 0 || count.Open.Load() != 0 {
		t.Fatalf("close: conns %d open %d", p.Conns(), count.Open.Load())
	}
	if s := budget.Snapshot(); s.Used != 0 {
		t.Fatalf("budget used %d after the connection closed", s.Used)
	}
}

// TestPoolDialFailedServesWaiter: a failed dial frees its place; the
// next waiter is told to dial, and the failure goes to the dialing user.
func TestPoolDialFailedServesWaiter(t *testing.T) {
	lp, _ := testLoop()
	p := lp.Pool(Key{Proto: "fastcgi", Network: "tcp", Address: "127.0.0.1:9"})
	p.Configure(Limits{MaxIdle: 1, MaxConns: 1})
	var count Counters
	u1, u2 := &user{}, &user{}
	c, _ := p.Dial(u1, &count)
	p.Wait(u2)
	c.DialFailed(errors.New("refused"))
	if u1.failed != 1 || u2.room != 1 || p.Conns() != 0 || count.DialFails.Load() != 1 {
		t.Fatalf("failed %d room %d conns %d", u1.failed, u2.room, p.Conns())
	}
}

// TestPoolRetiredKeepsNothing: once the user that configured the pool
// retired, a released connection closes and idle ones are reaped.
func TestPoolRetiredKeepsNothing(t *testing.T) {
	lp, _ := testLoop()
	p := lp.Pool(Key{Proto: "fastcgi", Network: "tcp", Address: "127.0.0.1:9"})
	var retired atomic.Bool
	p.Configure(Limits{MaxIdle: 4, MaxConns: 4, IdleTimeout: time.Hour, Retired: &retired})
	var count Counters
	a, _ := p.Dial(&user{}, &count)
	b, _ := p.Dial(&user{}, &count)
	a.OnOpen(&fakeGnet{})
	gb := &fakeGnet{}
	b.OnOpen(gb)
	b.OnTraffic(gb) // b's answer began
	if !a.Release(1) || p.Idle() != 1 {
		t.Fatal("release before retiring")
	}
	retired.Store(true)
	if b.Release(2) || !b.Closed() {
		t.Fatal("a retired pool kept a connection")
	}
	lp.Sweep(3)
	if p.Idle() != 0 || !a.Closed() {
		t.Fatal("a retired pool's idle connection was not reaped")
	}
}

// TestIdleTrafficCloses: bytes on an idle connection answer nothing that
// was asked: it leaves the pool and closes.
func TestIdleTrafficCloses(t *testing.T) {
	lp, _ := testLoop()
	p := lp.Pool(Key{Proto: "fastcgi", Network: "tcp", Address: "127.0.0.1:9"})
	p.Configure(Limits{MaxIdle: 1, MaxConns: 1, IdleTimeout: time.Hour})
	var count Counters
	c, _ := p.Dial(&user{}, &count)
	g := &fakeGnet{}
	c.OnOpen(g)
	c.Release(1)
	g.in = 5
	if act := c.OnTraffic(g); act != gnet.Close || p.Idle() != 0 {
		t.Fatalf("action %v idle %d", act, p.Idle())
	}
}

// TestGroupBoundsOverLoops: max_conns over every loop. With the one place
// held idle by loop A, loop B's request waits; B asks A to shed its idle
// connection, and the place it frees wakes B, which dials.
func TestGroupBoundsOverLoops(t *testing.T) {
	var g Group
	la, _ := testLoopIn(&g)
	lb, dialedB := testLoopIn(&g)
	k := Key{Proto: "fastcgi", Network: "unix", Address: "/run/php.sock"}
	lim := Limits{MaxIdle: 1, MaxTotal: 1, IdleTimeout: time.Hour}
	pa, pb := la.Pool(k), lb.Pool(k)
	pa.Configure(lim)
	pb.Configure(lim)
	var count Counters
	c, err := pa.Dial(&user{}, &count)
	if err != nil {
		t.Fatal(err)
	}
	ga := &fakeGnet{}
	c.OnOpen(ga)
	c.Release(1) // idle on loop A, holding the address's one place
	if !pb.Full() {
		t.Fatal("loop B may dial past max_conns over the loops")
	}
	if _, err := pb.Dial(&user{}, &count); err != ErrFull {
		t.Fatalf("dial on B: %v, want ErrFull", err)
	}
	w := &user{}
	pb.Wait(w) // asks A to shed; without loops the request runs at once
	if !c.Closed() || pa.Idle() != 0 {
		t.Fatal("loop A kept its idle connection while B waited")
	}
	c.OnClose(ga, nil) // frees the place: B is woken
	if w.room != 1 || pb.starved.Load() {
		t.Fatalf("B woken %d times with room, starved %v", w.room, pb.starved.Load())
	}
	if _, err := pb.Dial(w, &count); err != nil || len(*dialedB) != 1 {
		t.Fatalf("dial on B after the place freed: %v", err)
	}
}

// TestPoolClosesWhileNewConnUnheard: while a new connection waits for its
// first answer (perhaps in an application's backlog, behind the workers
// that kept connections hold), a freed connection closes instead of
// going idle; once the new one is answered, freed ones are kept again.
func TestPoolClosesWhileNewConnUnheard(t *testing.T) {
	lp, _ := testLoop()
	p := lp.Pool(Key{Proto: "fastcgi", Network: "unix", Address: "/run/php.sock"})
	p.Configure(Limits{MaxIdle: 4, MaxConns: 4, IdleTimeout: time.Hour, WorkerPerConn: true})
	var count Counters
	old, _ := p.Dial(&user{}, &count)
	old.OnOpen(&fakeGnet{})
	old.Release(1) // answered: idle
	if p.Take() != old {
		t.Fatal("take")
	}
	fresh, _ := p.Dial(&user{}, &count)
	gf := &fakeGnet{}
	fresh.OnOpen(gf)
	if old.Release(2) || p.Idle() != 0 {
		t.Fatal("a freed connection was kept while a new one waited for its first answer")
	}
	fresh.OnTraffic(gf)
	if !fresh.Release(3) || p.Idle() != 1 {
		t.Fatal("a freed connection was closed once every new one was answered")
	}
}
