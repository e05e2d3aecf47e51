package h2conn

// Deferred dispatch of forwarded streams. A stream on a route that
// forwards (a proxy or FastCGI route), or whose forward_auth asks a
// service, costs an upstream connection and an upstream request once it
// is dispatched, however soon the client resets
// it: Rapid Reset (CVE-2023-44487) sends HEADERS and RST_STREAM together,
// so that every reset stream costs the server a request and the client
// nothing. Such a stream's request is copied out of the core's memory
// when its head arrives and dispatched only after the whole read batch
// was fed to the core: a stream reset in the same batch ends before its
// handler ever runs (Reset drops it), and no upstream sees it. Streams on
// the loop's own handlers (static files, respond, redirect) are answered
// at once, as before: answering them costs less than keeping them.

// deferForward holds the new stream of ex for dispatch at the end of the
// read batch when its route forwards, and reports whether it did. Its
// request is copied out of the core's memory, and its body (if any) is
// kept as it arrives, for the handler to read once dispatched.
func (h *Conn) deferForward(ex *exchange) bool {
	if ex.s.TooLarge {
		return false
	}
	set := h.wc.Loop.Shared.Set.Load()
	if !set.Forwards || h.redirect != nil {
		return false
	}
	reads, costs := set.Router.UpstreamUse(&ex.ctx)
	if !costs || !reads && ex.s.BodyFollows {
		// A local handler (a route with forward_auth asks its service
		// once the body it does not read has ended) is answered as
		// any other.
		return false
	}
	ex.keepRequest()
	ex.keepBody = reads && ex.s.BodyFollows
	ex.deferred = ex.keepBody
	ex.bodySince = h.wc.LastActive
	ex.dispatch = true
	h.toDispatch = append(h.toDispatch, ex)
	return true
}

// dispatchDeferred dispatches the streams deferForward held during the
// read batch that just ended, unless they were reset (or ended) since.
func (h *Conn) dispatchDeferred() {
	for i, ex := range h.toDispatch {
		h.toDispatch[i] = nil
		if ex.dispatch && ex.s != nil && !h.wc.Dead {
			ex.dispatchNow()
		}
	}
	h.toDispatch = h.toDispatch[:0]
}

// dispatchNow serves a held stream: with its body still arriving, the
// handler gets it as it comes (serveWithBody); with its request complete,
// it is run as any other.
func (ex *exchange) dispatchNow() {
	ex.dispatch = false
	if !ex.h.takeShare(ex) {
		ex.keepBody = false
		ex.answerNow(503) // share.go
		return
	}
	if ex.deferred {
		ex.serveWithBody()
		return
	}
	ex.run()
}

// heldData takes body bytes of a stream still held for dispatch: they are
// kept for the handler, and its end recorded. It reports whether the
// stream is held.
func (ex *exchange) heldData(end bool) bool {
	if !ex.dispatch {
		return false
	}
	if end {
		ex.deferred = false
	}
	return true
}
