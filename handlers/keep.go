package handlers

import "gale/codec"

// KeepRequest copies c.Req into dst, with its bytes in buf (see
// codec.Request.CopyTo), makes c.Req dst, and returns buf for reuse. An
// engine calls it when Serve left a Pending, so that the exchange's
// request outlives the memory it was parsed from; c.Path, c.Rest and the
// path the captures index move with it when they alias the request's path
// (else they alias Scratch or static memory, which stay). A request that
// is dst already is kept as it is.
func (c *Ctx) KeepRequest(dst *codec.Request, buf []byte) []byte {
	src := c.Req
	if src == dst {
		return buf
	}
	buf = src.CopyTo(dst, buf)
	c.Path = moved(c.Path, src.Path, dst.Path)
	c.Rest = moved(c.Rest, src.Path, dst.Path)
	c.capPath = moved(c.capPath, src.Path, dst.Path)
	c.Req = dst
	return buf
}

// moved returns p re-pointed from old to its copy new when p lies within
// old (Path is all of it; Rest is a suffix of it), and p itself otherwise.
func moved(p, old, new []byte) []byte {
	if len(p) == 0 || len(old) == 0 || len(p) > len(old) {
		return p
	}
	switch at := len(old) - len(p); {
	case &p[0] == &old[0] && len(p) == len(old):
		return new
	case &p[len(p)-1] == &old[len(old)-1]:
		return new[at:]
	}
	return p
}
