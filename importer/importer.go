// Package importer turns nginx configurations and Caddyfiles into gale's
// YAML: the common subset each format shares with gale is carried over,
// and every directive that is not is reported with its file and line, so
// that a migration is a review of a short list rather than a rewrite.
package importer

import (
	"fmt"
	"os"
	"path/filepath"
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
