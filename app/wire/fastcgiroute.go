package wire

import (
	"gale/fds"
	"gale/gateway"
	"gale/handlers"
)

// fastcgiOption gives handlers.Build the factory of FastCGI routes (the
// fastcgi route kind and the php preset), which count their connections
// in b.
func fastcgiOption(b *fds.Budget) handlers.Option {
	return handlers.WithFastCGI(func(rt *handlers.Route) (handlers.Handler, error) {
		return gateway.New(rt, gateway.Options{Budget: b})
	})
}
