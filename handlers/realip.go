package handlers

import (
	"bytes"
	"net/netip"
	"unsafe"

	"gale/codec"
)

// The client behind trusted proxies (server.trusted_proxies, nginx's
// real_ip with real_ip_recursive): a request whose peer is a trusted
// proxy has as its client the rightmost X-Forwarded-For address that is
// not itself trusted, walking the fields from the last; the leftmost
// when every one is trusted; the peer when the field names none or holds
// something that is not an address (the chain cannot be followed past
// it). Router.Serve puts it in Ctx.Remote once per request, so access
// rules, rate limits, logs, metrics and the forwarded fields all read
// the one value.

// FromTrustedProxy reports whether the request came from one of
// server.trusted_proxies: the forwarding fields it sent may be kept.
func (c *Ctx) FromTrustedProxy() bool { return c.peerTrusted }

// realClient returns c's client under trusted.
func realClient(trusted []netip.Prefix, c *Ctx) netip.AddrPort {
	peer := c.Peer
	c.peerTrusted = len(trusted) > 0 && prefixesContain(trusted, peer.Addr().Unmap())
	if !c.peerTrusted || c.Req == nil {
		return peer
	}
	client := peer
	hs := c.Req.Headers
	for i := len(hs) - 1; i >= 0; i-- {
		if len(hs[i].Name) != 15 || !codec.EqualFold(hs[i].Name, "x-forwarded-for") {
			continue
		}
		v := hs[i].Value
		for len(v) > 0 {
			j := bytes.LastIndexByte(v, ',')
			elem := codec.TrimOWS(v[j+1:])
			v = v[:max(j, 0)]
			a, ok := parseAddr(elem)
			if !ok {
				return client
			}
			client = netip.AddrPortFrom(a, 0)
			if !prefixesContain(trusted, a) {
				return client
			}
		}
	}
	return client
}

// parseAddr parses an IP address written in b without copying it: the
// address it returns keeps nothing of b (netip interns a zone).
func parseAddr(b []byte) (netip.Addr, bool) {
	if len(b) == 0 || len(b) > 64 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(unsafe.String(&b[0], len(b)))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}
