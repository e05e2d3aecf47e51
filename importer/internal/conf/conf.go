// Package conf holds what the readers of nginx files and of Caddyfiles
// share: the directive tree they build and the error a malformed file
// is.
package conf

import (
	"fmt"
	"strings"
)

// Directive is one directive of a file: its name, arguments, where it
// was written, and its block (nil without one).
type Directive struct {
	Name  string
	Args  []string
	File  string
	Line  int
	Block []*Directive // the directives between "{" and "}"; nil without a block
}

// IsBlock reports whether the directive has a "{...}" block (possibly empty).
func (d *Directive) IsBlock() bool { return d.Block != nil }

// Pos is "FILE:LINE" of the directive.
func (d *Directive) Pos() string { return fmt.Sprintf("%s:%d", d.File, d.Line) }

// SyntaxError is a malformed file: its name, line and what was wrong.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Quoted reads a string opened by q at data[0], up to the next q. A
// backslash followed by a byte that escape turns into text (ok) stands for
// that text; escape nil leaves every backslash as written. It returns the
// text, the bytes consumed and the newlines crossed; ok is false when the
// string is never closed.
func Quoted(data []byte, q byte, escape func(c byte) (string, bool)) (text string, n, lines int, ok bool) {
	var b strings.Builder
	for i := 1; i < len(data); i++ {
		c := data[i]
		if c == q {
			return b.String(), i + 1, lines, true
		}
		if c == '\\' && i+1 < len(data) && escape != nil {
			if s, ok := escape(data[i+1]); ok {
				i++
				c = data[i]
				b.WriteString(s)
				if c == '\n' {
					lines++
				}
				continue
			}
		}
		if c == '\n' {
			lines++
		}
		b.WriteByte(c)
	}
	return "", len(data), lines, false
}
