package tlsconn

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
)

// Handshake outcomes, for the metrics: every TLS connection ends its
// handshake once, as a success or as a failure of one reason from a fixed
// set, counted by its loop (HandshakeStats, written on the loop only).

// Reason is why a handshake failed.
type Reason uint8

// The reasons a handshake fails.
const (
	ReasonTimeout     Reason = iota // tls.handshake_timeout or client_hello_timeout passed
	ReasonNotTLS                    // the first bytes are not a TLS ClientHello
	ReasonBadRecord                 // a malformed or oversized record, or an unexpected message
	ReasonVersion                   // no TLS version both sides support
	ReasonCipher                    // no cipher suite, key exchange, curve or signature both support
	ReasonALPN                      // no application protocol both support
	ReasonClientAlert               // the client sent an alert (it rejected the certificate, say)
	ReasonClosed                    // the client went away before the handshake ended
	ReasonRefused                   // the client's address holds its share of handshake slots
	ReasonOther
	NumReasons
)

// ReasonNames are the reason label values.
var ReasonNames = [NumReasons]string{"timeout", "not_tls", "bad_record", "version", "cipher", "alpn", "client_alert", "closed", "refused", "other"}

// HandshakeStats are one loop's handshake counters. The loop writes them;
// anyone reads them.
type HandshakeStats struct {
	Done         atomic.Uint64             // handshakes that succeeded
	UnknownName  atomic.Uint64             // of those, ones whose server name matched no certificate (the default one answered)
	Failed       [NumReasons]atomic.Uint64 // handshakes that failed, by reason
	Resumed      atomic.Uint64             // of those that succeeded, resumed sessions
	TLS13, TLS12 atomic.Uint64             // of those that succeeded, by version
}

// fail counts the connection's handshake as failed for reason r, once.
func (t *Conn) fail(r Reason) {
	if t.counted {
		return
	}
	t.counted = true
	t.lp.Stats.Failed[r].Add(1)
}

// succeed counts the connection's handshake as done, once, with what its
// session state says.
func (t *Conn) succeed() {
	if t.counted {
		return
	}
	t.counted = true
	t.lp.Stats.Done.Add(1)
	st := t.tc.ConnectionState()
	t.countSession(&st)
}

// countSession counts what a successful handshake's state says.
func (t *Conn) countSession(st *tls.ConnectionState) {
	s := &t.lp.Stats
	if st.DidResume {
		s.Resumed.Add(1)
	}
	if st.Version == tls.VersionTLS13 {
		s.TLS13.Add(1)
	} else {
		s.TLS12.Add(1)
	}
	if st.ServerName != "" && !t.ln.cur.Load().certs.names(st.ServerName) && (t.ln.site == nil || !t.ln.site.Covers(st.ServerName)) {
		s.UnknownName.Add(1)
	}
}

// countAtClose counts, as its connection closes, the outcome of a
// handshake the loop did not count: one that ended before the loop took
// its outcome up (a client may close as soon as its side is done) as it
// ended, any other (that never began, or waited for a slot) as closed.
// It does nothing when the outcome was counted.
func (t *Conn) countAtClose() {
	switch {
	case t.counted:
	case t.phase == tlsHandshaking && t.hsErr == nil:
		t.succeed()
	case t.phase == tlsHandshaking:
		t.fail(reasonOf(t.hsErr))
	default:
		t.fail(ReasonClosed)
	}
}

// orphaned is called by the loop as the connection closes while its
// handshake goroutine may still run: it reports whether that goroutine
// is still running, and if so leaves the outcome to it (countOrphan).
func (s *shim) orphaned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.orphan = true
	return true
}

// endHandshake is called by the handshake goroutine as it returns: it
// reports whether the connection closed meanwhile, leaving the outcome
// to the goroutine.
func (s *shim) endHandshake() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	return s.orphan
}

// countOrphan counts, from the handshake goroutine, the outcome of a
// handshake whose connection closed before it ended: what crypto/tls
// made of the bytes that arrived before the close. This is the one write
// to a loop's handshake counters from off the loop (atomic, and once per
// connection at most); the loop counts nothing more for the connection.
func (t *Conn) countOrphan(err error) {
	s := &t.lp.Stats
	if err != nil {
		s.Failed[reasonOf(err)].Add(1)
		return
	}
	s.Done.Add(1)
	st := t.tc.ConnectionState()
	t.countSession(&st)
}

// reasonOf classifies a handshake error of crypto/tls.
func reasonOf(err error) Reason {
	var op *net.OpError
	var rh tls.RecordHeaderError
	switch {
	case errors.As(err, &op) && op.Op == "remote error":
		return ReasonClientAlert
	case errors.Is(err, errShimClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return ReasonClosed
	case errors.As(err, &rh):
		return ReasonBadRecord
	}
	msg := err.Error()
	for _, c := range reasonTexts {
		if strings.Contains(msg, c.text) {
			return c.r
		}
	}
	return ReasonOther
}

// reasonTexts classify crypto/tls's handshake errors by their text, which
// is all crypto/tls offers (the tests pin each against a real client).
var reasonTexts = []struct {
	text string
	r    Reason
}{
	{"unsupported versions", ReasonVersion},
	{"protocol version not supported", ReasonVersion},
	{"no cipher suite supported", ReasonCipher},
	{"no key exchanges supported", ReasonCipher},
	{"elliptic curve", ReasonCipher},
	{"incompatible point formats", ReasonCipher},
	{"signature", ReasonCipher},
	{"unsupported application protocol", ReasonALPN},
	{"oversized record", ReasonBadRecord},
	{"unexpected message", ReasonBadRecord},
	{"malformed", ReasonBadRecord},
	{"bad record MAC", ReasonBadRecord},
}
