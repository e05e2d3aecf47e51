// Package h1 is gale's HTTP/1.1 connection engine: it parses the requests
// a connection's transport (wire.Conn) delivers with package codec,
// answers them through the router and handlers, and renders and writes
// the responses, pipelined in order (conn.go). A handler that answers
// later leaves its exchange pending until its continuation resumes on the
// same loop (pending.go): a load of the file cache (static.go) or the
// reverse proxy, which speaks to the client through the response sink and
// request body (sink.go, body.go) and the connection's handlers.Exchange
// (exchange.go): besides what every engine offers, the optional
// capabilities only HTTP/1.1 has, handlers.Upgrader (the 101 and the raw
// bytes of a tunnel) and handlers.Duplicator (the socket for off-loop
// copies). This package does not name the proxy. Bodies too large for the loop's buffers leave it on a
// duplicate of the socket (transfer.go, transfer_tls.go).
//
// The server (package app) drives an engine through wire.Engine; all of
// it runs on the connection's event loop unless a comment says otherwise.
package h1
