package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxFileBytes bounds the size of a config file Load reads.
const MaxFileBytes = 4 << 20

// ErrTooLarge is returned (wrapped) by Load for a file over MaxFileBytes.
var ErrTooLarge = errors.New("config: file larger than 4MiB")

// Load reads, decodes, defaults and validates the config file at path.
// Relative paths inside it resolve against the file's directory.
//
// When the file cannot be read, the error wraps the os error (so
// errors.Is(err, fs.ErrNotExist) works). When the file is invalid, the
// error is an ErrorList holding every problem found, each naming the file
// as path was given, and the *Config is nil. Load is safe for concurrent
// use; the returned Config is never modified afterwards.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// ReadFile reads the config file at path as Load does, up to
// MaxFileBytes, for a caller that keeps the source beside what Parse
// makes of it. Safe for concurrent use.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: reading %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s", ErrTooLarge, path)
	}
	return data, nil
}

// Parse decodes, defaults and validates the config in data. file names the
// source in messages and sets the directory relative paths resolve
// against; with file "" they resolve against the working directory and
// messages carry no file name.
//
// On failure the error is an ErrorList (see Load) and the *Config is nil.
// Parse does not retain data. It is safe for concurrent use.
func Parse(data []byte, file string) (*Config, error) {
	return parse(data, file, notSupportedYet)
}

func parse(data []byte, file string, gate map[string]string) (*Config, error) {
	d := &decoder{file: file, gate: gate, budget: maxNodes}
	c := defaults()
	if file != "" {
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, ErrorList{{File: file, Msg: err.Error()}}
		}
		c.File, c.Dir = abs, filepath.Dir(abs)
	} else {
		wd, err := os.Getwd()
		if err != nil {
			return nil, ErrorList{{Msg: "cannot resolve relative paths: " + err.Error()}}
		}
		c.Dir = wd
	}
	d.dir = c.Dir

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, ErrorList{{File: file, Line: 1, Col: 1, Msg: "the file is empty; it needs at least listen and routes"}}
	case err != nil:
		return nil, ErrorList{syntaxError(file, err)}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, ErrorList{syntaxError(file, err)}
	default:
		return nil, ErrorList{{File: file, Line: extra.Line, Col: extra.Column, Msg: `a second YAML document ("---"); a config file holds exactly one`}}
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if r := deref(root); isNull(r) || r.Kind != yaml.MappingNode {
		if isNull(r) {
			return nil, ErrorList{{File: file, Line: max(r.Line, 1), Col: max(r.Column, 1), Msg: "the file is empty; it needs at least listen and routes"}}
		}
		return nil, ErrorList{{File: file, Line: r.Line, Col: r.Column, Msg: "expected a mapping with listen and routes at the top level, got " + describe(r)}}
	}
	d.config(root, c)
	if errs := d.result(); errs != nil {
		return nil, errs
	}
	return c, nil
}

var yamlLineRE = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)

// syntaxError turns a YAML parser error into an *Error. The parser reports
// at most a line, which is where the construct holding the problem starts
// (at or before the problem), and no column: the column is 1, and the line
// 1 when the parser gives none.
func syntaxError(file string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{File: file, Line: 1, Col: 1, Msg: "YAML syntax: " + msg}
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Msg = "YAML syntax: " + m[2]
	}
	return e
}

// ForDirectory returns a config that serves the directory root as static
// files on the address listen, with every other setting at its default: one
// route for any host and path "/". A relative root resolves against the
// working directory. On failure the error is an ErrorList whose errors name
// the offending argument as Key ("root" or "listen"), without file or
// position, and the *Config is nil. ForDirectory is safe for concurrent use.
func ForDirectory(root, listen string) (*Config, error) {
	return forFlags(listen, func(wd string, errs *ErrorList) Route {
		st := defaultStatic()
		switch {
		case root == "":
			*errs = append(*errs, &Error{Key: "root", Msg: `expected a directory path such as "./site", got ""`})
		default:
			if filepath.IsAbs(root) {
				st.Root = filepath.Clean(root)
			} else {
				st.Root = filepath.Join(wd, root)
			}
			if msg := checkDir(st.Root, root); msg != "" {
				*errs = append(*errs, &Error{Key: "root", Msg: msg})
			}
		}
		return Route{Path: "/", Static: st}
	})
}

// forFlags builds the config of a command that runs without a file: every
// setting at its default, relative paths resolved against the working
// directory, the one listener listen, and the one route (for any host and
// path "/") that route returns. route appends what is wrong with its
// arguments to errs; any error, listen's included, means no config.
func forFlags(listen string, route func(wd string, errs *ErrorList) Route) (*Config, error) {
	c := defaults()
	wd, err := os.Getwd()
	if err != nil {
		return nil, ErrorList{{Msg: "cannot resolve relative paths: " + err.Error()}}
	}
	c.Dir = wd
	var errs ErrorList
	if msg := checkAddress(listen); msg != "" {
		errs = append(errs, &Error{Key: "listen", Msg: msg})
	}
	r := route(wd, &errs)
	if len(errs) > 0 {
		return nil, errs
	}
	c.Listen = []Listener{{Address: listen, Protocols: DefaultProtocols(false)}}
	c.Routes = []Route{r}
	return c, nil
}
