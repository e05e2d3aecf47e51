package h2

// onSettings applies the peer's SETTINGS (RFC 9113 section 6.5) and
// acknowledges them, or records the acknowledgement of ours.
func (c *Conn) onSettings(fh FrameHeader, p []byte) *Error {
	n, err := ParseSettings(fh, p)
	if err != nil {
		return err.(*Error)
	}
	if fh.Flags.Has(FlagAck) {
		c.settingsAcked()
		return c.budget.idle()
	}
	if c.state&flagPeerSet != 0 {
		if e := c.budget.idle(); e != nil {
			return e
		}
	}
	c.state |= flagPeerSet
	win := c.peerWin
	for i := 0; i < n; i++ {
		s := SettingAt(p, i)
		if e := checkSetting(s); e != nil {
			return e
		}
		switch s.ID {
		case SettingInitialWindowSize:
			win = int64(s.Val)
		case SettingMaxFrameSize:
			c.peerMax = s.Val
		}
		// SETTINGS_HEADER_TABLE_SIZE limits a dynamic table our encoder
		// never uses; MAX_CONCURRENT_STREAMS limits pushes we never make;
		// MAX_HEADER_LIST_SIZE is advisory (section 6.5.2).
	}
	if e := c.peerInitialWindow(win); e != nil {
		return e
	}
	c.out = AppendSettingsAck(c.out)
	return c.queuedControl()
}

// peerInitialWindow applies a new SETTINGS_INITIAL_WINDOW_SIZE: every
// stream's send window moves by the difference (RFC 9113 section 6.9.2),
// and one pushed past 2^31-1 is a connection error of type
// FLOW_CONTROL_ERROR. Only the last value of one frame is applied.
func (c *Conn) peerInitialWindow(win int64) *Error {
	d := win - c.peerWin
	if d == 0 {
		return nil
	}
	c.peerWin = win
	for i := range c.streams {
		if s := &c.streams[i]; s.state != stateFree {
			s.sendWindow += d
			if s.sendWindow > maxWindow {
				return errWindowOverflow
			}
		}
	}
	if d > 0 {
		c.wakeBlocked()
	}
	return nil
}

// settingsAcked records the peer's acknowledgement of our SETTINGS (RFC
// 9113 section 6.5.3): from now on it uses our initial stream window, which
// open streams started above when it is below 65535.
func (c *Conn) settingsAcked() {
	if c.state&flagAcked != 0 {
		return
	}
	c.state |= flagAcked
	if d := int64(c.cfg.InitialStreamWindow) - initialWindow; d < 0 {
		for i := range c.streams {
			if s := &c.streams[i]; s.state != stateFree {
				s.recvWindow += d
			}
		}
	}
}
