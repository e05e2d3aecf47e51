package serve

import (
	"gale/codec"
	"gale/handlers"
)

// Dispatch answers the exchange c, whose request head was parsed, or
// leaves c.Resp.Pending set for a handler that answers later:
//
//   - "OPTIONS *" (asterisk form) asks about the server as a whole:
//     nothing to say beyond a success (net/http answers the same);
//   - CONNECT (authority form): gale is not a forward proxy, so 405, and
//     the connection closes (what follows the request on HTTP/1.1 would be
//     a tunnel's bytes; HTTP/2 and HTTP/3 ignore Close);
//   - on a listener that redirects every request (redirect not nil), its
//     redirect;
//   - else the router's route.
func Dispatch(c *handlers.Ctx, redirect handlers.Handler, router *handlers.Router) {
	switch {
	case c.Req.Form == codec.AsteriskForm:
		c.Resp.Reset()
		c.Resp.Status = 200
	case c.Req.Form == codec.AuthorityForm:
		c.Error(405)
		c.Resp.Close = true
	case redirect != nil:
		redirect.Serve(c)
	default:
		router.Serve(c)
	}
}
