package config

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzTemplate parses templates against path regexes: it never panics,
// a parsed template's parts rebuild a string equivalent to the input, no
// literal holds a brace, and every capture names a group the regex has.
func FuzzTemplate(f *testing.F) {
	for _, s := range [][2]string{
		{"/users/(?P<id>[0-9]+)", "/api/{id}?{query}"},
		{"/a/(.*)", "/x/{1}/{0}{path}{rest}"},
		{"", "/{path"},
		{"(", "{}"},
		{"/(?P<x>a)(b)", "/{x}{2}{3}}"},
		{"/(a)", "{01}{+1}{-1}"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, regex, tmpl string) {
		var m Match
		if regex != "" {
			re, msg := CompileRegex(regex)
			if (re == nil) == (msg == "") {
				t.Fatalf("CompileRegex(%q): %v, %q", regex, re, msg)
			}
			if re != nil {
				m.PathRegex = re
				if !strings.HasPrefix(re.Re.String(), "^(?:") || !strings.HasSuffix(re.Re.String(), ")$") {
					t.Fatalf("%q compiled unanchored: %s", regex, re.Re)
				}
			}
		}
		groups, names := m.Groups()
		tp, msg := ParseTemplate(tmpl, groups, names)
		if msg != "" {
			return
		}
		var b strings.Builder
		for _, p := range tp.Parts {
			switch p.Var {
			case VarLiteral:
				if p.Lit == "" || strings.ContainsAny(p.Lit, "{}") {
					t.Fatalf("%q: literal %q", tmpl, p.Lit)
				}
				b.WriteString(p.Lit)
			case VarPath:
				b.WriteString("{path}")
			case VarQuery:
				b.WriteString("{query}")
			case VarRest:
				b.WriteString("{rest}")
			case VarCapture:
				if p.Group < 0 || p.Group > groups {
					t.Fatalf("%q: group %d of %d", tmpl, p.Group, groups)
				}
				b.WriteString("{" + strconv.Itoa(p.Group) + "}")
			}
		}
		again, msg := ParseTemplate(b.String(), groups, names)
		if msg != "" || len(again.Parts) != len(tp.Parts) {
			t.Fatalf("%q rebuilt as %q: %q", tmpl, b.String(), msg)
		}
		if _, msg := ParseRewrite(tmpl, &m); msg == "" && !strings.HasPrefix(tmpl, "/") && !strings.HasPrefix(tmpl, "{path}") && !strings.HasPrefix(tmpl, "{rest}") {
			t.Fatalf("rewrite %q accepted without a leading path", tmpl)
		}
	})
}

// FuzzRate parses rates: never a panic, and an accepted rate costs at
// least a microsecond and at most an hour per request.
func FuzzRate(f *testing.F) {
	for _, s := range []string{"10/s", "600/m", "1/h", "0/s", "1000001/s", "-1/s", "9223372036854775807/h", " 5 / s "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		iv, msg := parseRate(s)
		if msg == "" && (iv < 1000 || iv > 3600e9) {
			t.Fatalf("%q: interval %v", s, iv)
		}
	})
}
