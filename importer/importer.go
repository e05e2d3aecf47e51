// Package importer turns nginx configurations and Caddyfiles into gale's
// YAML: the common subset each format shares with gale is carried over,
// and every directive that is not is reported with its file and line, so
// that a migration is a review of a short list rather than a rewrite.
package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Note is a directive the importer could not carry over, or carried with
// a difference worth reading.
type Note struct {
	File      string
	Line      int
	Directive string
	Why       string
}

func (n Note) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", n.File, n.Line, n.Directive, n.Why)
}

// Result is a converted config: gale YAML and the notes.
type Result struct {
	YAML  []byte
	Notes []Note
}

// Format is a source format.
type Format string

const (
	Nginx Format = "nginx"
	Caddy Format = "caddy"
)

// Detect guesses the format of the file at path: by its name first
// (Caddyfile, *.caddyfile; nginx.conf, *.conf), then by its text (a line
// ending in ";" is nginx's).
func Detect(path string, data []byte) (Format, error) {
	base := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasPrefix(base, "caddyfile") || strings.HasSuffix(base, ".caddyfile") || strings.HasSuffix(base, ".caddy"):
		return Caddy, nil
	case strings.HasSuffix(base, ".conf") || strings.HasPrefix(base, "nginx"):
		return Nginx, nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, ";") {
			return Nginx, nil
		}
	}
	if len(data) > 0 {
		return Caddy, nil
	}
	return "", fmt.Errorf("%s: cannot tell nginx from Caddyfile; give --from nginx or --from caddy", path)
}

// File converts the file at path from format f ("" to detect it).
func File(path string, f Format) (*Result, error) {
	if f == "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if f, err = Detect(path, data); err != nil {
			return nil, err
		}
	}
	switch f {
	case Nginx:
		return FromNginx(path)
	case Caddy:
		return FromCaddyfile(path)
	}
	return nil, fmt.Errorf("unknown format %q: nginx or caddy", f)
}

// header is the comment at the top of every converted file.
func header(src string, f Format, notes int) string {
	s := fmt.Sprintf("Converted from %s (%s) by gale import.", src, f)
	if notes > 0 {
		s += fmt.Sprintf("\n%d directive(s) were not carried over or differ; gale import lists them on stderr.", notes)
	}
	return s
}

// served is where a block whose routes take any host listens, for
// portNotes.
type served struct {
	note  Note
	addrs []string
}

// portNotes says, for each block of routes without a host that listens
// on some of the listeners only, that gale routes by host and not by
// port: its routes answer on every listener that serves routes.
func portNotes(blocks []served, order []string, listeners map[string]*obj) []Note {
	var all []string
	for _, a := range order {
		if listeners[a].get("redirect_to_https") == nil {
			all = append(all, a)
		}
	}
	var out []Note
	if len(all) < 2 {
		return nil
	}
	for _, b := range blocks {
		missing := false
		for _, a := range all {
			missing = missing || !contains(b.addrs, a)
		}
		if !missing {
			continue
		}
		n := b.note
		n.Why = fmt.Sprintf("listens on %s only; gale routes by host, not by port, so its routes answer on every listener (%s)",
			strings.Join(b.addrs, ", "), strings.Join(all, ", "))
		out = append(out, n)
	}
	return out
}

// dropConflicts keeps the first of two routes that gale could not order
// (the same host, path and exact path, both or neither with a regex, as
// many kinds of matchers, and nothing telling them apart), as config
// would refuse them: blocks that nginx or Caddy tell apart by port are
// the usual cause.
func dropConflicts(routes []*obj) ([]*obj, []Note) {
	var out []*obj
	var notes []Note
	for _, r := range routes {
		var clash *obj
		for _, k := range out {
			if routeConflict(k, r) {
				clash = k
				break
			}
		}
		if clash == nil {
			out = append(out, r)
			continue
		}
		n := r.origin
		n.Why = fmt.Sprintf("left out: gale cannot tell its route from the one of %s:%d (same host and path; gale routes by host and path, not by port)", clash.origin.File, clash.origin.Line)
		notes = append(notes, n)
	}
	return out, notes
}

// routeConflict is config.RoutesConflict on the routes as written.
func routeConflict(a, b *obj) bool {
	if a.get("host") != b.get("host") || a.get("path") != b.get("path") {
		return false
	}
	ma, _ := a.get("match").(*obj)
	mb, _ := b.get("match").(*obj)
	if ma == nil {
		ma = newObj()
	}
	if mb == nil {
		mb = newObj()
	}
	if ma.get("path") != mb.get("path") {
		return false
	}
	ra, _ := ma.get("path_regex").(string)
	rb, _ := mb.get("path_regex").(string)
	if (ra == "") != (rb == "") || kinds(ma) != kinds(mb) {
		return false
	}
	if ra != "" && !literalsOverlap(ra, rb) {
		return false
	}
	if xa, ok := ma.get("methods").([]string); ok {
		if xb, ok := mb.get("methods").([]string); ok && !slices.ContainsFunc(xa, func(m string) bool { return slices.Contains(xb, m) }) {
			return false
		}
	}
	return true
}

// kinds counts the matcher kinds gale orders routes by.
func kinds(m *obj) int {
	n := 0
	for _, k := range []string{"methods", "headers", "query", "remote"} {
		if m.get(k) != nil {
			n++
		}
	}
	return n
}
