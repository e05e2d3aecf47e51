package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Automatic configures a TLS listener's certificates obtained from an ACME
// CA (RFC 8555) and renewed in the background: tls.automatic.
type Automatic struct {
	Domains      []string  // names managed from the start: lower case, without a trailing dot, distinct
	Email        string    // the ACME account's contact; "" = an account without one
	CA           string    // the CA's directory URL (https); default Let's Encrypt production
	CARoot       string    // absolute path of a PEM file of roots trusted for the CA's HTTPS endpoint; "" = the system's roots
	Storage      string    // absolute path of the directory certificates, keys, accounts and locks are kept in; "" with InRedis
	InRedis      bool      // they are kept in cluster.redis instead: storage "redis", or no storage given with cluster.redis
	HTTP01       bool      // answer HTTP-01 challenges on the plain listeners
	TLSALPN01    bool      // answer TLS-ALPN-01 challenges in this listener's handshakes
	RedirectHTTP bool      // default true: plain-HTTP requests for Domains are redirected to https, the challenge path excepted
	OnDemand     *OnDemand // nil = no on-demand certificates
	Pos          Pos       // where the automatic key is written
}

// OnDemand lets a handshake for a name not in Domains obtain its
// certificate, when an endpoint of the operator's approves the name.
type OnDemand struct {
	Ask      string        // http(s) URL asked with GET ?domain=NAME before a name is obtained; 200 approves
	Rate     string        // as written, e.g. "10/m"
	Interval time.Duration // approvals are spaced by this much on average (the rate)
	Burst    int           // approvals allowed at once beyond the rate
}

// ACME CA directories known by name.
const (
	LetsEncrypt        = "https://acme-v02.api.letsencrypt.org/directory"
	LetsEncryptStaging = "https://acme-staging-v02.api.letsencrypt.org/directory"
)

// Challenge types (tls.automatic.challenges).
const (
	ChallengeHTTP01    = "http-01"
	ChallengeTLSALPN01 = "tls-alpn-01"
)

const (
	maxAutomaticDomains = 1000
	defaultOnDemandRate = "10/m"
	maxOnDemandBurst    = 1000
)

var challengeOptions = []string{ChallengeHTTP01, ChallengeTLSALPN01}

var onDemandKeys = sectionKey("on_demand", "Obtain certificates for names not listed in domains, at their first handshake, when ask approves the name.",
	strKey("ask", "URL gale asks with GET ?domain=NAME before obtaining a certificate for NAME; a 200 approves it, anything else refuses.").must(),
	strKey("rate", `Approved names at most this often, as "N/s", "N/m" or "N/h"; default "10/m".`),
	intKey("burst", 0, maxOnDemandBurst, "10", "Approvals allowed at once beyond the rate."),
)

var automaticKeys = sectionKey("automatic", "Certificates obtained and renewed from an ACME CA (Let's Encrypt by default), with no restart.",
	listKey("domains", &keySpec{typ: typeString, doc: "A DNS name."}, "Names whose certificates are obtained at start and renewed in the background.").distinct(),
	strKey("email", "Contact address of the ACME account (expiry notices)."),
	strKey("ca", `The CA's ACME directory URL (https), or letsencrypt / letsencrypt-staging; default letsencrypt.`),
	strKey("ca_root", "PEM file of root certificates to trust for the CA's HTTPS endpoint (a private CA); default the system's."),
	strKey("storage", `Directory for certificates, keys, the account and locks; gale instances sharing it share certificates. "redis" keeps them in cluster.redis (under its prefix, with expiring locks), which is the default when cluster.redis is given; else the default is $STATE_DIRECTORY, else $XDG_DATA_HOME/gale, else ~/.local/share/gale.`),
	listKey("challenges", enumKey("", challengeOptions, "", ""), "Challenge types answered: http-01 on the plain listeners, tls-alpn-01 in this listener's handshakes; default both (http-01 where a plain listener exists).").atLeast(1).distinct(),
	boolKey("redirect_http", "true", "Plain-HTTP requests for the domains are redirected to https on this listener's port (the challenge path excepted)."),
	onDemandKeys,
).needsAny("domains", "on_demand")

