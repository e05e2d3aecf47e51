package handlers

import (
	"fmt"
	"sync/atomic"

	"gale/codec"
	"gale/config"
)

// healthHandler answers probes: a liveness route while the process runs,
// a readiness route until a graceful stop begins (Kubernetes' /livez and
// /readyz; a load balancer stops sending once readiness fails, before
// connections are refused). Its answers are never cached. Serve does not
// allocate.
type healthHandler struct {
	ready    bool         // a readiness route
	stopping *atomic.Bool // the server's stopping flag; nil = never stopping
}

var _ Handler = (*healthHandler)(nil)

var _ = registerRouteKind(routeKind{
	key:     "health",
	present: func(rc *config.Route) bool { return rc.Health != "" },
	build: func(rt *Router, r *Route) (err error) {
		r.Handler, err = newHealth(r.Conf.Health, rt.opts.stopping)
		return err
	},
})

var (
	valNoStore    = []byte("no-store")
	valAllowProbe = []byte("GET, HEAD")
	bodyOK        = []byte("ok\n")
	bodyStopping  = []byte("stopping\n")
)

func newHealth(kind string, stopping *atomic.Bool) (*healthHandler, error) {
	switch kind {
	case "live":
		return &healthHandler{}, nil
	case "ready":
		return &healthHandler{ready: true, stopping: stopping}, nil
	}
	return nil, fmt.Errorf("%w: health %q (want live or ready)", ErrBadHealth, kind)
}

func (h *healthHandler) Serve(c *Ctx) {
	switch string(c.Req.Method) {
	case "GET", "HEAD":
	default:
		c.Error(405)
		c.Resp.Add(hdrAllow, valAllowProbe)
		return
	}
	c.Resp.Status, c.Resp.Body = 200, bodyOK
	if h.ready && h.stopping != nil && h.stopping.Load() {
		c.Resp.Status, c.Resp.Body = 503, bodyStopping
	}
	c.Resp.Add(codec.NameContentType, ctTextPlain)
	c.Resp.Add(hdrCacheControl, valNoStore)
}
