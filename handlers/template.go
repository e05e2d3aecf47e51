package handlers

import (
	"gale/codec"
	"gale/config"
)

// appendTemplate appends the expansion of t for c to dst: literals as
// written, {path} as c.Path, {query} as c.Req.Query, {rest} as c.Rest, and
// capture groups as the bytes of the normal path the route's path_regex
// matched ("" for a group that did not take part in the match). Every
// value comes from the normal path, the query as the codec accepted it, or
// config text checked at load, so the expansion holds no whitespace,
// control byte or "#"; for a Location (loc true) the values are passed
// through codec.AppendLocationSafe all the same. It does not allocate once
// dst has room.
func appendTemplate(dst []byte, t *config.Template, c *Ctx, loc bool) []byte {
	for i := range t.Parts {
		p := &t.Parts[i]
		var v []byte
		switch p.Var {
		case config.VarLiteral:
			dst = append(dst, p.Lit...)
			continue
		case config.VarPath:
			v = c.Path
		case config.VarQuery:
			if c.Req != nil {
				v = c.Req.Query
			}
		case config.VarRest:
			v = c.Rest
		case config.VarCapture:
			v = c.capture(p.Group)
		}
		if loc {
			dst = codec.AppendLocationSafe(dst, v)
		} else {
			dst = append(dst, v...)
		}
	}
	return dst
}

// capture returns capture group g of the route's path_regex match, or nil.
func (c *Ctx) capture(g int) []byte {
	if 2*g+1 >= len(c.caps) {
		return nil
	}
	lo, hi := c.caps[2*g], c.caps[2*g+1]
	if lo < 0 || hi < lo || hi > len(c.capPath) {
		return nil
	}
	return c.capPath[lo:hi]
}

// expandPath appends t's expansion to c.Scratch, normalised as a request
// path is, and returns it with appendNormal's flags; false, with
// c.Scratch as before, when it would climb above "/".
func (c *Ctx) expandPath(t *config.Template) ([]byte, uint8, bool) {
	mark := len(c.Scratch)
	c.Scratch = appendTemplate(c.Scratch, t, c, false)
	raw := c.scratchSince(mark)
	at := len(c.Scratch)
	var (
		ok    bool
		flags uint8
	)
	if c.Scratch, flags, ok = appendNormal(c.Scratch, raw); !ok {
		c.Scratch = c.Scratch[:mark]
		return nil, 0, false
	}
	return c.scratchSince(at), flags, true
}
