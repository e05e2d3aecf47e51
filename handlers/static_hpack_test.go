package handlers

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"

	"gale/cache"
	"gale/codec"
	"gale/config"
)

// The HPACK block a cached file keeps (Response.HPACK) carries the same
// fields as its HTTP/1.1 head (Response.Head), for every representation
// and with the route's response header rules applied: decoded by x/net's
// HPACK decoder and parsed by net/http, the two give the same set of
// fields (names case-folded, Date excluded, which the HTTP/2 engine adds
// per response), and status 200. Connection-specific fields a rule sets
// appear in the HTTP/1.1 head only (RFC 9113 section 8.2.2).
func TestStaticHPACKMatchesHead(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"site.css":   cssBody(20000),
		"index.html": "<h1>home</h1>",
		"data.bin":   "\x00\x01\x02",
		"README":     "plain",
		"empty.txt":  "",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := cache.New(cache.Options{Workers: 1})
	t.Cleanup(c.Close)
	cfg := &config.Config{Routes: []config.Route{{
		Path: "/",
		Static: &config.Static{
			Root:         root,
			Index:        []string{"index.html"},
			CacheControl: "public, max-age=60",
			Compress:     config.Compress{Encodings: []string{"zstd", "br", "gzip"}, MinBytes: 1024},
		},
		Headers: config.HeaderRules{Response: config.HeaderOps{
			Remove: []string{"Accept-Ranges"},
			Set: []config.HeaderKV{
				{Name: "X-Frame-Options", Value: "DENY"},
				{Name: "Keep-Alive", Value: "timeout=5"}, // config refuses it; the encoder must drop it anyway
			},
			Add: []config.HeaderKV{
				{Name: "Vary", Value: "Origin"},
				{Name: "Link", Value: "</site.css>; rel=preload"},
				{Name: "Upgrade", Value: "h2c"},
			},
		}},
	}}}
	cfg.Server.ServerHeader = "gale-test"
	rt, err := Build(cfg, WithCache(c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })

	tests := []struct{ target, accept, encoding string }{
		{"/site.css", "", ""},
		{"/site.css", "gzip", "gzip"},
		{"/site.css", "br", "br"},
		{"/site.css", "zstd", "zstd"},
		{"/", "", ""},
		{"/data.bin", "", ""},
		{"/README", "", ""},
		{"/empty.txt", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.target+" "+tt.accept, func(t *testing.T) {
			var ctx *Ctx
			serveUntil(t, rt, c, func() *Ctx {
				ctx = newCtx(request("GET", "example.com", tt.target, "Accept-Encoding", tt.accept))
				rt.Serve(ctx)
				return ctx
			}, func(r *http.Response) bool { return r.Header.Get("Content-Encoding") == tt.encoding })
			r := &ctx.Resp
			if r.Head == nil || r.HPACK == nil {
				t.Fatalf("Head %q, HPACK %x: want both pre-rendered", r.Head, r.HPACK)
			}
			h1, dropped := headFieldSet(t, r.Head)
			h2 := hpackFieldSet(t, r.HPACK)
			if !slices.Equal(h1, h2) {
				t.Errorf("fields differ\nHTTP/1.1: %q\nHPACK:    %q", h1, h2)
			}
			if want := []string{"keep-alive: timeout=5", "upgrade: h2c"}; !slices.Equal(dropped, want) {
				t.Errorf("connection-specific fields in the HTTP/1.1 head: %q; want %q", dropped, want)
			}
			for _, want := range []string{"server: gale-test", "x-frame-options: DENY", "vary: Origin", "cache-control: public, max-age=60"} {
				if !slices.Contains(h2, want) {
					t.Errorf("HPACK lacks %q: %q", want, h2)
				}
			}
			if slices.ContainsFunc(h2, func(f string) bool { return strings.HasPrefix(f, "accept-ranges:") }) {
				t.Errorf("HPACK keeps a field a rule removed: %q", h2)
			}
		})
	}
}

// headFieldSet parses a pre-rendered HTTP/1.1 head as the server sends it
// and returns its fields as sorted "name: value" lines (names lower-cased,
// Date left out), apart from the connection-specific ones, returned
// second. The status must be 200.
func headFieldSet(t *testing.T, head []byte) (fields, connSpecific []string) {
	t.Helper()
	wire := AppendHead(nil, head, false, false)
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(wire)), &http.Request{Method: "HEAD"})
	if err != nil {
		t.Fatalf("parsing the head: %v\n%s", err, wire)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("head status %d", resp.StatusCode)
	}
	for name, vs := range resp.Header {
		name = strings.ToLower(name)
		if name == "date" {
			continue
		}
		for _, v := range vs {
			if codec.ConnectionSpecific([]byte(name)) {
				connSpecific = append(connSpecific, name+": "+v)
			} else {
				fields = append(fields, name+": "+v)
			}
		}
	}
	slices.Sort(fields)
	slices.Sort(connSpecific)
	return fields, connSpecific
}

// hpackFieldSet decodes an HPACK block with x/net's decoder and returns its
// regular fields as sorted "name: value" lines. The block must start with
// ":status: 200" and hold no other pseudo-header, only lower-case names
// and no Date.
func hpackFieldSet(t *testing.T, block []byte) []string {
	t.Helper()
	hfs, err := hpack.NewDecoder(4096, nil).DecodeFull(block)
	if err != nil {
		t.Fatalf("decoding the HPACK block: %v", err)
	}
	if len(hfs) == 0 || hfs[0].Name != ":status" || hfs[0].Value != "200" {
		t.Fatalf("block does not start with :status 200: %v", hfs)
	}
	var fields []string
	for _, f := range hfs[1:] {
		switch {
		case f.IsPseudo():
			t.Errorf("pseudo-header %q after :status", f.Name)
		case f.Name != strings.ToLower(f.Name):
			t.Errorf("name %q is not lower-case", f.Name)
		case f.Name == "date":
			t.Errorf("the block has a Date field: %q", f.Value)
		}
		fields = append(fields, f.Name+": "+f.Value)
	}
	slices.Sort(fields)
	return fields
}
