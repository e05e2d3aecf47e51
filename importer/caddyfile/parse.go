package caddyfile

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gale/importer/internal/conf"
)

// Directive is one directive: its name, arguments (a matcher token such as
// "/api/*" or "@name" is the first argument), where it was written, and
// its block (nil without one).
type Directive = conf.Directive

// Site is a site block: its addresses and directives.
type Site struct {
	Addresses  []string
	File       string
	Line       int
	Directives []*Directive
}

// Caddyfile is a parsed file: the global options block and the sites.
type Caddyfile struct {
	Global []*Directive
	Sites  []*Site
}

// ParseFile reads the Caddyfile at path, with its imports.
func ParseFile(path string) (*Caddyfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(data, path, filepath.Dir(path), 0)
}

// Parse reads data as the Caddyfile named file; imports of files are
// resolved against dir ("" refuses them).
func Parse(data []byte, file, dir string) (*Caddyfile, error) {
	return parse(data, file, dir, 0)
}

const maxImportDepth = 16

type parser struct {
	toks     []token
	pos      int
	snippets map[string][]token
	dir      string
	depth    int
	groups   int
}

func parse(data []byte, file, dir string, depth int) (*Caddyfile, error) {
	toks, err := lex(data, file)
	if err != nil {
		return nil, err
	}
	p := &parser{snippets: map[string][]token{}, dir: dir, depth: depth}
	toks = substEnv(toks)
	if toks, err = p.defineSnippets(toks); err != nil {
		return nil, err
	}
	if toks, err = p.expandImports(toks, 0); err != nil {
		return nil, err
	}
	p.toks = toks
	return p.file()
}

var envRef = regexp.MustCompile(`\{\$([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}`)

// substEnv replaces {$VAR} and {$VAR:default} in every token.
func substEnv(toks []token) []token {
	for i, t := range toks {
		if strings.Contains(t.text, "{$") {
			toks[i].text = envRef.ReplaceAllStringFunc(t.text, func(m string) string {
				s := envRef.FindStringSubmatch(m)
				if v, ok := os.LookupEnv(s[1]); ok {
					return v
				}
				return s[2]
			})
		}
	}
	return toks
}

