package nginx

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gale/importer/internal/conf"
)

// Directive is one directive of a file: its name, arguments, where it
// was written, and its block (nil for a simple directive).
type Directive = conf.Directive

// Options control how includes are resolved.
type Options struct {
	// Keep names include targets (base names, e.g. "fastcgi_params")
	// that stay as "include" directives instead of being read: files
	// whose meaning a reader knows without their text.
	Keep []string
	// MaxDepth bounds nested includes (default 16), so an include cycle
	// is an error rather than a loop.
	MaxDepth int
}

// ParseFile reads the file at path and the files it includes. Relative
// include paths resolve against path's directory (nginx resolves them
// against the directory of its main configuration file); a pattern that
// names no file includes nothing, a plain name that names no file is an
// error, as in nginx.
func ParseFile(path string, opt Options) ([]*Directive, error) {
	if opt.MaxDepth == 0 {
		opt.MaxDepth = 16
	}
	p := &parser{opt: opt, base: filepath.Dir(path)}
	return p.file(path, 0)
}

// Parse reads data as the text of a file named file, without expanding
// includes.
func Parse(data []byte, file string) ([]*Directive, error) {
	toks, err := lex(data, file)
	if err != nil {
		return nil, err
	}
	ds, rest, err := block(toks, file, false, lastLine(toks))
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, &SyntaxError{File: file, Line: rest[0].line, Msg: `unexpected "}"`}
	}
	return ds, nil
}

// block reads directives until a "}" (when inner) or the end; it returns
// them and the tokens after the closing "}".
func block(toks []token, file string, inner bool, eof int) ([]*Directive, []token, error) {
	ds := []*Directive{}
	for len(toks) > 0 {
		t := toks[0]
		switch t.kind {
		case tokClose:
			if !inner {
				return nil, nil, &SyntaxError{File: file, Line: t.line, Msg: `unexpected "}"`}
			}
			return ds, toks[1:], nil
		case tokSemi, tokOpen:
			return nil, nil, &SyntaxError{File: file, Line: t.line, Msg: fmt.Sprintf("unexpected %q", t.text)}
		}
		d := &Directive{Name: t.text, File: file, Line: t.line}
		toks = toks[1:]
		for len(toks) > 0 && toks[0].kind == tokWord {
			d.Args = append(d.Args, toks[0].text)
			toks = toks[1:]
		}
		if len(toks) == 0 {
			return nil, nil, &SyntaxError{File: file, Line: t.line, Msg: fmt.Sprintf("%s: unexpected end of file, expecting \";\" or \"{\"", d.Name)}
		}
		switch toks[0].kind {
		case tokSemi:
			toks = toks[1:]
		case tokOpen:
			inner, rest, err := block(toks[1:], file, true, eof)
			if err != nil {
				return nil, nil, err
			}
			d.Block, toks = inner, rest
		default:
			return nil, nil, &SyntaxError{File: file, Line: toks[0].line, Msg: `unexpected "}"`}
		}
		ds = append(ds, d)
	}
	if inner {
		return nil, nil, &SyntaxError{File: file, Line: eof, Msg: `unexpected end of file, expecting "}"`}
	}
	return ds, nil, nil
}

func lastLine(toks []token) int {
	if len(toks) == 0 {
		return 0
	}
	return toks[len(toks)-1].line
}

// parser expands includes below one main file.
type parser struct {
	opt  Options
	base string
}

func (p *parser) file(path string, depth int) ([]*Directive, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ds, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	return p.expand(ds, depth)
}

// expand replaces include directives, at every depth, by what they name.
func (p *parser) expand(ds []*Directive, depth int) ([]*Directive, error) {
	out := make([]*Directive, 0, len(ds))
	for _, d := range ds {
		if d.Block != nil {
			inner, err := p.expand(d.Block, depth)
			if err != nil {
				return nil, err
			}
			d.Block = inner
		}
		if d.Name != "include" || len(d.Args) != 1 || p.kept(d.Args[0]) {
			out = append(out, d)
			continue
		}
		if depth >= p.opt.MaxDepth {
			return nil, &SyntaxError{File: d.File, Line: d.Line, Msg: "includes nested too deeply (a cycle?)"}
		}
		inc, err := p.include(d, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, inc...)
	}
	return out, nil
}

func (p *parser) kept(name string) bool {
	for _, k := range p.opt.Keep {
		if name == k || strings.HasSuffix(name, "/"+k) {
			return true
		}
	}
	return false
}

// include reads the files d names, in lexical order as nginx's glob does.
func (p *parser) include(d *Directive, depth int) ([]*Directive, error) {
	pat := d.Args[0]
	if !filepath.IsAbs(pat) {
		pat = filepath.Join(p.base, pat)
	}
	var files []string
	if strings.ContainsAny(d.Args[0], "*?[") {
		m, err := filepath.Glob(pat)
		if err != nil {
			return nil, &SyntaxError{File: d.File, Line: d.Line, Msg: fmt.Sprintf("include %q: %v", d.Args[0], err)}
		}
		files = m
	} else {
		files = []string{pat}
	}
	sort.Strings(files)
	var out []*Directive
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.IsDir() {
			continue
		}
		ds, err := p.file(f, depth+1)
		if err != nil {
			if se, ok := err.(*SyntaxError); ok {
				return nil, se
			}
			return nil, &SyntaxError{File: d.File, Line: d.Line, Msg: fmt.Sprintf("include %q: %v", d.Args[0], err)}
		}
		out = append(out, ds...)
	}
	return out, nil
}
