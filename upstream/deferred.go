package upstream

// Deferred is how an exchange survives its own callbacks. While it is
// busy (inside a write to its client or to its connection, which may call
// back into it), a callback that would end it (the client closed, the
// connection was lost, a fault found) only records what happened; the
// code that made it busy acts on it once done, with Settle. Embed it in
// the exchange; its zero value is not busy and has nothing recorded.
type Deferred struct {
	Busy       bool   // inside such a section
	ClientGone bool   // the client closed during one
	Fault      int    // a failure found during one: the status to answer (0 = none)
	Why        string // the failure's reason

	connGone bool  // the connection closed during one,
	connErr  error // for this reason
}

// ClientClosed records that the client closed, when busy; it reports
// whether it did (false: end the exchange now).
func (d *Deferred) ClientClosed() bool {
	if d.Busy {
		d.ClientGone = true
	}
	return d.Busy
}

// ConnLost records that the connection closed, for reason err, when
// busy; it reports whether it did (false: handle the loss now).
func (d *Deferred) ConnLost(err error) bool {
	if d.Busy && !d.connGone {
		d.connGone, d.connErr = true, err
	}
	return d.Busy
}

// ConnGone reports whether a lost connection is recorded.
func (d *Deferred) ConnGone() bool { return d.connGone }

// ForgetConn drops a recorded loss of the connection (one the exchange
// replaced).
func (d *Deferred) ForgetConn() { d.connGone, d.connErr = false, nil }

// Settle acts on what was recorded, first found first: abort when the
// client is gone, fail with a fault's status and reason, lost with the
// connection's loss. It reports whether one of them ran: the exchange
// ended or moved on, and the caller must not touch it further.
func (d *Deferred) Settle(abort func(), fail func(status int, why string), lost func(err error)) bool {
	switch {
	case d.ClientGone:
		abort()
		return true
	case d.Fault != 0:
		status := d.Fault
		d.Fault = 0
		fail(status, d.Why)
		return true
	case d.connGone:
		err := d.connErr
		d.ForgetConn()
		lost(err)
		return true
	}
	return false
}

// EndOnClose is an exchange's answer to its client closing
// (handlers.Pending.Closed): abort now, or, inside a busy section, once
// the section ends (Settle).
func (d *Deferred) EndOnClose(abort func()) {
	if !d.ClientClosed() {
		abort()
	}
}

// Begin makes an exchange's first attempt from its handler's Serve:
// attempt(false) picks an upstream and sends the head on a pooled
// connection or dials one. It returns 0 when the exchange is under way,
// 502 when no upstream is left to try, or the status of a fault found as
// the head was written (the pooled connection died, and the request may
// not be repeated), after drop let go of that connection.
func (d *Deferred) Begin(attempt func(fresh bool) bool, drop func()) int {
	if !attempt(false) {
		return 502
	}
	if d.Fault != 0 {
		drop()
		return d.Fault
	}
	return 0
}
