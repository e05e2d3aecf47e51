package handlers

import (
	"fmt"

	"gale/codec"
	"gale/config"
)

// respondHandler answers every request with a fixed response built once
// from the config. Serve does not allocate.
type respondHandler struct {
	status      int
	body        []byte // nil for none
	contentType []byte // nil for none
}

var _ Handler = (*respondHandler)(nil)

var _ = registerRouteKind(routeKind{
	key:     "respond",
	present: func(rc *config.Route) bool { return rc.Respond != nil },
	build: func(_ *Router, r *Route) (err error) {
		r.Handler, err = newRespond(r.Conf.Respond)
		return err
	},
})

func newRespond(rc *config.Respond) (*respondHandler, error) {
	status := rc.Status
	if status == 0 {
		status = 200
	}
	if status < 200 || status > 599 {
		return nil, fmt.Errorf("%w: status %d (want 200..599)", ErrBadRespond, status)
	}
	h := &respondHandler{status: status}
	if codec.NoBody(false, status) {
		if rc.Body != "" {
			return nil, fmt.Errorf("%w: status %d has no body", ErrBadRespond, status)
		}
		return h, nil
	}
	if rc.Body != "" {
		h.body = []byte(rc.Body)
		ct := rc.ContentType
		if ct == "" {
			ct = "text/plain; charset=utf-8"
		}
		h.contentType = []byte(ct)
	} else if rc.ContentType != "" {
		h.contentType = []byte(rc.ContentType)
	}
	return h, nil
}

func (h *respondHandler) Serve(c *Ctx) {
	c.Resp.Status = h.status
	if h.contentType != nil {
		c.Resp.Add(codec.NameContentType, h.contentType)
	}
	c.Resp.Body = h.body
}
