package handlers

// loadRetry is a static route's continuation (see Pending) for a request
// whose file the cache reads off the loop: once the load finished, it
// serves the request again, which then finds the file in the cache or
// takes the load's result (CacheLoaded). One per route, shared by every
// exchange that waits on it: what it waits for is the exchange's, kept by
// its CacheAccess.
type loadRetry struct{ h *staticHandler }

// Resume implements Pending.
func (r *loadRetry) Resume(c *Ctx) Progress {
	if c.Cache == nil || !c.Cache.CacheReady() {
		return Waiting
	}
	c.Resp.Reset()
	r.h.Serve(c)
	if c.Resp.Pending == nil && c.Resp.Head == nil && c.Route != nil {
		c.Route.ApplyResponseHeaders(&c.Resp) // as Router.Serve does
	}
	return Answered
}

// Closed implements Pending: the exchange holds nothing of the route's.
func (*loadRetry) Closed() {}
