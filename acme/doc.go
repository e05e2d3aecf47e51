// Package acme keeps the certificates of the listeners whose tls.automatic
// section names them: obtained from an ACME CA (RFC 8555) at start or at a
// first handshake (on demand), renewed in the background, shared through a
// storage directory with other gale instances. It wraps
// github.com/caddyserver/certmagic, which does the protocol, the storage and
// its locking, renewal and retries.
//
// The server asks three things of it, none of them on an event loop:
//   - a certificate for a handshake (Site.Certificate, from the handshake's
//     goroutine), including the TLS-ALPN-01 challenge certificate when the
//     client offers only "acme-tls/1";
//   - the key authorization of an HTTP-01 challenge (Manager.AnswerHTTP01,
//     which may read storage when another instance started the challenge);
//   - which names to redirect from plain HTTP, and on what port
//     (Manager.RedirectPort, a map read that is safe on a loop).
//
// certmagic never binds a port of its own: each challenge solver is told
// the address of the gale listener that answers it, which gale holds, so
// certmagic finds it taken and leaves the answer to gale.
package acme
