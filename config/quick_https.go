package config

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// QuickHTTPS is what the flags of `gale file-server --domain` and `gale
// reverse-proxy --from NAME` say about automatic HTTPS.
type QuickHTTPS struct {
	Domains []string // the names to obtain certificates for
	HTTPS   string   // the TLS listener's address; "" = ":443"
	HTTP    string   // the plain listener's address (HTTP-01, redirect to https); "" = ":80"
	Email   string
	CA      string // "" = Let's Encrypt production
	CARoot  string // relative to the working directory
	Storage string // "" = DefaultACMEStorage; relative to the working directory
}

// UseAutomatic makes c, a config of a command without a file
// (ForDirectory, ForProxy), serve its routes over HTTPS on q.HTTPS with
// certificates obtained automatically for q.Domains, and answer on q.HTTP
// the CA's HTTP-01 challenges and redirects to https. On failure the error
// is an ErrorList whose errors name the offending flag as Key ("domain",
// "https", "http", "email", "ca", "ca-root", "storage"), and c is
// unchanged.
func (c *Config) UseAutomatic(q QuickHTTPS) error {
	a := &Automatic{CA: LetsEncrypt, HTTP01: true, TLSALPN01: true, RedirectHTTP: true, Email: q.Email}
	var errs ErrorList
	bad := func(key, msg string) { errs = append(errs, &Error{Key: key, Msg: msg}) }
	if len(q.Domains) == 0 {
		bad("domain", "expected at least one domain name, e.g. example.com")
	}
	if len(q.Domains) > maxAutomaticDomains {
		bad("domain", "at most "+strconv.Itoa(maxAutomaticDomains)+" domains")
	}
	for _, d := range q.Domains {
		d = strings.ToLower(strings.TrimSuffix(d, "."))
		if msg := checkDomainName(d); msg != "" {
			bad("domain", msg)
		} else if slices.Contains(a.Domains, d) {
			bad("domain", "domain "+quote(d)+" is listed twice")
		}
		a.Domains = append(a.Domains, d)
	}
	https, http := orDefault(q.HTTPS, ":443"), orDefault(q.HTTP, ":80")
	if msg := checkAddress(https); msg != "" {
		bad("https", msg)
	}
	if msg := checkAddress(http); msg != "" {
		bad("http", msg)
	}
	if q.Email != "" {
		if msg := checkEmail(q.Email); msg != "" {
			bad("email", msg)
		}
	}
	if q.CA != "" {
		var msg string
		if a.CA, msg = checkCA(q.CA); msg != "" {
			bad("ca", msg)
		}
	}
	if q.CARoot != "" {
		a.CARoot = c.abs(q.CARoot)
		if msg := checkCARoot(a.CARoot); msg != "" {
			bad("ca-root", msg)
		}
	}
	a.Storage = DefaultACMEStorage()
	if q.Storage != "" {
		a.Storage = c.abs(q.Storage)
	}
	if a.Storage == "" {
		bad("storage", "no default storage directory: neither STATE_DIRECTORY, XDG_DATA_HOME nor HOME is set; name one")
	} else if fi, err := os.Stat(a.Storage); err == nil && !fi.IsDir() {
		bad("storage", quote(a.Storage)+" is not a directory")
	}
	if len(errs) > 0 {
		return errs
	}
	t := &TLS{MinVersion: "1.2", HandshakeTimeout: defaultHandshakeTimeout, ClientHelloTimeout: defaultClientHelloTimeout,
		MaxHandshakes: defaultMaxHandshakes, MaxHandshakesPerAddress: max(1, defaultMaxHandshakes/perAddressDivisor), Automatic: a}
	c.Listen = []Listener{
		{Address: http, Protocols: DefaultProtocols(false)},
		{Address: https, TLS: t, Protocols: DefaultProtocols(true)},
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// abs resolves p against the config's directory.
func (c *Config) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.Dir, p)
}
