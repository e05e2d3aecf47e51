package app

import (
	"gale/codec"
	"gale/handlers"
)

var slash = []byte("/")

// Serve answers a request on a redirect_to_https listener with a redirect
// to the same host, path and query over https: 301 for GET and HEAD, 308
// (which keeps the method and body) for the others. A request without a
// usable Host is answered 400. Location is built in ctx.Scratch: no
// allocation once it has room.
func (h *httpsRedirect) Serve(ctx *handlers.Ctx) {
	req := ctx.Req
	host := hostOnly(req.Host)
	if len(host) == 0 {
		ctx.Error(400)
		return
	}
	mark := len(ctx.Scratch)
	s := append(ctx.Scratch, "https://"...)
	s = append(s, host...)
	s = append(s, h.port...)
	path := req.Path
	if len(path) == 0 || path[0] != '/' {
		path = slash
	}
	s = codec.AppendLocationSafe(s, path)
	if req.Query != nil {
		s = append(s, '?')
		s = codec.AppendLocationSafe(s, req.Query)
	}
	ctx.Scratch = s
	n := len(s)
	status := 308
	if m := string(req.Method); m == "GET" || m == "HEAD" {
		status = 301
	}
	ctx.Redirect(status, s[mark:n:n])
}

// hostOnly returns the host of a Host value without its port and
// trailing dots (codec.HostName, and any further trailing dot), or nil
// when it holds a byte that a host name or an IP literal cannot.
func hostOnly(h []byte) []byte {
	h = codec.HostName(h)
	if !redirectHost(h) {
		return nil
	}
	for len(h) > 0 && h[len(h)-1] == '.' {
		h = h[:len(h)-1]
	}
	return h
}

// redirectHost reports whether h (without a port) may be copied into a
// Location: an IP literal in brackets of hex digits, ':' and '.', or a
// name of letters, digits, '.', '-' and '_'.
func redirectHost(h []byte) bool {
	if len(h) == 0 {
		return false
	}
	if h[0] == '[' {
		if len(h) < 2 || h[len(h)-1] != ']' {
			return false
		}
		for _, c := range h[1 : len(h)-1] {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.') {
				return false
			}
		}
		return true
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
