package app

import (
	"gale/config"
)

// The file cache's place in the server: one cache.Cache per Server, made
// in New, purged on every reload and closed when Run returns; each loop
// has a view of it (wire.Loop.CacheView), and the engines wait for loads
// through handlers.CacheAccess.

// cacheNotes reports cache settings a reload cannot change.
func cacheNotes(old, cfg *config.Config) []string {
	if old.Cache != cfg.Cache {
		return []string{"cache settings changed: restart gale to apply them"}
	}
	return nil
}
