package handlers

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"gale/cache"
	"gale/codec"
)

// Scripts (the php preset): a static route whose files with the script
// extension (".php", ASCII case-insensitive) are never served as they are
// but run by a ScriptHandler (a FastCGI application), as Caddy's
// php_fastcgi does. Every way the static handler finds a file — the path
// itself, a directory's index file, a try_files candidate — ends in
// serveEntry, which hands scripts over; so a script's source is never
// sent, whatever path led to it. Other files are served as by any static
// route (GET and HEAD; other methods are answered 405), while scripts get
// every method.
//
// A path with a script segment followed by more ("/app.php/a/b") is tried
// first as that script with the rest as PATH_INFO, when the script
// exists. A directory named without its trailing slash whose index is a
// script is redirected (308) to the path with the slash, so that relative
// links in the page resolve under it.

// ScriptHandler runs scripts found by a static route. script and info
// are decoded clean paths under the root: the script's, and what the
// request path has after it ("" when nothing). It answers like Serve.
type ScriptHandler interface {
	Handler
	ServeScript(c *Ctx, script, info []byte)
}

// scriptExt is the extension the php preset runs.
const scriptExt = ".php"

// isScript reports whether the clean path p names a script.
func isScript(p []byte) bool {
	return len(p) > len(scriptExt) && codec.EqualFold(p[len(p)-len(scriptExt):], scriptExt)
}

// serveScriptEntry hands the entry e to the route's scripts when it is a
// script, and answers 405 for a file asked for with a method other than
// GET or HEAD. It reports whether it answered.
func (h *staticHandler) serveScriptEntry(c *Ctx, e *cache.Entry) bool {
	if h.scripts == nil {
		return false
	}
	if !strings.HasPrefix(e.Path, h.rootPrefix) {
		return false
	}
	script := []byte(e.Path[len(h.rootPrefix)-1:])
	if !isScript(script) {
		switch string(c.Req.Method) {
		case "GET", "HEAD":
			return false
		}
		h.fail(c, 405)
		c.Resp.Add(hdrAllow, valAllowReadOnly)
		return true
	}
	if h.dirIndexWithoutSlash(c, script) {
		h.redirectToSlash(c)
		return true
	}
	h.scripts.ServeScript(c, script, nil)
	return true
}

// dirIndexWithoutSlash reports whether script is the index script of the
// request's path named without its trailing slash ("/dir" and
// "/dir/index.php").
func (h *staticHandler) dirIndexWithoutSlash(c *Ctx, script []byte) bool {
	p := c.Path
	if len(p) == 0 || p[len(p)-1] == '/' || len(script) <= len(p)+1 || script[len(p)] != '/' {
		return false
	}
	mark := len(c.Scratch)
	var status int
	c.Scratch, status = appendDecodedPath(c.Scratch, p)
	dec := c.Scratch[mark:]
	ok := status == 0 && string(dec) == string(script[:len(dec)]) && len(script) > len(dec) && script[len(dec)] == '/'
	if ok {
		name := string(script[len(dec)+1:])
		ok = false
		for _, ix := range h.index {
			ok = ok || ix == name
		}
	}
	c.Scratch = c.Scratch[:mark]
	return ok
}

// redirectToSlash answers 308 to the path with a trailing slash and the
// query (as Caddy's php_fastcgi does).
func (h *staticHandler) redirectToSlash(c *Ctx) {
	h.redirectToDir(c)
	c.Resp.Status = 308
	c.Resp.Body = redirectBodies[308]
}

// serveWithScripts is Serve for a route with scripts: every method
// reaches them, and the files answer GET and HEAD (serveScriptEntry).
func (h *staticHandler) serveWithScripts(c *Ctx) {
	if h.serveSplit(c) {
		return
	}
	h.serveFiles(c)
}

// serveSplit runs the script that a path like "/app.php/a/b" names, with
// "/a/b" as PATH_INFO, when that script exists. It reports whether it
// answered (or waits for a load).
func (h *staticHandler) serveSplit(c *Ctx) bool {
	p := c.Path
	end := -1
	for i := 1; i+len(scriptExt) < len(p); i++ {
		if p[i+len(scriptExt)] == '/' && p[i-1] != '/' && codec.EqualFold(p[i:i+len(scriptExt)], scriptExt) {
			end = i + len(scriptExt)
			break
		}
	}
	if end < 0 {
		return false
	}
	clean, _, status := h.cleanRest(c, p[:end])
	if status != 0 {
		return false
	}
	e, err := h.entry(c, clean)
	switch {
	case errors.Is(err, cache.ErrPending):
		return true // Resume serves the request again
	case err != nil || e.Kind != cache.KindFile && e.Kind != cache.KindLarge:
		return false
	}
	mark := len(c.Scratch)
	c.Scratch, status = appendDecodedPath(c.Scratch, p[end:])
	if status != 0 {
		h.fail(c, status)
		return true
	}
	h.scripts.ServeScript(c, clean, c.scratchSince(mark))
	return true
}

// buildFastCGI makes the handler of a fastcgi route, or of a php route:
// a static handler whose scripts the FastCGI handler runs.
func (rt *Router) buildFastCGI(r *Route) error {
	if rt.opts.fastcgi == nil {
		return ErrNoFastCGI
	}
	fh, err := rt.opts.fastcgi(r)
	if err != nil {
		return err
	}
	if c, ok := fh.(io.Closer); ok {
		rt.closer = append(rt.closer, c.Close)
	}
	if r.Conf.Static == nil {
		r.Handler = withCache(fh, r)
		return nil
	}
	sh, ok := fh.(ScriptHandler)
	if !ok {
		return fmt.Errorf("handlers: the FastCGI handler of route %q cannot run scripts", r.Conf.Path)
	}
	s, err := newStatic(r.Conf.Static, r, rt.staticEnv())
	if err != nil {
		return err
	}
	rt.closer = append(rt.closer, s.close)
	s.scripts = sh
	if r.Conf.Cache != nil {
		cl := newCacheLayer(nil, r.Conf.Cache)
		cl.scripts = sh
		s.scripts = cl
	}
	r.Handler = s
	return nil
}

// Scripts returns the handler that runs the route's scripts, or nil (for
// the server, which starts and stops it).
func (h *staticHandler) Scripts() ScriptHandler {
	if l, ok := h.scripts.(*cacheLayer); ok {
		return l.scripts
	}
	return h.scripts
}
