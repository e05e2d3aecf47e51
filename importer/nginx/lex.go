// Package nginx reads nginx configuration files into a tree of
// directives, as nginx's own reader (src/core/ngx_conf_file.c) splits
// them: words separated by white space, quoted with " or ' (backslash
// escapes inside), "#" comments to the end of the line, ";" ending a
// simple directive and "{" "}" a block. "include" is expanded with its
// glob relative to the main file's directory.
package nginx

import (
	"fmt"
	"strings"

	"gale/importer/internal/conf"
)

// tokKind is what a token is: a word, or one of ";", "{", "}".
type tokKind uint8

const (
	tokWord tokKind = iota
	tokSemi
	tokOpen
	tokClose
)

// token is one word or punctuation of a file, with its 1-based line.
type token struct {
	kind   tokKind
	text   string
	line   int
	quoted bool
}

// SyntaxError is a malformed file: its name, line and what was wrong.
type SyntaxError = conf.SyntaxError

// lex splits data into tokens. It never panics on any input; a quote left
// open, or a quote followed by something other than white space, ";" or
// "{", is an error, as in nginx.
func lex(data []byte, file string) ([]token, error) {
	var toks []token
	line := 1
	i := 0
	for i < len(data) {
		c := data[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == ';':
			toks = append(toks, token{kind: tokSemi, text: ";", line: line})
			i++
		case c == '{':
			toks = append(toks, token{kind: tokOpen, text: "{", line: line})
			i++
		case c == '}':
			toks = append(toks, token{kind: tokClose, text: "}", line: line})
			i++
		case c == '"' || c == '\'':
			start := line
			text, n, lines, err := quoted(data[i:], c)
			if err != "" {
				return nil, &SyntaxError{File: file, Line: start, Msg: err}
			}
			line += lines
			i += n
			if i < len(data) && !strings.ContainsRune(" \t\r\n;{", rune(data[i])) {
				return nil, &SyntaxError{File: file, Line: line, Msg: fmt.Sprintf("unexpected %q after a quoted string", data[i])}
			}
			toks = append(toks, token{kind: tokWord, text: text, line: start, quoted: true})
		default:
			text, n, lines := word(data[i:])
			toks = append(toks, token{kind: tokWord, text: text, line: line})
			line += lines
			i += n
		}
	}
	return toks, nil
}

// quoted reads a string opened by q at data[0]: it returns the text with
// the escapes \", \', \\, \t, \r and \n resolved (other backslashes kept,
// as nginx keeps them), the bytes consumed and the newlines crossed.
func quoted(data []byte, q byte) (string, int, int, string) {
	text, n, lines, ok := conf.Quoted(data, q, func(c byte) (string, bool) { return unescape(c), true })
	if !ok {
		return "", n, lines, "unterminated quoted string"
	}
	return text, n, lines, ""
}

// unescape is what nginx makes of a backslash followed by c.
func unescape(c byte) string {
	switch c {
	case '"', '\'', '\\':
		return string(c)
	case 't':
		return "\t"
	case 'r':
		return "\r"
	case 'n':
		return "\n"
	}
	return "\\" + string(c)
}

// word reads an unquoted word: up to white space, ";", "{" or "}", where
// a backslash escapes the next byte and "${name}" is one variable (its
// braces are not a block).
func word(data []byte) (string, int, int) {
	var b strings.Builder
	lines := 0
	i := 0
	for i < len(data) {
		c := data[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '}' {
			break
		}
		if c == '{' {
			if i == 0 || data[i-1] != '$' {
				break
			}
			end := strings.IndexByte(string(data[i:]), '}')
			if end < 0 {
				break
			}
			b.Write(data[i : i+end+1])
			i += end + 1
			continue
		}
		if c == '\\' && i+1 < len(data) {
			i++
			if data[i] == '\n' {
				lines++
			}
			b.WriteString(unescape(data[i]))
			i++
			continue
		}
		b.WriteByte(c)
		i++
	}
	if i == 0 {
		// A lone "{" can't start a word; callers never reach this, but
		// consuming one byte keeps lex's loop finite on any input.
		return string(data[:1]), 1, 0
	}
	return b.String(), i, lines
}
