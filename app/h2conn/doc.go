// Package h2conn is gale's HTTP/2 connection engine: it drives the
// protocol core (package h2) over a connection's transport (wire.Conn),
// serves each stream as an exchange through the same router and handlers
// as HTTP/1.1 (exchange.go), produces response bodies under the stream
// and connection windows (response.go), and moves large output to a
// writer goroutine on a duplicate of the socket (writer.go), which reads
// file regions through a buffer, checked against their version. A handler
// that forwards a stream (the proxy, FastCGI) gets the stream's sink, body
// source and handlers.Exchange (sink.go, body.go, forwarded.go), and none
// of the optional capabilities only HTTP/1.1 has (handlers.Upgrader,
// handlers.Duplicator): a stream shares its connection.
//
// The server (package app) chooses HTTP/2 for a connection (ALPN h2, or
// the h2c preface, SniffPreface) and drives it through wire.Engine; all of
// it runs on the connection's event loop unless a comment says otherwise.
package h2conn
