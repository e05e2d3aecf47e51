// Package wire is the seam between the server (package app) and its
// protocol engines (the HTTP/1.1 and HTTP/2 connection engines and the TLS
// transport). It holds what every engine uses and nothing protocol
// specific:
//
//   - the per-connection transport (Conn): reading, consuming and sending
//     a client's bytes over plain gnet or a Layer such as TLS, write
//     progress, half-close, duplication of the socket and wake-ups;
//   - the per-loop services (Loop): output buffers, counters, the access
//     log's pending lines, the loop's view of the file cache, and the
//     per-loop state of handlers that answer later (Loop.Local, which
//     every engine's handlers.Exchange passes on, so the engines never
//     name the proxy);
//   - the process-wide state engines read (Shared): the compiled settings,
//     the descriptor budget, the access log, the stop flag and the proxy's
//     per-loop state;
//   - the compiled settings (Settings, Compile; Settings.ExchangeSettings
//     for handlers.Exchange) and the proxy-route
//     factory, so that an engine's tests build a working configuration
//     without the server;
//   - what every engine's responses and waits share: the fields every
//     response head gets (HeadFields: Date, Alt-Svc, Server), which each
//     engine only encodes, and the wait for a load of the file cache
//     (CacheWait);
//   - the interface through which the server drives an engine (Engine).
//
// Everything here that is not marked concurrency-safe runs on the
// connection's event loop.
package wire
