package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"gale/app"
	"gale/config"
	"gale/handlers"
)

// Backend is what the API acts on. Load and Stop are the server's
// lifecycle as its command runs it, so that a config loaded here is
// applied exactly as a SIGHUP reload applies one, and a stop is the one
// SIGTERM starts.
type Backend struct {
	Server *app.Server

	// Load validates data (a config file's content, named file in
	// messages, relative paths resolved against file's directory) and
	// applies it as a reload does, keeping the running config on any
	// error (a config.ErrorList when data is invalid). notes are what the
	// reload could not apply without a restart.
	Load func(data []byte, file string) (notes []string, err error)

	// Source returns the running config's YAML as it was loaded; nil
	// when the server was started without a config file.
	Source func() []byte

	// Stop begins a graceful stop and returns at once.
	Stop func()

	Version string // for GET /status
}

// API serves the admin endpoints on one listener. Its methods are safe
// for concurrent use.
type API struct {
	ln  net.Listener
	tcp bool // a token is required whatever the running config says
	b   Backend
	srv *http.Server

	endpoints map[string]endpoint // by path; read only once New returns
}

// maxHeaderBytes bounds a request's head; bodies are bounded per
// endpoint (a config at config.MaxFileBytes).
const maxHeaderBytes = 64 << 10

// New returns the API over ln (from Listen) and b.
func New(ln net.Listener, b Backend) *API {
	_, isUnix := ln.(*net.UnixListener)
	a := &API{ln: ln, tcp: !isUnix, b: b}
	a.endpoints = a.endpointTable()
	a.srv = &http.Server{
		Handler:           a,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	return a
}

// Addr is the listener's address.
func (a *API) Addr() net.Addr { return a.ln.Addr() }

// Serve serves until Close. It blocks.
func (a *API) Serve() error {
	if err := a.srv.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close stops the listener (removing the socket file) and ends requests
// in flight within a second.
func (a *API) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a.srv.Shutdown(ctx); err != nil {
		return a.srv.Close()
	}
	return nil
}

// endpoint is one path of the API: the method it takes and its handler.
type endpoint struct {
	method string
	serve  func(http.ResponseWriter, *http.Request)
}

func (a *API) endpointTable() map[string]endpoint {
	return map[string]endpoint{
		"/config":    {http.MethodGet, a.getConfig},
		"/load":      {http.MethodPost, a.load},
		"/routes":    {http.MethodGet, a.routes},
		"/upstreams": {http.MethodGet, a.upstreams},
		"/purge":     {http.MethodPost, a.purge},
		"/stop":      {http.MethodPost, a.stop},
		"/status":    {http.MethodGet, a.status},
	}
}

// ServeHTTP implements http.Handler: authentication, then the endpoint.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !a.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gale admin"`)
		http.Error(w, "a bearer token is required (admin.token_file)", http.StatusUnauthorized)
		return
	}
	ep, ok := a.endpoints[r.URL.Path]
	switch {
	case !ok:
		http.Error(w, "no such endpoint: /config, /load, /routes, /upstreams, /purge, /stop, /status", http.StatusNotFound)
	case r.Method != ep.method && !(ep.method == http.MethodGet && r.Method == http.MethodHead):
		w.Header().Set("Allow", ep.method)
		http.Error(w, r.URL.Path+" takes "+ep.method, http.StatusMethodNotAllowed)
	default:
		ep.serve(w, r)
	}
}

