package config

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// BasicAuth is a route's basic_auth section: HTTP Basic authentication
// (RFC 7617) against bcrypt hashes.
type BasicAuth struct {
	Realm   string            // the realm named in WWW-Authenticate, default "gale"
	Users   map[string]string // user name -> bcrypt hash, inline ones and the htpasswd file's
	File    string            // the htpasswd file, resolved; "" = none
	Forward bool              // forward_authorization: send the Authorization field upstream (proxy routes)
}

var basicAuthKeys = sectionKey("basic_auth", "HTTP Basic authentication (RFC 7617) against bcrypt hashes; 401 with WWW-Authenticate without valid credentials (with no user named, every request).",
	strKey("realm", `The realm WWW-Authenticate names; default "gale".`),
	mapKeyOf("users", `^[^:\x00-\x1f\x7f]{1,64}$`, strKey("", `A bcrypt hash ("$2y$...", "$2b$...", "$2a$..."), as "gale hash-password" prints.`), "User name -> bcrypt hash."),
	strKey("htpasswd", `An htpasswd file of "user:bcrypt-hash" lines (htpasswd -B); read at load and on reload.`),
	boolKey("forward_authorization", "false", "Send the client's Authorization field to the upstream or FastCGI application (HTTP_AUTHORIZATION); by default it stops at gale."),
)

// basicAuth decodes a route's basic_auth section.
func (d *decoder) basicAuth(n *yaml.Node, path string) *BasicAuth {
	s := d.section(n, path, basicAuthKeys.names()...)
	if s == nil {
		return nil
	}
	ba := &BasicAuth{Realm: "gale", Users: map[string]string{}}
	if v := s.get("realm"); v != nil {
		if r, ok := d.str(v, join(path, "realm")); ok {
			if r == "" || strings.ContainsAny(r, "\"\\\r\n") {
				d.errorf(deref(v), join(path, "realm"), `expected a realm without quotes, backslashes or line breaks, such as "staff", got %s`, quote(r))
			} else {
				ba.Realm = r
			}
		}
	}
	if v := s.get("users"); v != nil {
		list, _ := d.pairs(v, join(path, "users"))
		for _, e := range list {
			p := mapKey(join(path, "users"), e.key.Value)
			if hash, ok := d.checkedStr(e.val, p, checkBcrypt); ok {
				ba.Users[e.key.Value] = hash
			}
		}
	}
	if v, p, f, ok := d.strKey(s, path, "htpasswd"); ok {
		ba.File = d.resolve(f)
		if msg := readHtpasswd(ba.File, ba.Users); msg != "" {
			d.errorf(deref(v), p, "%s", msg)
		}
	}
	d.setBool(s, "forward_authorization", &ba.Forward)
	return ba
}

// checkBcrypt says what is wrong with a bcrypt hash, or "".
func checkBcrypt(hash string) string {
	if !strings.HasPrefix(hash, "$2a$") && !strings.HasPrefix(hash, "$2b$") && !strings.HasPrefix(hash, "$2y$") {
		return `expected a bcrypt hash such as "$2y$10$..." (gale hash-password prints one), got ` + quote(hash)
	}
	if _, err := bcrypt.Cost([]byte(hash)); err != nil {
		return "not a bcrypt hash: " + err.Error()
	}
	return ""
}

// readHtpasswd adds the users of an htpasswd file to users, and says what
// is wrong with it, or "".
func readHtpasswd(file string, users map[string]string) string {
	f, err := os.Open(file)
	if err != nil {
		return "cannot read the htpasswd file: " + err.Error()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || t[0] == '#' {
			continue
		}
		name, hash, ok := strings.Cut(t, ":")
		if !ok || name == "" {
			return file + ":" + strconv.Itoa(line) + `: expected "user:hash"`
		}
		if msg := checkBcrypt(hash); msg != "" {
			return file + ":" + strconv.Itoa(line) + ": " + name + ": " + msg + " (htpasswd -B makes bcrypt hashes)"
		}
		users[name] = hash
	}
	if err := sc.Err(); err != nil {
		return "cannot read the htpasswd file: " + err.Error()
	}
	return ""
}
