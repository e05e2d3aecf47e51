// Package h2 is the server side of HTTP/2 (RFC 9113) over byte slices:
// frames, connection and stream state, flow control and the defences
// against the protocol's denial-of-service classes. Bytes go in (Conn.Feed),
// events come out (Handler) and bytes to send are queued (Conn.Out). It
// does no I/O and imports neither gnet nor net/http, so that it can be
// fuzzed and benchmarked alone; header blocks are decoded by gale/h2/hpack,
// and requests are handed over as codec.Request views, the same type the
// HTTP/1.1 codec fills.
//
// The frame layer (ReadFrame, the Append and Parse functions) reads frames
// from a buffer in place, h2o style: a frame is incomplete, or it is parsed
// with its payload aliasing the input. The Conn keeps its streams in a
// fixed pool indexed by Stream.Slot and finds them by id in a small
// open-addressing table: the request path (Feed of HEADERS, Request,
// WriteHeaders, WriteData) allocates nothing once a connection's buffers
// have grown.
//
// Nothing in this package is safe for concurrent use: a Conn and its
// Streams belong to one event loop. Every slice handed to a Handler
// aliases memory valid only during the call.
package h2
