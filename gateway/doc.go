// Package gateway is gale's FastCGI responder: the fastcgi route kind
// and the script side of the php preset. It turns a request into the
// CGI/1.1 environment (RFC 3875, as nginx's fastcgi_params and Caddy set
// it; env.go), sends it with the request body to a FastCGI application
// (PHP-FPM) over a connection of the client's event loop, and relays the
// CGI response through the exchange's response sink.
//
// # Shape
//
// A Handler serves one route. Its Serve runs on the client's loop: it
// renders FCGI_BEGIN_REQUEST (with FCGI_KEEP_CONN) and the FCGI_PARAMS
// stream at once, takes an idle connection of the chosen server from the
// loop's pool or dials a new one (in a goroutine, with the route's
// connect timeout, enrolled into the loop with gnet.EventLoop.Enroll and
// a *Conn as its gnet context), and answers later
// (handlers.Response.Pending). PHP-FPM serves one request per connection
// at a time (FCGI_MPXS_CONNS=0), so every request has a connection of
// its own, with request id 1, and goes back to the pool after its
// FCGI_END_REQUEST. Nothing of a loop's state is shared with another
// loop; the servers' passive health is the only shared state (atomics).
//
// # Bodies
//
// A request body with a Content-Length is streamed as FCGI_STDIN records
// as the client's engine de-frames it (handlers.BodySource). A chunked
// request body is answered 411 Length Required: CGI needs CONTENT_LENGTH
// before the body, and buffering a body of unknown length would hold up
// to limits.body_bytes per request in memory.
//
// The response's CGI head is parsed (Status, Location, fields; package
// fastcgi), then FCGI_STDOUT is relayed as it arrives. A response whose
// FCGI_END_REQUEST arrives with its head in one read goes with a
// Content-Length; any other is streamed (chunked for HTTP/1.1). A
// Location that is an absolute URI without Status is a 302 (a client
// redirect, RFC 3875 section 6.2.3), and so is a local one (a path),
// which CGI's local redirect would serve internally. FCGI_STDERR is logged
// with the request (at warn level, bounded per request).
//
// # Back-pressure
//
// gnet reads every readable socket, so a fast script and a slow client
// would pile the response up in memory. While the client's sink has no
// room, the exchange stops relaying and leaves the records in the
// connection's inbound buffer; past MaxHeld bytes there, the connection
// leaves gnet (its descriptor duplicated, the gnet connection closed)
// and a goroutine reads it one bounded piece at a time, each piece
// handed to the loop and relayed once the client has room, so that the
// socket's receive window holds the application back (offloop.go).
// Holding waits for the client: timeouts.write bounds it, from the last
// relay that made progress, after which the response is cut and the
// connection closed, so that a client never resumed cannot pin a worker.
//
// # Failures
//
// A refused connect tries another server (up to retries); a connect or
// response timeout answers 504, a reset, a malformed record or CGI head,
// or a connection closed before FCGI_END_REQUEST answers 502 while
// nothing was sent, and truncates the response (the client connection
// closes) after. Each failure counts against the server's passive
// health.
package gateway
