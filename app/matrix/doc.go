// Package matrix holds no code of gale's: its tests prove, end to end and
// byte for byte, that every combination of client protocol, route kind,
// request body (size, framing, arrival) and response body reaches the
// application and the client whole.
//
// TestMatrix runs one real gale server (one event loop, so that every
// request after the first of a route goes over a pooled upstream or
// FastCGI connection) in front of real applications started by the test:
// a net/http server over HTTP/1.1, one over h2c, and PHP-FPM behind a
// fastcgi and a php route, each route also behind basic_auth and behind a
// rate_limit; and static, respond and redirect routes, which read no body
// and must drain it (or refuse it and close) so that the connection goes
// on. Its clients speak HTTP/1.1 over raw sockets (plain and TLS: framing,
// Expect: 100-continue and the arrival of every byte are the test's),
// HTTP/2 over TLS and h2c (net/http) and HTTP/3 (quic-go). Each route's
// requests run in a row on two client connections that take turns on the
// one loop. The application answers the length and SHA-256 of the body
// it read (X-Got) with a response body of the size and framing the
// request asks for, and the client checks the length and SHA-256 of what
// it received.
//
// Over HTTP/1.1 the connection must stay open after every response but
// those that say otherwise by design (an answer before an expected body,
// a 411, an application that closed to end its response).
//
// A body of unknown length (chunked, or HTTP/2 and HTTP/3 without
// content-length) to a FastCGI route is answered 411 by design (see
// package gateway); the matrix asserts exactly that, with the one
// exception HTTP/3's framing makes (cells_test.go, want).
//
// TestMatrixInterleaved runs the protocols at once on the one loop;
// TestMatrixTight runs them with gale's buffers small, so that responses
// outrun their clients and the back-pressure paths are taken.
// TestMatrixReference sends the proxy cells to the net/http applications
// directly: it proves the clients and the expectations. A known bug is a
// test of its own that skips, saying why (known_test.go).
//
// By default the matrix runs a fixed sample (seeded) of the product, every
// (protocol, route) pair with a few small cells and the large bodies on a
// rotation (seconds); GALE_MATRIX=full runs the whole product (minutes).
// GALE_MATRIX_TIMEOUT bounds each request (default 60s). It skips when
// php-fpm is not installed.
package matrix
