package tlsconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
)

// Handshake errors are classified into their bounded reasons; anything
// not recognised is other.
func TestReasonOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Reason
	}{
		{&net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, ReasonClientAlert},
		{errShimClosed, ReasonClosed},
		{fmt.Errorf("wrapped: %w", io.EOF), ReasonClosed},
		{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, ReasonBadRecord},
		{errors.New("tls: client offered only unsupported versions: [302 301]"), ReasonVersion},
		{errors.New("tls: no cipher suite supported by both client and server; client offered: [9c]"), ReasonCipher},
		{errors.New("tls: no key exchanges supported by both client and server"), ReasonCipher},
		{errors.New(`tls: client requested unsupported application protocols (["h3"])`), ReasonALPN},
		{errors.New("tls: oversized record received with length 20000"), ReasonBadRecord},
		{errors.New("tls: unexpected message"), ReasonBadRecord},
		{errors.New("something new"), ReasonOther},
	} {
		if got := reasonOf(c.err); got != c.want {
			t.Errorf("%v: %s, want %s", c.err, ReasonNames[got], ReasonNames[c.want])
		}
	}
}
