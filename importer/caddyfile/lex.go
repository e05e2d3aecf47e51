// Package caddyfile reads Caddyfiles into site blocks of directives, as
// Caddy's own lexer and parser (caddyconfig/caddyfile) do: tokens
// separated by white space, a directive per line (a trailing "\" joins the
// next), "..." quotes with \" escapes and `...` raw quotes, "#" comments
// at the start of a token, "{" and "}" words opening and closing blocks,
// snippets "(name) {...}" with "import name args", imports of files
// (globs relative to the Caddyfile's directory), and environment
// placeholders {$VAR} and {$VAR:default} replaced as the file is read.
package caddyfile

import (
	"strings"

	"gale/importer/internal/conf"
)

// token is one word of a file: its text, line, and whether it was quoted
// (a quoted "{" opens nothing).
type token struct {
	text   string
	line   int
	quoted bool
	file   string
	group  int // which expansion of an import it came from (0: none); a directive's tokens share one
}

// SyntaxError is a malformed file: its name, line and what was wrong.
type SyntaxError = conf.SyntaxError

// lex splits data into tokens. A backslash at the end of a line joins the
// next line to the directive: the tokens after it carry the line of the
// first, so that a directive is the run of tokens of one line number.
func lex(data []byte, file string) ([]token, error) {
	var toks []token
	line, dirLine := 1, 1
	joined := false
	i := 0
	for i < len(data) {
		c := data[i]
		switch {
		case c == '\n':
			line++
			if !joined {
				dirLine = line
			}
			joined = false
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == '\\' && i+1 < len(data) && (data[i+1] == '\n' || (data[i+1] == '\r' && i+2 < len(data) && data[i+2] == '\n')):
			joined = true
			i++
		case c == '"' || c == '`':
			text, n, lines, ok := quotedWord(data[i:], c)
			if !ok {
				return nil, &SyntaxError{File: file, Line: line, Msg: "unterminated quoted string"}
			}
			toks = append(toks, token{text: text, line: dirLine, quoted: true, file: file})
			line += lines
			i += n
		default:
			start := i
			for i < len(data) && !strings.ContainsRune(" \t\r\n", rune(data[i])) {
				i++
			}
			toks = append(toks, token{text: unescapeWord(string(data[start:i])), line: dirLine, file: file})
			if i == start {
				i++ // never loop without consuming a byte
			}
		}
	}
	return toks, nil
}

// quotedWord reads a string opened by q at data[0]: "..." resolves \" and
// \\, `...` is raw. It returns the text, the bytes consumed and the
// newlines inside.
func quotedWord(data []byte, q byte) (string, int, int, bool) {
	if q != '"' {
		return conf.Quoted(data, q, nil)
	}
	return conf.Quoted(data, q, func(c byte) (string, bool) {
		return string(c), c == '"' || c == '\\'
	})
}

// unescapeWord resolves \" in an unquoted word, as Caddy's lexer does.
func unescapeWord(s string) string {
	return strings.ReplaceAll(s, `\"`, `"`)
}
