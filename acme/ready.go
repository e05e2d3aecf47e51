package acme

// The names' readiness, followed through certmagic's events: handshakes
// for a listed name wait while its first certificate is obtained.

import (
	"context"
	"strings"
)

// followed reports whether the manager follows certmagic's event: the
// others are not built (one is, on every handshake, when followed).
func followed(event string) bool {
	return event == "cached_managed_cert" || event == "cert_failed" || event == "cert_obtaining"
}

// onEvent follows certmagic's events. A certificate cached for a name
// ends the handshakes waiting for it. A failure to obtain a listed name's
// first certificate ends them too, and later handshakes do not wait until
// the next attempt starts (certmagic logs the failure itself).
func (m *Manager) onEvent(_ context.Context, event string, data map[string]any) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch event {
	case "cached_managed_cert":
		sans, _ := data["sans"].([]string)
		for _, name := range sans {
			name = strings.ToLower(name)
			m.known[name] = true
			m.settle(name)
			delete(m.failing, name)
		}
	case "cert_failed":
		if renewal, _ := data["renewal"].(bool); !renewal {
			name, _ := data["identifier"].(string)
			if m.settle(name) {
				m.failing[name] = true
			}
		}
	case "cert_obtaining":
		name, _ := data["identifier"].(string)
		if m.failing[name] {
			delete(m.failing, name)
			m.ready[name] = make(chan struct{})
		}
	}
	return nil
}

// settle ends the wait for name's first certificate; it reports whether
// there was one. The caller holds m.mu.
func (m *Manager) settle(name string) bool {
	ch := m.ready[name]
	if ch == nil {
		return false
	}
	close(ch)
	delete(m.ready, name)
	return true
}

// has reports whether a managed certificate for name is in memory.
func (m *Manager) has(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.known[strings.ToLower(name)]
}

// waitReady returns a channel closed once a certificate for the listed
// name is cached, or nil when one is already.
func (m *Manager) waitReady(name string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ready[name]
}
