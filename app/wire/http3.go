package wire

import (
	"fmt"

	"gale/config"
)

// speaksHTTP3 refuses a listener with http3 in a configuration that
// proxies or runs FastCGI applications: the HTTP/3 engine gives its
// exchanges no response sink or request body source, which both need,
// so such a request could not be forwarded.
func speaksHTTP3(cfg *config.Config) error {
	if fastcgi(cfg) {
		for i := range cfg.Listen {
			if l := &cfg.Listen[i]; l.HTTP3 {
				return fmt.Errorf("%s: http3 cannot be served while a route runs fastcgi or php (their responses are not answered over HTTP/3 yet); remove http3 from the listener", ListenerWhere(cfg, l))
			}
		}
	}
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

// fastcgi reports whether a route of cfg runs a FastCGI application.
func fastcgi(cfg *config.Config) bool {
	for i := range cfg.Routes {
		if cfg.Routes[i].FastCGI != nil {
			return true
		}
	}
	return false
}
