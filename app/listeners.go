package app

// The listeners as the server sees them: what each one speaks, its TLS
// state (package tlsconn) or https redirect, finding a new connection's
// listener and giving the connection its transport, watching and
// reloading certificates.

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/acme"
	"gale/app/tlsconn"
	"gale/config"
	"gale/handlers"
)

// certPoll is how often the certificate files of the TLS listeners are
// checked for changes, off the loops.
var certPoll = 3 * time.Second

// listenerInfo is what a connection needs to know about the listener that
// accepted it. It is immutable once the server is built.
type listenerInfo struct {
	addr       netip.AddrPort    // the bound address (port resolved; the unspecified address for "all interfaces")
	tls        *tlsconn.Listener // nil for plain listeners
	toHTTPS    *httpsRedirect    // non-nil for redirect_to_https listeners
	protos     config.Protocols  // the HTTP versions it speaks (listen[].protocols), as the server started with it
	http3      bool              // HTTP/3 on the same UDP port (listen[].http3)
	altSvc     []byte            // with http3: the Alt-Svc value of its HTTP/1.1 and HTTP/2 responses (wire.HeadFields)
	proxyPr    bool              // connections open with a PROXY protocol header (listen[].proxy_protocol)
	site       *acme.Site        // the listener's automatic certificates (tls.automatic); nil for none
	front      *acmeFront        // plain listeners while automatic certificates are managed: HTTP-01 and the https redirect of managed names before routing
	deny       []netip.Prefix    // listen[].deny: closed at accept (screen.go)
	maxPerAddr int               // listen[].max_conns_per_address; 0 = no limit
}

// httpsRedirect answers every request of a redirect_to_https listener.
type httpsRedirect struct {
	port []byte // ":8443", or nil for 443
}

// setupListeners builds the per-listener state for cfg's listeners, whose
// resolved addresses are s.addrs.
func (s *Server) setupListeners(cfg *config.Config) error {
	s.listeners = make([]listenerInfo, len(cfg.Listen))
	logf := func(msg string, args ...any) { s.log.Info(msg, args...) }
	addrs := make([]netip.AddrPort, len(cfg.Listen))
	for i := range cfg.Listen {
		ap, err := netip.ParseAddrPort(s.addrs[i])
		if err != nil {
			// "host" empty: all interfaces.
			_, port, _ := net.SplitHostPort(s.addrs[i])
			p, _ := strconv.Atoi(port)
			ap = netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(p))
		}
		addrs[i] = ap
	}
	var err error
	if s.acme, s.sites, err = s.newACME(cfg, addrs); err != nil {
		return err
	}
	for i := range cfg.Listen {
		l := &cfg.Listen[i]
		ap := addrs[i]
		li := listenerInfo{addr: ap, protos: l.Protocols}
		if l.TLS != nil {
			var site *acme.Site
			if s.sites != nil {
				site = s.sites[i]
			}
			li.site = site
			tl, err := tlsconn.NewListener(i, l, logf, s.http2On, site)
			if err != nil {
				return fmt.Errorf("listen %s: %w", l.Address, err)
			}
			li.tls = tl
			s.anyTLS = true
			if l.HTTP3 {
				li.http3 = true
				li.altSvc = altSvcValue(ap.Port(), cfg.Server.HTTP3)
			}
		}
		li.proxyPr = l.ProxyProtocol
		li.deny, li.maxPerAddr = l.Deny, l.MaxConnsPerAddr
		s.listeners[i] = li
	}
	for i := range cfg.Listen {
		r := cfg.Listen[i].RedirectToHTTPS
		if r == nil {
			continue
		}
		h := &httpsRedirect{}
		if r.Listener >= 0 && r.Listener < len(s.listeners) {
			if p := s.listeners[r.Listener].addr.Port(); p != 443 {
				h.port = []byte(":" + strconv.Itoa(int(p)))
			}
		}
		s.listeners[i].toHTTPS = h
		s.anyTLS = true
	}
	if s.acme != nil {
		for i := range s.listeners {
			if li := &s.listeners[i]; li.tls == nil {
				var next handlers.Handler
				if li.toHTTPS != nil {
					next = li.toHTTPS
				}
				li.front = s.newACMEFront(next)
			}
		}
	}
	s.sameProtos = uniformProtocols(s.listeners)
	return nil
}

// uniformProtocols returns the protocols of listeners when all of them
// are plain and speak the same ones, else 0: then a connection must find
// its listener at open.
func uniformProtocols(listeners []listenerInfo) config.Protocols {
	var p config.Protocols
	for i := range listeners {
		li := &listeners[i]
		if li.tls != nil || li.toHTTPS != nil || li.proxyPr || len(li.deny) > 0 || li.maxPerAddr > 0 || (p != 0 && li.protos != p) {
			return 0
		}
		p = li.protos
	}
	return p
}