// defineSnippets takes "(name) { ... }" blocks at the top level out of
// toks and remembers their tokens.
func (p *parser) defineSnippets(toks []token) ([]token, error) {
	var out []token
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if !t.quoted && len(t.text) > 2 && t.text[0] == '(' && t.text[len(t.text)-1] == ')' && i+1 < len(toks) && isOpen(toks[i+1]) && sameLine(t, toks[i+1]) {
			end, err := matching(toks, i+1)
			if err != nil {
				return nil, err
			}
			p.snippets[t.text[1:len(t.text)-1]] = toks[i+2 : end]
			i = end
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

func isOpen(t token) bool  { return !t.quoted && t.text == "{" }
func isClose(t token) bool { return !t.quoted && t.text == "}" }

// matching returns the index of the "}" closing the "{" at toks[open].
func matching(toks []token, open int) (int, error) {
	depth := 0
	for i := open; i < len(toks); i++ {
		switch {
		case isOpen(toks[i]):
			depth++
		case isClose(toks[i]):
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, &SyntaxError{File: toks[open].file, Line: toks[open].line, Msg: `"{" is never closed`}
}

// expandImports replaces "import NAME args..." (a snippet, with {args[N]}
// and {args.N} placeholders) and "import FILE-GLOB" lines.
func (p *parser) expandImports(toks []token, depth int) ([]token, error) {
	var out []token
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.quoted || t.text != "import" || (i > 0 && sameLine(toks[i-1], t)) {
			out = append(out, t)
			continue
		}
		j := i + 1
		for j < len(toks) && sameLine(toks[j], t) {
			j++
		}
		args := toks[i+1 : j]
		if len(args) == 0 {
			return nil, &SyntaxError{File: t.file, Line: t.line, Msg: "import: expected a snippet or a file"}
		}
		if depth >= maxImportDepth || p.depth >= maxImportDepth {
			return nil, &SyntaxError{File: t.file, Line: t.line, Msg: "imports nested too deeply (a cycle?)"}
		}
		inc, err := p.importTokens(t, args)
		if err != nil {
			return nil, err
		}
		inc, err = p.expandImports(inc, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, inc...)
		i = j - 1
	}
	return out, nil
}

// importTokens returns the tokens an import names, each moved to the
// import's line unless it comes from a file (where its own line counts).
func (p *parser) importTokens(at token, args []token) ([]token, error) {
	name := args[0].text
	p.groups++
	group := p.groups
	if snip, ok := p.snippets[name]; ok {
		out := make([]token, len(snip))
		for k, s := range snip {
			s.text = argRef.ReplaceAllStringFunc(s.text, func(m string) string {
				sub := argRef.FindStringSubmatch(m)
				n := sub[1] + sub[2]
				var idx int
				fmt.Sscan(n, &idx)
				if idx+1 < len(args) {
					return args[idx+1].text
				}
				return ""
			})
			s.group = group
			out[k] = s
		}
		return out, nil
	}
	if p.dir == "" {
		return nil, &SyntaxError{File: at.file, Line: at.line, Msg: fmt.Sprintf("import %s: no such snippet", name)}
	}
	pat := name
	if !filepath.IsAbs(pat) {
		pat = filepath.Join(p.dir, pat)
	}
	files, err := filepath.Glob(pat)
	if err != nil || (len(files) == 0 && !strings.ContainsAny(name, "*?[")) {
		return nil, &SyntaxError{File: at.file, Line: at.line, Msg: fmt.Sprintf("import %s: no such snippet or file", name)}
	}
	sort.Strings(files)
	var out []token
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, &SyntaxError{File: at.file, Line: at.line, Msg: fmt.Sprintf("import %s: %v", name, err)}
		}
		toks, err := lex(data, f)
		if err != nil {
			return nil, err
		}
		toks = substEnv(toks)
		if toks, err = p.defineSnippets(toks); err != nil {
			return nil, err
		}
		for k := range toks {
			toks[k].group = group
		}
		out = append(out, toks...)
	}
	return out, nil
}

// sameLine reports whether b continues the directive a is on.
func sameLine(a, b token) bool { return a.line == b.line && a.file == b.file && a.group == b.group }

var argRef = regexp.MustCompile(`\{args(?:\[(\d+)\]|\.(\d+))\}`)

// file reads the global options block and the site blocks.
func (p *parser) file() (*Caddyfile, error) {
	cf := &Caddyfile{}
	if p.pos < len(p.toks) && isOpen(p.toks[p.pos]) {
		ds, err := p.block()
		if err != nil {
			return nil, err
		}
		cf.Global = ds
	}
	for p.pos < len(p.toks) {
		s, err := p.site(len(cf.Sites) == 0)
		if err != nil {
			return nil, err
		}
		cf.Sites = append(cf.Sites, s)
	}
	return cf, nil
}

// site reads addresses (separated by spaces or commas, over lines ending
// in a comma) and their block; a single site may leave out the braces.
func (p *parser) site(first bool) (*Site, error) {
	t := p.toks[p.pos]
	if isClose(t) {
		return nil, &SyntaxError{File: t.file, Line: t.line, Msg: `unexpected "}"`}
	}
	s := &Site{File: t.file, Line: t.line}
	for p.pos < len(p.toks) {
		t := p.toks[p.pos]
		if isOpen(t) {
			break
		}
		if len(s.Addresses) > 0 && !sameLine(t, p.toks[p.pos-1]) && !strings.HasSuffix(p.toks[p.pos-1].text, ",") {
			break
		}
		for _, a := range strings.Split(t.text, ",") {
			if a != "" {
				s.Addresses = append(s.Addresses, a)
			}
		}
		p.pos++
	}
	if p.pos < len(p.toks) && isOpen(p.toks[p.pos]) {
		ds, err := p.block()
		if err != nil {
			return nil, err
		}
		s.Directives = ds
		return s, nil
	}
	if !first {
		return nil, &SyntaxError{File: s.File, Line: s.Line, Msg: "a site block without braces must be the only one"}
	}
	ds, err := p.directives(false)
	if err != nil {
		return nil, err
	}
	s.Directives = ds
	return s, nil
}

// block reads "{" directives "}".
func (p *parser) block() ([]*Directive, error) {
	p.pos++ // "{"
	return p.directives(true)
}

// directives reads directives up to a "}" (when inner) or the end.
func (p *parser) directives(inner bool) ([]*Directive, error) {
	ds := []*Directive{}
	for p.pos < len(p.toks) {
		t := p.toks[p.pos]
		if isClose(t) {
			if !inner {
				return nil, &SyntaxError{File: t.file, Line: t.line, Msg: `unexpected "}"`}
			}
			p.pos++
			return ds, nil
		}
		if isOpen(t) {
			return nil, &SyntaxError{File: t.file, Line: t.line, Msg: `unexpected "{"`}
		}
		d := &Directive{Name: t.text, File: t.file, Line: t.line}
		p.pos++
		for p.pos < len(p.toks) && sameLine(p.toks[p.pos], t) && !isClose(p.toks[p.pos]) {
			a := p.toks[p.pos]
			if isOpen(a) {
				if p.pos+1 < len(p.toks) && sameLine(p.toks[p.pos+1], a) && !isClose(p.toks[p.pos+1]) {
					return nil, &SyntaxError{File: a.file, Line: a.line, Msg: `"{" must end its line`}
				}
				inner, err := p.block()
				if err != nil {
					return nil, err
				}
				d.Block = inner
				break
			}
			d.Args = append(d.Args, a.text)
			p.pos++
		}
		ds = append(ds, d)
	}
	if inner {
		return nil, &SyntaxError{File: lastFile(p.toks), Line: lastLine(p.toks), Msg: `unexpected end of file, expecting "}"`}
	}
	return ds, nil
}

func lastLine(toks []token) int {
	if len(toks) == 0 {
		return 0
	}
	return toks[len(toks)-1].line
}

func lastFile(toks []token) string {
	if len(toks) == 0 {
		return ""
	}
	return toks[len(toks)-1].file
}
