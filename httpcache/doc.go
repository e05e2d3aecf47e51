// Package httpcache is the shared HTTP cache (RFC 9111) of proxy and
// FastCGI routes: what may be stored, how long it is fresh, how old it
// is, and the store that keeps entries under a byte budget.
//
// # Sharing, the way the file cache shares
//
// A Store belongs to one route and is shared by every event loop; each
// loop looks keys up through its own View, a plain map from key to slot
// (the model of package cache). A slot's current variants are published
// through an atomic pointer and never modified, so a hit reads the
// loop's map, one atomic load and the clock: no lock shared across
// loops, no allocation. The store's own map, the eviction ring and the
// fetches in flight (collapsing) sit behind one mutex that only misses,
// stores and invalidations take.
//
// The budget is the route's own (its cache.max_bytes), beside the file
// cache's: file cache entries are versions of files revalidated by stat,
// these are upstream answers that expire by time, and a flood of unique
// query strings through a proxy route must not evict the site's files
// (nor a large site the application's answers). Eviction is SIEVE, as in
// the file cache: a hit sets a visited bit, a hand clears bits and evicts
// the first unvisited slot.
package httpcache
