package handlers

import (
	"net/netip"

	"gale/config"
)

// accessRules is a route's compiled access list.
type accessRules []config.AccessRule

// allows reports whether the first rule containing a allows it; no rule
// matching denies.
func (rs accessRules) allows(a netip.Addr) (bool, int) {
	for i := range rs {
		if prefixesContain(rs[i].Prefixes, a) {
			return rs[i].Allow, i
		}
	}
	return false, -1
}
