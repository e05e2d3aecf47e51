// Package upstream is the connection core every upstream kind shares:
// connections gale opens itself to an application (an HTTP/1.1 or h2c
// upstream, a FastCGI server), kept per event loop in pools, dialed off
// the loop with a timeout and enrolled into it, bounded by max_conns with
// a first-come-first-served queue, and reaped when idle. What a kind sends
// and how it reads the answer (its codec) lives in the kind's package; a
// kind's exchange uses a Conn through the User interface and waits for one
// through Waiter.
//
// # Shape
//
// A Loop is the core's state on one event loop: its pools, keyed by the
// network and address they dial, and how it dials. Pools belong to the
// address, not to the route that named it: two routes naming one PHP-FPM
// share its connections (and so its workers), and a route replaced by a
// reload hands its connections to its successor instead of holding them.
// Everything in a Loop is touched on its event loop only; the counters a
// Conn updates are atomics, readable anywhere.
//
// A Conn is one connection and its gnet context (set with
// gnet.NewContext before OnOpen, so the server's event handler tells it
// from an accepted client by its type). While a User is attached, every
// event of the connection goes to it; an idle connection that receives
// bytes was told nothing to answer, and is closed.
//
// # TLS
//
// A pool whose Limits carry a tls.Config dials TLS connections: the
// handshake runs in the dial goroutine, over the socket, before Enroll;
// the session then joins the loop with it, and its records are read from
// and written to gnet's buffers on the loop (tls.go, with the listener
// side's record framing, internal/tlsrec). A kind reads and writes a
// connection through Conn's Inbound, Consume and Write whatever it
// speaks over, and DupConn carries the session off the loop. Key.TLS
// names the settings, so plain and TLS connections never share a pool.
//
// # Around the connections
//
// What every kind does around its connections lives here too: choosing a
// server by the route's policy among those in service (Policy.Choose,
// Candidates; the hashing policies by Rendezvous over the servers'
// addresses, so that every process agrees) with passive health (Health); the loop's exchanges in
// flight, for its sweep, and those kept for reuse (Exchanges, Slot); and
// the rule for callbacks that land while an exchange is busy (Deferred).
//
// # Descriptors
//
// A dial takes two descriptors from the server's budget: the connection's
// own, and the duplicate gnet's Enroll holds while it registers it. The
// second is given back once Enroll closed the dialed one; the first when
// the connection closes (or the dial failed).
package upstream
