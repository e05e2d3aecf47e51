package config

import (
	"fmt"
	"strconv"
	"strings"
)

// A Template is a string with placeholders, expanded per request by the
// router (rewrite, static.try_files, redirect.to): literal text and
// {name} placeholders, where name is one of
//
//	path   the request's normal path (after a rewrite, the rewritten one)
//	query  its query, without "?" ("" when none)
//	rest   the path after the route's prefix, starting with "/"
//	N      capture group N (0 the whole match) of the route's path_regex
//	NAME   the named capture group NAME of the route's path_regex
//
// Braces appear only as placeholders: a normal path never holds a raw
// "{" or "}" (the normaliser encodes them), so none is needed literally.
type Template struct {
	Raw   string         // as written
	Parts []TemplatePart // in order; literal parts are never empty
}

// TemplatePart is one literal or placeholder of a Template.
type TemplatePart struct {
	Lit   string      // the text, when Var is VarLiteral
	Var   TemplateVar // what the part expands to
	Group int         // the capture group, when Var is VarCapture
}

// TemplateVar is what a TemplatePart expands to.
type TemplateVar uint8

// The kinds of TemplatePart.
const (
	VarLiteral TemplateVar = iota // Lit
	VarPath                       // {path}
	VarQuery                      // {query}
	VarRest                       // {rest}
	VarCapture                    // {N} or {NAME}
)

// maxTemplate bounds a template's length; a longer one is a mistake.
const maxTemplate = 4096

// String returns the template as written.
func (t Template) String() string { return t.Raw }

// HasCaptures reports whether the template names a capture group.
func (t Template) HasCaptures() bool {
	for _, p := range t.Parts {
		if p.Var == VarCapture {
			return true
		}
	}
	return false
}

// ParseTemplate parses s. groups is the number of capture groups of the
// route's path_regex (0 without one) and names their names (index i for
// group i, "" for unnamed ones, as regexp.SubexpNames). The message is
// "" on success, else what is wrong and what would be right.
func ParseTemplate(s string, groups int, names []string) (Template, string) {
	t := Template{Raw: s}
	if len(s) > maxTemplate {
		return Template{}, fmt.Sprintf("is %d bytes long; at most %d", len(s), maxTemplate)
	}
	lit := 0 // start of the pending literal
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '}':
			return Template{}, fmt.Sprintf(`has a "}" at byte %d without its "{"; braces only enclose placeholders such as {path}`, i)
		case '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return Template{}, fmt.Sprintf(`has a "{" at byte %d without its "}"; write placeholders such as {path}`, i)
			}
			name := s[i+1 : i+end]
			part, msg := placeholder(name, groups, names)
			if msg != "" {
				return Template{}, msg
			}
			if lit < i {
				t.Parts = append(t.Parts, TemplatePart{Lit: s[lit:i]})
			}
			t.Parts = append(t.Parts, part)
			i += end
			lit = i + 1
		}
	}
	if lit < len(s) {
		t.Parts = append(t.Parts, TemplatePart{Lit: s[lit:]})
	}
	return t, ""
}

// placeholder resolves the name between braces.
func placeholder(name string, groups int, names []string) (TemplatePart, string) {
	switch name {
	case "path":
		return TemplatePart{Var: VarPath}, ""
	case "query":
		return TemplatePart{Var: VarQuery}, ""
	case "rest":
		return TemplatePart{Var: VarRest}, ""
	case "":
		return TemplatePart{}, `has an empty placeholder "{}"; use {path}, {query}, {rest} or a capture group of path_regex`
	}
	if n, err := strconv.Atoi(name); err == nil && name[0] != '+' && name[0] != '-' {
		if n > groups {
			if groups == 0 {
				return TemplatePart{}, fmt.Sprintf("names capture group {%s}, but the route has no match.path_regex with groups; use {path}, {query} or {rest}", name)
			}
			return TemplatePart{}, fmt.Sprintf("names capture group {%s}, but match.path_regex has %d (use {0} to {%d})", name, groups, groups)
		}
		return TemplatePart{Var: VarCapture, Group: n}, ""
	}
	for i, n := range names {
		if i > 0 && n == name {
			return TemplatePart{Var: VarCapture, Group: i}, ""
		}
	}
	known := "{path}, {query}, {rest}"
	if groups > 0 {
		known += fmt.Sprintf(", {0} to {%d}", groups)
	}
	for i, n := range names {
		if i > 0 && n != "" {
			known += ", {" + n + "}"
		}
	}
	return TemplatePart{}, fmt.Sprintf("has an unknown placeholder {%s}; known: %s", name, known)
}

// checkTemplateBytes refuses bytes that cannot appear in a URI as written:
// whitespace, control bytes and, in a path or query, "#".
func checkTemplateBytes(s string, fragmentOK bool) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c >= 0x80 {
			return fmt.Sprintf("contains %q at byte %d; percent-encode it", c, i)
		}
		if c == '#' && !fragmentOK {
			return fmt.Sprintf(`contains "#" at byte %d; a path or query has no fragment`, i)
		}
	}
	return ""
}

// redirectTemplate parses redirect.to as a template when it holds a
// placeholder (nil otherwise). Placeholders may stand only in the path,
// query and fragment: never in the scheme or the host, which a request
// must not choose.
func redirectTemplate(to string, m *Match) (*Template, string) {
	brace := strings.IndexAny(to, "{}")
	if brace < 0 {
		return nil, ""
	}
	pathStart := 0
	if !strings.HasPrefix(to, "/") {
		rest := to[strings.Index(to, "://")+3:]
		slash := strings.IndexAny(rest, "/?#")
		if slash < 0 {
			pathStart = len(to)
		} else {
			pathStart = len(to) - len(rest) + slash
		}
	}
	if brace < pathStart {
		return nil, "has a placeholder in the scheme or host; placeholders may stand in the path, query and fragment only, e.g. \"https://example.com/users/{1}\""
	}
	groups, names := m.Groups()
	t, msg := ParseTemplate(to, groups, names)
	if msg != "" {
		return nil, msg
	}
	return &t, ""
}
