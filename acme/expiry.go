package acme

// When the managed certificates expire, for the metrics.

import (
	"slices"
	"time"
)

// Expiry is when the certificate of a managed name expires.
type Expiry struct {
	Name     string
	NotAfter time.Time
}

// Expiries returns the latest expiry of the certificate of every listed
// name one is cached for, sorted by name. Names obtained on demand are
// counted by OnDemand instead: clients choose them.
func (m *Manager) Expiries() []Expiry {
	var names []string
	for _, s := range m.sites {
		names = append(names, s.auto.Load().Domains...)
	}
	slices.Sort(names)
	out := make([]Expiry, 0, len(names))
	for _, n := range names {
		if last := m.expiry(n); !last.IsZero() {
			out = append(out, Expiry{Name: n, NotAfter: last})
		}
	}
	return out
}

// OnDemand returns how many names obtained on demand have a certificate
// in memory, and the earliest of their expiries (zero when none).
func (m *Manager) OnDemand() (n int, earliest time.Time) {
	m.mu.Lock()
	var names []string
	for name := range m.known {
		names = append(names, name)
	}
	m.mu.Unlock()
	for _, name := range names {
		if slices.ContainsFunc(m.sites, func(s *Site) bool { return s.lists(name) }) {
			continue
		}
		if last := m.expiry(name); !last.IsZero() {
			n++
			if earliest.IsZero() || last.Before(earliest) {
				earliest = last
			}
		}
	}
	return n, earliest
}

// expiry is the latest expiry of the certificates cached for name.
func (m *Manager) expiry(name string) time.Time {
	var last time.Time
	for _, c := range m.cache.AllMatchingCertificates(name) {
		if c.Leaf != nil && c.Leaf.NotAfter.After(last) {
			last = c.Leaf.NotAfter
		}
	}
	return last
}
