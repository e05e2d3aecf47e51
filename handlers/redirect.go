package handlers

import (
	"fmt"
	"strings"

	"gale/codec"
	"gale/config"
)

// redirectHandler answers with a redirect to a configured URL, optionally
// followed by the rest of the request path and the query. Serve builds
// Location in Ctx.Scratch and does not allocate once Scratch has room.
type redirectHandler struct {
	status    int
	base      []byte // To up to its query or fragment
	baseSlash bool   // base ends with "/"
	query     []byte // To's query without "?" (nil for none)
	fragment  []byte // To's fragment with "#" (nil for none)
	keepPath  bool
	target    *config.Template // To with placeholders; nil = base, query and fragment
}

var _ Handler = (*redirectHandler)(nil)

var _ = registerRouteKind(routeKind{
	key:     "redirect",
	present: func(rc *config.Route) bool { return rc.Redirect != nil },
	build: func(_ *Router, r *Route) (err error) {
		r.Handler, err = newRedirect(r.Conf.Redirect)
		return err
	},
})

var (
	ctTextPlain = []byte("text/plain; charset=utf-8")
	// redirectBodies are the fixed bodies of the redirect statuses.
	redirectBodies = map[int][]byte{
		301: []byte("Moved Permanently\n"),
		302: []byte("Found\n"),
		303: []byte("See Other\n"),
		307: []byte("Temporary Redirect\n"),
		308: []byte("Permanent Redirect\n"),
	}
)

func newRedirect(rc *config.Redirect) (*redirectHandler, error) {
	status := rc.Status
	if status == 0 {
		status = 308
	}
	if _, ok := redirectBodies[status]; !ok {
		return nil, fmt.Errorf("%w: status %d (want 301, 302, 303, 307 or 308)", ErrBadRedirect, status)
	}
	to := rc.To
	if to == "" {
		return nil, fmt.Errorf("%w: empty target", ErrBadRedirect)
	}
	for i := 0; i < len(to); i++ {
		if c := to[i]; c <= ' ' || c == 0x7f {
			return nil, fmt.Errorf("%w: target %q has a space or control byte", ErrBadRedirect, to)
		}
	}
	h := &redirectHandler{status: status, keepPath: rc.KeepPath, target: rc.Target}
	if i := strings.IndexByte(to, '#'); i >= 0 {
		h.fragment = []byte(to[i:])
		to = to[:i]
	}
	if i := strings.IndexByte(to, '?'); i >= 0 {
		h.query = []byte(to[i+1:])
		to = to[:i]
	}
	h.base = []byte(to)
	h.baseSlash = strings.HasSuffix(to, "/")
	return h, nil
}

func (h *redirectHandler) Serve(c *Ctx) {
	if h.target != nil {
		h.serveTemplate(c)
		return
	}
	mark := len(c.Scratch)
	s := append(c.Scratch, h.base...)
	var reqQuery []byte
	if h.keepPath {
		// Leading slashes (and backslashes, which browsers read as
		// slashes) are dropped so that "//evil.example" in the request
		// cannot turn Location into a network-path reference.
		tail := c.Rest
		for len(tail) > 0 && (tail[0] == '/' || tail[0] == '\\') {
			tail = tail[1:]
		}
		if len(tail) > 0 {
			if !h.baseSlash {
				s = append(s, '/')
			}
			s = codec.AppendLocationSafe(s, tail)
		}
		reqQuery = c.Req.Query
	}
	if len(h.query) > 0 || len(reqQuery) > 0 {
		s = append(s, '?')
		s = append(s, h.query...)
		if len(h.query) > 0 && len(reqQuery) > 0 {
			s = append(s, '&')
		}
		s = codec.AppendLocationSafe(s, reqQuery)
	}
	s = append(s, h.fragment...)
	c.Scratch = s
	c.Redirect(h.status, c.scratchSince(mark))
}

// serveTemplate answers with the expansion of a To with placeholders. A
// path-only target whose expansion starts with "//" or "/\\" (a capture
// of "/evil.example" after a leading "/") has its extra slashes dropped,
// so the Location never becomes a network-path reference.
func (h *redirectHandler) serveTemplate(c *Ctx) {
	mark := len(c.Scratch)
	c.Scratch = appendTemplate(c.Scratch, h.target, c, true)
	loc := c.scratchSince(mark)
	if len(loc) > 0 && loc[0] == '/' {
		i := 1
		for i < len(loc) && (loc[i] == '/' || loc[i] == '\\') {
			i++
		}
		loc = loc[i-1:]
	}
	c.Redirect(h.status, loc)
}

// Redirect answers with a redirect status (301, 302, 303, 307 or 308) to
// location, with a fixed text body that never echoes the request.
// location must stay valid until the response is written (what Scratch
// holds does).
func (c *Ctx) Redirect(status int, location []byte) {
	c.Resp.Status = status
	c.Resp.Add(hdrLocation, location)
	c.Resp.Add(codec.NameContentType, ctTextPlain)
	c.Resp.Body = redirectBodies[status]
}
