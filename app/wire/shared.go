package wire

import (
	"log/slog"
	"sync/atomic"

	"gale/accesslog"
	"gale/fds"
)

// Shared is the process-wide state that every loop and engine reads: the
// server owns it and hands each loop a pointer. Its fields are safe for
// concurrent use (atomics, or values set before the engine starts).
type Shared struct {
	Set      atomic.Pointer[Settings] // the settings of new requests, swapped on reload
	Draining atomic.Bool              // the graceful stop is under way (after any drain delay): responses close their connections
	Budget   *fds.Budget              // every descriptor held, and client connections
	Access   *accesslog.Log           // nil when the access log is off
	Log      *slog.Logger
	Proxies  ProxyLoops  // the proxy state of each loop
	Metered  bool        // a metrics listener is open: exchanges are counted per route (set before the engine starts)
	Resets   *ResetRates // HTTP/2 streams reset, per client address (resetrate.go); nil: not counted
}