// automaticRef is a decoded tls.automatic section and the nodes that
// checkAutomatic's messages point at.
type automaticRef struct {
	a          *Automatic
	path       string
	domains    []*yaml.Node // the items of domains, in a.Domains order
	challenges *yaml.Node   // nil when the default applies
	onDemand   *yaml.Node   // the on_demand key; nil without it
}

// automaticSection decodes tls.automatic.
func (d *decoder) automaticSection(n *yaml.Node, path string) (*Automatic, bool) {
	s := d.section(n, path, automaticKeys.names()...)
	if s == nil {
		return nil, false
	}
	a := &Automatic{CA: LetsEncrypt, HTTP01: true, TLSALPN01: true, RedirectHTTP: true, Pos: Pos{deref(n).Line, deref(n).Column}}
	k := automaticRef{a: a, path: path, challenges: s.get("challenges"), onDemand: s.key("on_demand")}
	ok := d.automaticDomains(s, path, &k)
	if v := s.get("email"); v != nil {
		if e, good := d.str(v, join(path, "email")); good {
			if msg := checkEmail(e); msg != "" {
				d.errorf(deref(v), join(path, "email"), "%s", msg)
				ok = false
			}
			a.Email = e
		} else {
			ok = false
		}
	}
	ok = d.automaticCA(s, path, a) && ok
	ok = d.automaticStorage(s, path, a) && ok
	ok = d.automaticChallenges(s, path, a) && ok
	d.setBool(s, "redirect_http", &a.RedirectHTTP)
	if v := s.get("on_demand"); v != nil {
		a.OnDemand = d.onDemand(v, join(path, "on_demand"))
		ok = ok && a.OnDemand != nil
	}
	if ok && len(a.Domains) == 0 && a.OnDemand == nil {
		d.errorf(s.node, join(path, "domains"), "missing required key; name the certificates' domains, e.g. domains: [example.com, www.example.com], or obtain them on demand with on_demand: {ask: URL}")
		ok = false
	}
	if ok {
		d.autos = append(d.autos, k)
	}
	return a, ok
}

// automaticDomains decodes domains: DNS names, lower-cased.
func (d *decoder) automaticDomains(s *section, path string, k *automaticRef) bool {
	a := k.a
	v := s.get("domains")
	if v == nil {
		return true
	}
	p := join(path, "domains")
	items, ok := d.list(v, p, "domain names")
	if len(items) > maxAutomaticDomains {
		d.errorf(deref(v), p, "at most %d domains per listener, got %d", maxAutomaticDomains, len(items))
		return false
	}
	for i, item := range items {
		name, good := d.str(item, index(p, i))
		if !good {
			ok = false
			continue
		}
		name = strings.ToLower(strings.TrimSuffix(name, "."))
		if msg := checkDomainName(name); msg != "" {
			d.errorf(item, index(p, i), "%s", msg)
			ok = false
			continue
		}
		if slices.Contains(a.Domains, name) {
			d.errorf(item, index(p, i), "domain %s is listed twice", quote(name))
			ok = false
			continue
		}
		a.Domains = append(a.Domains, name)
		k.domains = append(k.domains, item)
	}
	return ok
}

// checkEmail reports what keeps e from being an email address, or "".
func checkEmail(e string) string {
	if at := strings.IndexByte(e, '@'); at < 1 || at == len(e)-1 || strings.ContainsAny(e, " \t\r\n<>") {
		return "expected an email address such as ops@example.com, got " + quote(e)
	}
	return ""
}

// checkDomainName reports what keeps name (lower case, no trailing dot)
// from being a name an ACME CA issues a certificate for by HTTP-01 or
// TLS-ALPN-01, or "".
func checkDomainName(name string) string {
	switch {
	case name == "":
		return "expected a domain name such as example.com, got an empty string"
	case strings.HasPrefix(name, "*."):
		return fmt.Sprintf("%s is a wildcard: a CA validates wildcard names by DNS-01 only, which gale does not answer; list the names, or use on_demand", quote(name))
	case isIPLiteral(name):
		return fmt.Sprintf("%s is an IP address; automatic certificates are for DNS names", quote(name))
	case len(name) > 253:
		return fmt.Sprintf("domain name %s is longer than 253 characters", quote(name))
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Sprintf("%s is not a domain name: each dot-separated label must be 1 to 63 letters, digits or hyphens, not starting or ending with a hyphen", quote(name))
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Sprintf("%s is not a domain name: %q is not allowed (write internationalized names in punycode, xn--...)", quote(name), c)
			}
		}
	}
	return ""
}

