package acme

// Which names plain HTTP redirects to https, and to which port: read on
// the event loops, so a table behind an atomic pointer, replaced whole.

// setRedirects stores the redirect table of the sites' current sections.
func (m *Manager) setRedirects() {
	r := map[string]int{}
	for _, s := range m.sites {
		if a := s.auto.Load(); a.RedirectHTTP {
			for _, name := range a.Domains {
				r[name] = s.port
			}
		}
	}
	m.redirect.Store(&r)
}

// RedirectPort reports whether plain-HTTP requests for host (a Host
// value without its port) are redirected to https, and to which port.
// It does not allocate; safe on an event loop.
func (m *Manager) RedirectPort(host []byte) (int, bool) {
	redirect := *m.redirect.Load()
	if len(redirect) == 0 || len(host) > 253 {
		return 0, false
	}
	var buf [253]byte
	n := copy(buf[:], host)
	for n > 0 && buf[n-1] == '.' {
		n--
	}
	for i := range n {
		if c := buf[i]; c >= 'A' && c <= 'Z' {
			buf[i] = c + 'a' - 'A'
		}
	}
	p, ok := redirect[string(buf[:n])]
	return p, ok
}
