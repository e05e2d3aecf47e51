package config

import (
	"go.yaml.in/yaml/v3"
)

// protocolsKey is where a listener wrote its protocols, kept by the
// decoder for checks that need sections decoded later (server.http2).
type protocolsKey struct {
	node *yaml.Node // the list
	path string     // "listen[2].protocols"
	set  Protocols
}

// protocols decodes a listener's protocols list: at least one of h1, h2
// and h2c, each once, h2 only on a TLS listener and h2c only on a plain
// one (tls says which this is). ok is false when the list is unusable
// (already reported).
func (d *decoder) protocols(n *yaml.Node, path string, tls bool) (Protocols, bool) {
	items, ok := d.list(n, path, "protocols")
	if !ok {
		return 0, false
	}
	if len(items) == 0 {
		d.errorf(deref(n), path, "expected at least one of h1, h2, h2c, e.g. %s", DefaultProtocols(tls))
		return 0, false
	}
	var set Protocols
	first := map[Protocols]*yaml.Node{}
	for i, item := range items {
		p := index(path, i)
		name, good := d.enum(item, p, protocolNames...)
		if !good {
			ok = false
			continue
		}
		bit := protocolBit(name)
		if f := first[bit]; f != nil {
			d.errorf(item, p, "%s is listed twice; first at line %d, column %d", name, f.Line, f.Column)
			ok = false
			continue
		}
		first[bit] = item
		switch {
		case bit == ProtoH2 && !tls:
			d.errorf(item, p, "h2 is HTTP/2 over TLS and needs a tls section on this listener; HTTP/2 over cleartext is h2c")
			ok = false
		case bit == ProtoH2C && tls:
			d.errorf(item, p, "h2c is HTTP/2 over cleartext; a TLS listener speaks HTTP/2 as h2")
			ok = false
		}
		set |= bit
	}
	return set, ok
}

// protocolBit returns the member of Protocols that name (one of
// protocolNames) stands for.
func protocolBit(name string) Protocols {
	for i, n := range protocolNames {
		if n == name {
			return 1 << i
		}
	}
	return 0
}

// checkProtocolsHTTP2 refuses, once server.http2 is decoded, a listener
// whose protocols hold no h1 while HTTP/2 is turned off: such a listener
// could answer no connection at all.
func (d *decoder) checkProtocolsHTTP2(h HTTP2) {
	if h.Enabled {
		return
	}
	for _, k := range d.protoKeys {
		if !k.set.H1() {
			d.errorf(deref(k.node), k.path, "%s needs HTTP/2, which server.http2.enabled: false turns off; add h1 or enable HTTP/2", k.set)
		}
	}
}
