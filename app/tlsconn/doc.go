// Package tlsconn is gale's TLS transport: the crypto/tls session of a
// client connection as a wire.Layer under the protocol engines, with no
// goroutine per connection once the handshake is done (conn.go); the
// duplicate of the socket handed to goroutines off the loop (dup.go); and
// per listener, the certificates, their reload, and the admission of
// handshakes (listener.go, hello.go, gate.go).
package tlsconn
