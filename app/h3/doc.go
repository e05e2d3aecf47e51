// Package h3 is gale's HTTP/3 engine: HTTP/3 (RFC 9114) over QUIC (RFC
// 9000) with quic-go and its http3 package, answered by the same router,
// handlers and file cache as HTTP/1.1 and HTTP/2, on the gnet event loops.
//
// quic-go owns the UDP socket and runs each request on a goroutine of its
// own with a net/http handler, so it cannot share the loops the way the
// TCP engines do. The handler (handler.go) bridges the two: it copies the
// request into an exchange of its own (request.go), reads and discards a
// request body as it arrives, and hands the exchange to the loop that
// answers the QUIC connection's requests with gnet's EventLoop.Execute.
// There the exchange runs the router and the handler (exchange.go),
// waits for the file cache through the handlers.Pending contract as the
// other engines do, and signals its answer back over a channel of one.
// The goroutine then writes the response (reply.go): the fields, and the
// body from the exchange's own memory, a cached entry (pinned while it is
// sent) or the response's file, read off the loop. A forwarded request
// (forward.go) gets a sink, a body source and a handlers.Exchange, and
// none of the optional capabilities only HTTP/1.1 has.
//
// A Listener (listener.go) is one TLS listener's QUIC side: a UDP socket
// on the listener's port with the receive and send buffers quic-go asks
// for (udp.go), the listener's certificates (tlsconn.Listener.QUICConfig:
// TLS 1.3, ALPN h3, reloads included), the limits of server.http3, and a
// graceful stop that sends GOAWAY and lets the requests in flight finish.
package h3
