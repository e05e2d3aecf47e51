package wire

import (
	"fmt"

	"gale/config"
)

// speaksHTTP3 refuses a listener with http3 in a configuration that
// proxies: the reverse proxy answers clients over HTTP/1.1 only, so an
// HTTP/3 request to a proxy route could not be forwarded.
func speaksHTTP3(cfg *config.Config) error {
	if !forwards(cfg) {
		return nil
	}
	for i := range cfg.Listen {
		if l := &cfg.Listen[i]; l.HTTP3 {
			return fmt.Errorf("%s: http3 cannot be served while a route proxies (the reverse proxy answers clients over HTTP/1.1 only); remove http3 from the listener", ListenerWhere(cfg, l))
		}
	}
	return nil
}