func isIPLiteral(s string) bool {
	_, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return err == nil
}

// automaticCA decodes ca and ca_root.
func (d *decoder) automaticCA(s *section, path string, a *Automatic) bool {
	ok := true
	if v := s.get("ca"); v != nil {
		p := join(path, "ca")
		if ca, good := d.str(v, p); !good {
			ok = false
		} else {
			var msg string
			if a.CA, msg = checkCA(ca); msg != "" {
				d.errorf(deref(v), p, "%s", msg)
				ok = false
			}
		}
	}
	if v := s.get("ca_root"); v != nil {
		p := join(path, "ca_root")
		if f, good := d.str(v, p); good {
			a.CARoot = d.resolve(f)
			if msg := checkCARoot(a.CARoot); msg != "" {
				d.errorf(deref(v), p, "%s", msg)
				ok = false
			}
		} else {
			ok = false
		}
	}
	return ok
}

// checkCA returns the directory URL ca names (a URL, letsencrypt or
// letsencrypt-staging), and what is wrong with it.
func checkCA(ca string) (string, string) {
	switch ca {
	case "letsencrypt":
		return LetsEncrypt, ""
	case "letsencrypt-staging":
		return LetsEncryptStaging, ""
	}
	if u, err := url.Parse(ca); err != nil || u.Scheme != "https" || u.Host == "" {
		return ca, "expected the CA's ACME directory URL (https://...), letsencrypt or letsencrypt-staging, got " + quote(ca)
	}
	return ca, ""
}

// checkCARoot reports what keeps the file at abs from being a PEM file of
// root certificates, or "".
func checkCARoot(abs string) string {
	data, msg := readPEM(abs, "CA root")
	if msg != "" {
		return msg
	}
	if !hasPEMBlock(data, func(t string) bool { return t == "CERTIFICATE" }) {
		return quote(abs) + " holds no PEM CERTIFICATE block"
	}
	return ""
}

// automaticStorage decodes storage, or applies its default.
func (d *decoder) automaticStorage(s *section, path string, a *Automatic) bool {
	v := s.get("storage")
	if v == nil && d.shared {
		a.InRedis = true
		return true
	}
	if v == nil {
		a.Storage = DefaultACMEStorage()
		if a.Storage == "" {
			d.errorf(s.node, join(path, "storage"), "no default storage directory: neither STATE_DIRECTORY, XDG_DATA_HOME nor HOME is set; name one, e.g. storage: /var/lib/gale")
			return false
		}
		return true
	}
	p := join(path, "storage")
	dir, ok := d.str(v, p)
	if !ok {
		return false
	}
	if dir == "" {
		d.errorf(deref(v), p, "expected a directory path, got an empty string")
		return false
	}
	if dir == "redis" {
		if !d.shared {
			d.errorf(deref(v), p, `storage redis keeps certificates in the shared store: add cluster: {redis: {address: HOST:PORT}} at the top of the file, or name a directory ("./redis" for one called redis)`)
			return false
		}
		a.InRedis = true
		return true
	}
	a.Storage = d.resolve(dir)
	if fi, err := os.Stat(a.Storage); err == nil && !fi.IsDir() {
		d.errorf(deref(v), p, "%s is not a directory", quote(a.Storage))
		return false
	}
	return true
}

// DefaultACMEStorage is where automatic certificates are kept when the
// config names no storage: systemd's StateDirectory, else the XDG data
// directory; "" when the environment names none of them.
func DefaultACMEStorage() string {
	if dir, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); filepath.IsAbs(dir) {
		return dir
	}
	if dir := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "gale")
	}
	if home := os.Getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "share", "gale")
	}
	return ""
}