// listenerOf finds the listener that accepted c by its local address
// (gnet reports the listener's own address for accepted connections).
func (s *Server) listenerOf(c gnet.Conn) *listenerInfo {
	ta, ok := c.LocalAddr().(*net.TCPAddr)
	if !ok {
		return nil
	}
	port := uint16(ta.Port)
	var byPort *listenerInfo
	for i := range s.listeners {
		li := &s.listeners[i]
		if li.addr.Port() != port {
			continue
		}
		ip, _ := netip.AddrFromSlice(ta.IP)
		if ip.Unmap() == li.addr.Addr().Unmap() {
			return li
		}
		if byPort == nil {
			byPort = li
		}
	}
	return byPort
}

// attachTransport gives a newly opened client connection what it needs
// of its listener for its whole life: the protocols it may speak, and its
// transport (TLS, or the https redirect). When every listener is plain
// and speaks the same protocols, nothing is looked up.
func (s *Server) attachTransport(c gnet.Conn) {
	cs, ok := c.Context().(*conn)
	if !ok {
		return
	}
	if s.sameProtos != 0 {
		cs.protos = s.sameProtos
		cs.h1.SetListener(false, nil, cs.protos.H1())
		return
	}
	if li := s.listenerOf(c); li != nil {
		cs.li = li
		cs.protos = li.protos
		cs.proxyWait = li.proxyPr
		switch {
		case li.tls != nil:
			cs.tls = tlsconn.New(&cs.Conn, &cs.loop.tls, li.tls)
			cs.SetLayer(cs.tls)
			cs.h1.SetAltSvc(li.altSvc)
			cs.altSvc = li.altSvc
		case li.toHTTPS != nil:
			cs.toHTTPS = li.toHTTPS
		}
	}
	cs.h1.SetListener(cs.tls != nil, cs.redirect(), cs.protos.H1())
}

// redirect returns what answers the connection's requests before the
// routes: the listener's front (ACME challenges, then the redirect to
// https), or its redirect to https; nil for none.
func (cs *conn) redirect() handlers.Handler {
	switch {
	case cs.li != nil && cs.li.front != nil:
		return cs.li.front
	case cs.toHTTPS != nil:
		return cs.toHTTPS
	}
	return nil
}

// watchCertificates polls the TLS listeners' certificate files every
// interval until stop is closed.
func (s *Server) watchCertificates(stop <-chan struct{}, interval time.Duration) {
	if !s.anyTLS {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			for i := range s.listeners {
				if tl := s.listeners[i].tls; tl != nil {
					tl.Poll()
				}
			}
		}
	}
}

// reloadTLS applies the TLS settings of cfg (whose listen addresses are
// those running) to the running TLS listeners: certificates are read
// again, even when their files did not change. A listener that changes
// between plain, TLS and redirect, or changes its protocols, needs a
// restart; that is returned as a note.
func (s *Server) reloadTLS(cfg *config.Config) (notes []string, err error) {
	var lns []*tlsconn.Listener
	var srcs []*config.TLS
	for i := range cfg.Listen {
		if i >= len(s.listeners) {
			break
		}
		l, li := &cfg.Listen[i], &s.listeners[i]
		if (l.TLS != nil) != (li.tls != nil) || (l.RedirectToHTTPS != nil) != (li.toHTTPS != nil) {
			notes = append(notes, fmt.Sprintf("listen %s: switching between plain, TLS and redirect_to_https needs a restart", l.Address))
			continue
		}
		if l.HTTP3 != li.http3 {
			notes = append(notes, fmt.Sprintf("listen %s: http3 changed: restart gale to apply it", l.Address))
		}
		if l.Protocols != li.protos {
			notes = append(notes, fmt.Sprintf("listen %s: protocols changed to %s: restart gale to apply them (the listener keeps %s)", l.Address, l.Protocols, li.protos))
		}
		if l.TLS != nil {
			lns, srcs = append(lns, li.tls), append(srcs, l.TLS)
		}
	}
	if err := tlsconn.Reload(lns, srcs); err != nil {
		return nil, err
	}
	return append(notes, s.reloadAutomatic(cfg)...), nil
}

// URLs returns the base URL of every listener, "http://host:port" or
// "https://host:port", ports resolved, in config order.
func (s *Server) URLs() []string {
	out := make([]string, len(s.addrs))
	for i, a := range s.addrs {
		scheme := "http://"
		if i < len(s.listeners) && s.listeners[i].tls != nil {
			scheme = "https://"
		}
		out[i] = scheme + a
	}
	return out
}
