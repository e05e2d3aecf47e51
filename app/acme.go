package app

// Automatic certificates as the server uses them (package acme does the
// ACME side): the manager built from the listeners' tls.automatic
// sections, its lifecycle, and their reload. What answers on the plain
// listeners before routing is in acme_front.go.

import (
	"fmt"
	"net/netip"

	"gale/acme"
	"gale/config"
)

// newACME builds the manager of cfg's automatic sections, whose listeners
// are bound at addrs; nil when there are none.
func (s *Server) newACME(cfg *config.Config, addrs []netip.AddrPort) (*acme.Manager, []*acme.Site, error) {
	var plain netip.AddrPort
	for i := range cfg.Listen {
		if cfg.Listen[i].TLS == nil {
			plain = addrs[i]
			break
		}
	}
	var secs []acme.Section
	var at []int
	for i := range cfg.Listen {
		if a := automaticOf(&cfg.Listen[i]); a != nil {
			sec := acme.Section{Auto: a, TLSAddr: addrs[i], HTTPAddr: plain}
			if a.InRedis && s.cluster != nil {
				sec.Shared = s.certStorage()
			}
			secs = append(secs, sec)
			at = append(at, i)
		}
	}
	if len(secs) == 0 {
		return nil, nil, nil
	}
	m, err := acme.New(secs, s.log)
	if err != nil {
		return nil, nil, err
	}
	sites := make([]*acme.Site, len(cfg.Listen))
	for j, i := range at {
		sites[i] = m.Sites()[j]
	}
	return m, sites, nil
}

// stopACME ends the management of automatic certificates.
func (s *Server) stopACME() {
	if s.acme != nil {
		s.acme.Stop()
	}
}

func automaticOf(l *config.Listener) *config.Automatic {
	if l.TLS == nil {
		return nil
	}
	return l.TLS.Automatic
}

// reloadAutomatic applies the reloaded tls.automatic sections of cfg
// (whose listeners are the running ones) to the running sites: a change
// of domains at once (acme.Manager.Update), any other change at the next
// restart, which the returned notes say.
func (s *Server) reloadAutomatic(cfg *config.Config) []string {
	var notes []string
	var changes []acme.Change
	for i := range cfg.Listen {
		if i >= len(s.listeners) || s.listeners[i].tls == nil {
			continue
		}
		site, a := s.listeners[i].site, automaticOf(&cfg.Listen[i])
		switch {
		case site == nil && a == nil:
		case site == nil || a == nil:
			notes = append(notes, fmt.Sprintf("listen %s: tls.automatic added or removed: restart gale to apply it", cfg.Listen[i].Address))
		default:
			changes = append(changes, acme.Change{Site: site, Auto: a})
		}
	}
	if len(changes) == 0 {
		return notes
	}
	for _, site := range s.acme.Update(changes) {
		for i := range s.listeners {
			if s.listeners[i].site == site {
				notes = append(notes, fmt.Sprintf("listen %s: tls.automatic changed beyond its domains: restart gale to apply it (the running certificates stay managed as they were)", cfg.Listen[i].Address))
			}
		}
	}
	return notes
}
