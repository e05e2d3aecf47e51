package h2

// Defences against the published HTTP/2 denial-of-service classes (RFC
// 9113 section 10.5). Each bounds work or memory a peer can cause without
// making progress:
//
//   - Rapid Reset (CVE-2023-44487) and MadeYouReset (CVE-2025-8671): every
//     stream the peer resets, and every RST_STREAM the peer makes us send
//     (malformed requests, refused streams, frames on closed streams, bad
//     window updates, bodies over the limit), takes one from a reset budget
//     of max(2*MaxConcurrentStreams, 100), refilled by a quarter for each
//     stream that completes normally: completed streams cannot refill it
//     as fast as resets drain it unless they outnumber the resets four to
//     one, so a client that finishes one cheap stream per reset is cut
//     off all the same. Empty, the connection fails with
//     ENHANCE_YOUR_CALM. Conn.Resets counts them all, so that the engine
//     can charge them to the client's address and the event loop as well
//     (a budget per connection alone is escaped by reconnecting).
//   - Frames without progress (SETTINGS, PING, WINDOW_UPDATE and PRIORITY
//     floods, empty DATA and CONTINUATION frames, frames of unknown type
//     or on closed streams, and every CONTINUATION frame): each takes one from a budget of 1000,
//     refilled by one for every 4 KiB of DATA payload either way and by 8
//     for each stream that completes normally. Empty: ENHANCE_YOUR_CALM.
//     A WINDOW_UPDATE that returns credit for DATA we sent on its stream
//     (or, on stream 0, on the connection) since the previous one is
//     progress, not counted: a client that acknowledges every frame,
//     however small the frames its window allows, must never be cut off,
//     while updates that follow no DATA are a flood like any other.
//   - Queued control output: a frame the peer makes us queue (SETTINGS
//     ACK, PING ACK, RST_STREAM) while SetBacklog's figure plus len(Out)
//     is over 64 KiB counts; over 100 of them before the output drains
//     below that: ENHANCE_YOUR_CALM.
//   - CONTINUATION flood (CVE-2024-27316): the header block gathered across
//     CONTINUATION frames is bounded by 2*MaxHeaderListSize+4 KiB (headers.go);
//     over it: ENHANCE_YOUR_CALM. Every CONTINUATION frame counts as above.
//   - HPACK bomb: the decoded list is bounded by MaxHeaderListSize (RFC
//     7541 section 4.1 accounting) by the decoder, which keeps decoding to
//     stay in sync but keeps no more; the stream is delivered with TooLarge
//     set and the engine answers 431.
//   - Too many streams: one past MaxConcurrentStreams is refused with
//     RST_STREAM REFUSED_STREAM (RFC 9113 section 5.1.2), counted as above.
//   - Windows: DATA beyond a receive window is FLOW_CONTROL_ERROR (section
//     6.9.1), on the connection or the stream.

const (
	idleBudget        = 1000     // frames without progress
	idleRefillBytes   = 4096     // payload bytes per frame of refill
	idleRefillStream  = 8        // frames of refill per completed stream
	minResetBudget    = 100      // resets, at the least
	resetCost         = 4        // what a reset takes from the reset budget; a completed stream gives back 1
	maxControlBacklog = 64 << 10 // queued output over which control frames count
	maxControlOver    = 100      // control frames queued over it
)

var (
	errResetFlood   = connErr(EnhanceYourCalm, "too many streams reset")
	errIdleFlood    = connErr(EnhanceYourCalm, "too many frames without progress")
	errControlFlood = connErr(EnhanceYourCalm, "too many control frames queued")
)

// defenceBudget holds the budgets above.
type defenceBudget struct {
	resets, maxResets int    // reset budget, in quarters of a reset (resetCost)
	nresets           uint64 // resets counted, ever (Conn.Resets)
	idleN             int    // frames without progress still allowed
	bytes             int    // payload bytes towards the next refill
	ctlOver           int    // control frames queued over the backlog bound
}

func (b *defenceBudget) init(cfg *Config) {
	n := resetCost * max(2*int(cfg.MaxConcurrentStreams), minResetBudget)
	*b = defenceBudget{resets: n, maxResets: n, idleN: idleBudget}
}

// idle counts a frame that carries no progress.
func (b *defenceBudget) idle() *Error {
	if b.idleN--; b.idleN < 0 {
		return errIdleFlood
	}
	return nil
}

// windowUpdate counts a WINDOW_UPDATE, unless DATA went out on its stream
// (or the connection) since the previous one: sent reports that, and is
// cleared.
func (b *defenceBudget) windowUpdate(sent *bool) *Error {
	if *sent {
		*sent = false
		return nil
	}
	return b.idle()
}

// progress refills the idle budget for n payload bytes.
func (b *defenceBudget) progress(n int) {
	b.bytes += n
	if b.bytes >= idleRefillBytes {
		b.idleN = min(b.idleN+b.bytes/idleRefillBytes, idleBudget)
		b.bytes %= idleRefillBytes
	}
}

// completed refills both budgets for a stream that completed normally:
// the reset budget by a quarter of a reset.
func (b *defenceBudget) completed() {
	b.resets = min(b.resets+1, b.maxResets)
	b.idleN = min(b.idleN+idleRefillStream, idleBudget)
}

// peerReset counts a stream the peer reset (Rapid Reset).
func (b *defenceBudget) peerReset() *Error {
	b.nresets++
	if b.resets -= resetCost; b.resets < 0 {
		return errResetFlood
	}
	return nil
}

// madeReset counts a RST_STREAM the peer made us send (MadeYouReset).
func (b *defenceBudget) madeReset() *Error { return b.peerReset() }

// drained records how much output still waits: below the bound, the count
// of control frames queued over it starts again.
func (b *defenceBudget) drained(waiting int) {
	if waiting <= maxControlBacklog {
		b.ctlOver = 0
	}
}

// Resets is how many streams the connection reset so far, by the peer
// (RST_STREAM) or because the peer made us (RFC 9113 section 10.5;
// CVE-2023-44487, CVE-2025-8671). The engine charges them to budgets
// that outlive the connection.
func (c *Conn) Resets() uint64 { return c.budget.nresets }

// queuedControl counts a control frame the peer made us queue while the
// output waiting downstream is over its bound.
func (c *Conn) queuedControl() *Error {
	if c.backlog+len(c.out) <= maxControlBacklog {
		return nil
	}
	if c.budget.ctlOver++; c.budget.ctlOver > maxControlOver {
		return errControlFlood
	}
	return nil
}
