// Package admin is gale's admin API: a plain net/http server on a
// listener of its own (config admin:), a unix socket whose permissions
// (0600) are its authentication or a TCP address whose requests carry a
// bearer token. It never runs on the event loops and nothing of it is
// served on the public listeners.
//
//	GET  /config     the running config: its YAML, or JSON with Accept: application/json or ?format=json
//	POST /load       a YAML (or JSON) config as the body: validated and applied as a SIGHUP reload is
//	GET  /routes     the routes; with ?method=&url= (and header=, from=) what gale route explains
//	GET  /upstreams  every proxy upstream: health, counters, connections
//	POST /purge      the static file cache: ?path=/a.css one path, ?path=/img/ a subtree, else all
//	POST /stop       a graceful stop
//	GET  /status     version, uptime, connections, config file
//
// The Client type is the other end, for gale reload, stop and status.
package admin