// authorized checks the bearer token, when the running config has one,
// in time that does not depend on how much of it a guess got right. On
// TCP a token is always required: should a reload have dropped it
// (moving the API to a socket needs a restart), nothing is let in.
func (a *API) authorized(r *http.Request) bool {
	tok := a.b.Server.Config().Admin.Token
	if tok == "" {
		return !a.tcp
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	// Digests of equal length, so that not even the token's length
	// shows in the time a refusal takes.
	want, have := sha256.Sum256([]byte(tok)), sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(want[:], have[:]) == 1 && ok
}

// wantJSON reports whether the client asked for JSON.
func wantJSON(r *http.Request) bool {
	return r.URL.Query().Get("format") == "json" || strings.Contains(r.Header.Get("Accept"), "application/json")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeText(w http.ResponseWriter, status int, lines []string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	for _, l := range lines {
		_, _ = io.WriteString(w, l+"\n")
	}
}

// getConfig answers the running config's source, as YAML or JSON.
func (a *API) getConfig(w http.ResponseWriter, r *http.Request) {
	src := a.b.Source()
	if src == nil {
		http.Error(w, "the server was started without a config file", http.StatusNotFound)
		return
	}
	if !wantJSON(r) {
		w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
		_, _ = w.Write(src)
		return
	}
	var doc any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		http.Error(w, "the running config's YAML: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, jsonable(doc))
}

// jsonable turns what yaml decodes into (maps keyed by any value) into
// what encoding/json takes.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = jsonable(x)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case []any:
		for i, x := range v {
			v[i] = jsonable(x)
		}
		return v
	}
	return v
}

// loadResult is POST /load's JSON answer.
type loadResult struct {
	Loaded bool        `json:"loaded"`
	Notes  []string    `json:"notes,omitempty"`  // what needs a restart
	Errors []loadError `json:"errors,omitempty"` // why the config was refused, each with its position
	Error  string      `json:"error,omitempty"`  // a refusal that is not the file's (a port taken, a certificate unreadable)
}

// loadError is one config.Error in JSON.
type loadError struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"column,omitempty"`
	Key  string `json:"key,omitempty"`
	Msg  string `json:"message"`
	Text string `json:"text"` // the whole line, as gale validate prints it
}

// load validates and applies the posted config; on any error the running
// config stays and the answer is 400 with the errors.
func (a *API) load(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, config.MaxFileBytes))
	if err != nil {
		http.Error(w, "reading the config: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	file := r.URL.Query().Get("file")
	if file == "" {
		file = a.b.Server.Config().File
	}
	notes, err := a.b.Load(data, file)
	res := loadResult{Loaded: err == nil, Notes: notes}
	status := http.StatusOK
	if err != nil {
		status = http.StatusBadRequest
		var list config.ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				res.Errors = append(res.Errors, loadError{File: e.File, Line: e.Line, Col: e.Col, Key: e.Key, Msg: e.Msg, Text: e.Error()})
			}
		} else {
			res.Error = err.Error()
		}
	}
	if wantJSON(r) {
		writeJSON(w, status, res)
		return
	}
	if err != nil {
		writeText(w, status, strings.Split(err.Error(), "\n"))
		return
	}
	lines := []string{"loaded"}
	for _, n := range notes {
		lines = append(lines, "note: "+n)
	}
	writeText(w, status, lines)
}

// routes lists the running routes, or explains one request through them
// as gale route does (?method=GET&url=/path, with header= and from=).
func (a *API) routes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cfg := a.b.Server.Config()
	var lines []string
	if q.Get("url") == "" {
		lines = cfg.Summary(a.b.Server.Addrs()...)
	} else {
		eq := handlers.ExplainQuery{Method: q.Get("method"), Target: q.Get("url"), Headers: q["header"], From: q.Get("from")}
		if eq.Method == "" {
			eq.Method = http.MethodGet
		}
		req, remote, err := handlers.ExplainRequest(eq)
		if err == nil {
			lines, err = handlers.ExplainConfig(cfg, req, remote)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	if wantJSON(r) {
		writeJSON(w, http.StatusOK, map[string][]string{"lines": lines})
		return
	}
	writeText(w, http.StatusOK, lines)
}

// upstreams answers every proxy upstream's health and counts, in JSON.
func (a *API) upstreams(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"upstreams": a.b.Server.Upstreams()})
}

// purge empties the static file cache, or drops one path or subtree.
func (a *API) purge(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Query().Get("path")
	if path != "" && path[0] != '/' {
		http.Error(w, `path: expected a URL path such as /app.css or /img/, got `+fmt.Sprintf("%q", path), http.StatusBadRequest)
		return
	}
	n := a.b.Server.PurgeCache(path)
	writeJSON(w, http.StatusOK, map[string]int{"purged": n})
}

// stop answers, then begins a graceful stop.
func (a *API) stop(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusAccepted, map[string]any{"stopping": true, "pid": os.Getpid()})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	a.b.Stop()
}

// status answers the server's summary in JSON.
func (a *API) status(w http.ResponseWriter, _ *http.Request) {
	st := a.b.Server.Status()
	st.Version = a.b.Version
	writeJSON(w, http.StatusOK, st)
}
