package wire

import (
	"runtime"

	"gale/config"
	"gale/fds"
	"gale/gateway"
	"gale/handlers"
)

// fastcgiOption gives handlers.Build the factory of FastCGI routes (the
// fastcgi route kind and the php preset), which count their connections
// in b.
func fastcgiOption(cfg *config.Config, b *fds.Budget) handlers.Option {
	loops := cfg.Server.EventLoops
	if loops <= 0 {
		loops = runtime.NumCPU()
	}
	return handlers.WithFastCGI(func(rt *handlers.Route) (handlers.Handler, error) {
		return gateway.New(rt, gateway.Options{Loops: loops, Budget: b})
	})
}
