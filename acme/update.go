package acme

import (
	"reflect"
	"slices"

	"github.com/caddyserver/certmagic"

	"gale/config"
)

// Change is a reloaded automatic section for a running site.
type Change struct {
	Site *Site
	Auto *config.Automatic
}

// Update applies reloaded automatic sections, all at once: a change of a
// site's domains takes effect (added names are obtained in the
// background, their handshakes waiting as at start; removed names are
// neither served nor renewed any more; a name moved between sites keeps
// its certificate). Any other change needs a restart: that site is left
// as it was, and returned.
func (m *Manager) Update(changes []Change) (restart []*Site) {
	var apply []Change
	kept := map[string]bool{}
	for _, c := range changes {
		if !sameButDomains(c.Site.auto.Load(), c.Auto) {
			restart = append(restart, c.Site)
			c.Auto = c.Site.auto.Load()
		}
		apply = append(apply, c)
		for _, name := range c.Auto.Domains {
			kept[name] = true
		}
	}
	var added, removed []string
	var addedBy []*Site
	m.mu.Lock()
	for _, c := range apply {
		old := c.Site.auto.Load()
		for _, name := range subtract(old.Domains, c.Auto.Domains) {
			if !kept[name] {
				removed = append(removed, name)
			}
		}
		for _, name := range subtract(c.Auto.Domains, old.Domains) {
			added, addedBy = append(added, name), append(addedBy, c.Site)
			if !m.known[name] && m.ready[name] == nil {
				m.ready[name] = make(chan struct{})
			}
		}
		c.Site.setAuto(c.Auto)
	}
	for _, name := range removed {
		delete(m.known, name)
		delete(m.failing, name)
		m.settle(name) // waiting handshakes find the name gone
	}
	m.setRedirects()
	m.mu.Unlock()
	m.manageChanges(added, addedBy, removed)
	return restart
}

// manageChanges drops the removed names from certmagic's cache and
// starts managing the added ones, each with its site's config.
func (m *Manager) manageChanges(added []string, by []*Site, removed []string) {
	if len(removed) > 0 {
		subjects := make([]certmagic.SubjectIssuer, len(removed))
		for i, name := range removed {
			subjects[i] = certmagic.SubjectIssuer{Subject: name}
		}
		m.cache.RemoveManaged(subjects)
	}
	for i, name := range added {
		if err := by[i].magic.ManageAsync(m.ctx, []string{name}); err != nil {
			m.log.Error("acme: managing certificates", "domain", name, "err", err.Error())
		}
	}
	if len(added)+len(removed) > 0 {
		m.log.Info("acme: managed names changed", "added", added, "removed", removed)
	}
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