// automaticChallenges decodes challenges.
func (d *decoder) automaticChallenges(s *section, path string, a *Automatic) bool {
	v := s.get("challenges")
	if v == nil {
		return true
	}
	p := join(path, "challenges")
	items, ok := d.list(v, p, "challenge types")
	if ok && len(items) == 0 {
		d.errorf(deref(v), p, "expected at least one of %s", strings.Join(challengeOptions, ", "))
		return false
	}
	a.HTTP01, a.TLSALPN01 = false, false
	for i, item := range items {
		c, good := d.enum(item, index(p, i), challengeOptions...)
		if !good {
			ok = false
			continue
		}
		if (c == ChallengeHTTP01 && a.HTTP01) || (c == ChallengeTLSALPN01 && a.TLSALPN01) {
			d.errorf(item, index(p, i), "challenge %s is listed twice", c)
			ok = false
		}
		a.HTTP01 = a.HTTP01 || c == ChallengeHTTP01
		a.TLSALPN01 = a.TLSALPN01 || c == ChallengeTLSALPN01
	}
	return ok
}

// onDemand decodes on_demand.
func (d *decoder) onDemand(n *yaml.Node, path string) *OnDemand {
	s := d.section(n, path, onDemandKeys.names()...)
	if s == nil {
		return nil
	}
	o := &OnDemand{Rate: defaultOnDemandRate, Burst: 10}
	o.Interval, _ = parseRate(o.Rate)
	ok := true
	if v := s.get("ask"); v != nil {
		p := join(path, "ask")
		if ask, good := d.str(v, p); good {
			u, err := url.Parse(ask)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.errorf(deref(v), p, "expected an http:// or https:// URL that approves names, e.g. http://127.0.0.1:9123/allowed, got %s", quote(ask))
				ok = false
			}
			o.Ask = ask
		} else {
			ok = false
		}
	} else if s.missing("ask") {
		d.errorf(s.node, join(path, "ask"), "missing required key: on-demand certificates are obtained only for names an endpoint of yours approves, e.g. ask: http://127.0.0.1:9123/allowed")
		ok = false
	}
	if v := s.get("rate"); v != nil {
		p := join(path, "rate")
		if r, good := d.str(v, p); good {
			if iv, msg := parseRate(r); msg != "" {
				d.errorf(deref(v), p, "%s", msg)
				ok = false
			} else {
				o.Rate, o.Interval = r, iv
			}
		} else {
			ok = false
		}
	}
	if v := s.get("burst"); v != nil {
		if b, good := d.integer(v, join(path, "burst"), 0, maxOnDemandBurst); good {
			o.Burst = int(b)
		} else {
			ok = false
		}
	}
	if !ok {
		return nil
	}
	return o
}

// checkAutomatic checks what spans listeners: a domain managed by two
// listeners, and http-01 named explicitly with no plain listener to
// answer it on. Where http-01 is the default and no plain listener
// exists, only tls-alpn-01 is answered.
func (d *decoder) checkAutomatic(ls []Listener) {
	plain := slices.ContainsFunc(ls, func(l Listener) bool { return l.TLS == nil })
	owner := map[string]*yaml.Node{}
	var demand *automaticRef
	for _, k := range d.autos {
		if k.a.OnDemand != nil {
			if demand != nil {
				d.errorf(k.onDemand, join(k.path, "on_demand"), "on_demand is set on another listener too (line %d); certificates obtained on demand are kept by one listener's settings, so set it on one", demand.onDemand.Line)
			} else {
				demand = &k
			}
		}
		for i, name := range k.a.Domains {
			if first, dup := owner[name]; dup {
				d.errorf(k.domains[i], index(join(k.path, "domains"), i), "domain %s is managed by another listener too (line %d); list it under one", quote(name), first.Line)
				continue
			}
			owner[name] = k.domains[i]
		}
		if plain || !k.a.HTTP01 {
			continue
		}
		if k.challenges != nil {
			d.errorf(deref(k.challenges), join(k.path, "challenges"), "http-01 is answered on a plain listener, and none is configured; add one (e.g. \":80\") or write challenges: [tls-alpn-01]")
		}
		k.a.HTTP01 = false
	}
}
