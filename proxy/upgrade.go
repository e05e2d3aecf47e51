package proxy

import (
	"iter"

	"gale/codec"
)

// This file decides which protocol switches (Upgrade, RFC 9110 section
// 7.8) a proxy route lets through. A switch turns the client's
// connection into a tunnel to the upstream, past every route, access
// rule and limit of gale, so only the protocols the route names
// (proxy.upgrade, default websocket) are offered upstream:
//
//   - the client's Upgrade list is forwarded with the protocols the route
//     does not name taken out; when none is left the request goes as a
//     plain request, without Upgrade and "Connection: upgrade" (what
//     nginx does without proxy_set_header Upgrade), and the upstream
//     answers it as one;
//   - h2c is never offered, whatever the config says (it refuses the
//     name), and HTTP2-Settings, which only an h2c upgrade uses, is
//     removed as a hop-by-hop field (hopByHop): with it a client would
//     speak HTTP/2 to the upstream itself;
//   - a 101 that switches to anything but a protocol gale offered on the
//     client's behalf starts no tunnel: it is a bad response (502).

// upgradeAllowed reports whether the route lets a client switch to the
// protocol tok ("name" or "name/version"). A configured name without a
// version allows every version of it.
func (h *Handler) upgradeAllowed(tok []byte) bool {
	name := tok
	for i, b := range tok {
		if b == '/' {
			name = tok[:i]
			break
		}
	}
	if len(name) == 3 && codec.EqualFold(name, "h2c") {
		return false
	}
	for _, a := range h.conf.Upgrade {
		if codec.EqualFold(tok, a) || codec.EqualFold(name, a) {
			return true
		}
	}
	return false
}

// offersUpgrade reports whether one of the client's Upgrade fields names
// a protocol the route allows.
func (h *Handler) offersUpgrade(hs []codec.Header) bool {
	for range h.upgrades(hs) {
		return true
	}
	return false
}

// appendUpgrades appends the protocols of the client's Upgrade fields
// that the route allows, in the client's order, separated by ", ".
func (h *Handler) appendUpgrades(b []byte, hs []codec.Header) []byte {
	first := true
	for tok := range h.upgrades(hs) {
		if !first {
			b = append(b, ", "...)
		}
		first = false
		b = append(b, tok...)
	}
	return b
}

// upgrades yields the protocols of the client's Upgrade fields that the
// route allows, in the client's order.
func (h *Handler) upgrades(hs []codec.Header) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for i := range hs {
			if !codec.EqualFold(hs[i].Name, "upgrade") {
				continue
			}
			for rest := hs[i].Value; len(rest) > 0; {
				var tok []byte
				tok, rest = nextToken(rest)
				if len(tok) > 0 && h.upgradeAllowed(tok) && !yield(tok) {
					return
				}
			}
		}
	}
}

// upgradeGranted reports whether the Upgrade value of a 101 response
// names only protocols in offered (the list gale forwarded), and at
// least one.
func upgradeGranted(offered, got []byte) bool {
	n := 0
	for rest := got; len(rest) > 0; {
		var tok []byte
		tok, rest = nextToken(rest)
		if len(tok) == 0 {
			continue
		}
		if !listHas(offered, tok) {
			return false
		}
		n++
	}
	return n > 0
}

// listHas reports whether the comma-separated list holds tok, compared
// case-insensitively.
func listHas(list, tok []byte) bool {
	for rest := list; len(rest) > 0; {
		var t []byte
		t, rest = nextToken(rest)
		if codec.EqualFoldBytes(t, tok) {
			return true
		}
	}
	return false
}

// nextToken splits the first element off a comma-separated list,
// trimmed of optional whitespace.
func nextToken(v []byte) (tok, rest []byte) {
	i := 0
	for i < len(v) && v[i] != ',' {
		i++
	}
	tok = codec.TrimOWS(v[:i])
	if i < len(v) {
		i++
	}
	return tok, v[i:]
}
