package acme

import (
	"reflect"
	"slices"

	"github.com/caddyserver/certmagic"

	"gale/config"
)

// Update applies a reloaded automatic section a to site s. A change of
// its domains takes effect at once: added names are obtained in the
// background (their handshakes wait as at start), removed ones are
// neither served nor renewed any more. Any other change needs a restart:
// Update then changes nothing and reports false.
func (m *Manager) Update(s *Site, a *config.Automatic) bool {
	old := s.auto.Load()
	if !sameButDomains(old, a) {
		return false
	}
	added := subtract(a.Domains, old.Domains)
	removed := subtract(old.Domains, a.Domains)
	if len(added) == 0 && len(removed) == 0 {
		return true
	}
	m.mu.Lock()
	for _, name := range added {
		if !m.known[name] {
			m.ready[name] = make(chan struct{})
		}
	}
	for _, name := range removed {
		delete(m.known, name)
		if ch := m.ready[name]; ch != nil {
			close(ch) // waiting handshakes find the name gone
			delete(m.ready, name)
		}
	}
	s.setAuto(a)
	m.setRedirects()
	m.mu.Unlock()
	if len(removed) > 0 {
		subjects := make([]certmagic.SubjectIssuer, len(removed))
		for i, name := range removed {
			subjects[i] = certmagic.SubjectIssuer{Subject: name}
		}
		m.cache.RemoveManaged(subjects)
	}
	if len(added) > 0 {
		if err := s.magic.ManageAsync(m.ctx, added); err != nil {
			m.log.Error("acme: managing certificates", "domains", added, "err", err.Error())
		}
	}
	m.log.Info("acme: managed names changed", "added", added, "removed", removed, "domains", a.Domains)
	return true
}

// sameButDomains reports whether a and b differ in their domains at most.
func sameButDomains(a, b *config.Automatic) bool {
	x, y := *a, *b
	x.Domains, y.Domains = nil, nil
	x.Pos, y.Pos = config.Pos{}, config.Pos{}
	return reflect.DeepEqual(x, y)
}

// subtract returns the names of a that b lacks.
func subtract(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}
