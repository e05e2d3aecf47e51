package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem found in a config file. Every validation error that
// Parse and Load report is an *Error inside an ErrorList.
//
// Line and Col are 1-based; both are 0 when the problem has no position (a
// value given in code, as with ForDirectory). Key is the dotted path of the
// offending key, with list indexes counted from 0 and user-chosen map keys
// quoted: "routes[2].static.root", "server.timeouts.idle",
// `mime_types[".webmanifest"]`. It is "" for problems of the file as a whole
// (YAML syntax). Msg says what is wrong and what would be right.
type Error struct {
	File string // the file name as given to Load or Parse ("" when none)
	Line int    // 1-based line, 0 = no position
	Col  int    // 1-based column, 0 = no position
	Key  string // dotted key path, "" = the file as a whole
	Msg  string // what is wrong and what would be right
}

// Error renders "FILE:LINE:COL: KEY: message", leaving out the parts that
// are empty (no file, no position, no key).
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(max(e.Col, 1)))
	}
	if e.Key != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Key)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is the error Parse and Load return when a config is invalid: every
// problem found, sorted by file position. It is never empty when returned as
// an error.
type ErrorList []*Error

// Error joins the errors one per line, without a trailing newline.
func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the errors so that errors.As finds an individual *Error.
// The returned slice is freshly allocated.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// sort orders the list by file, line, column, key and message. Errors
// without a position (Line 0) sort first within their file.
func (l ErrorList) sort() {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Key, b.Key),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
}
