package h1

import (
	"strings"
	"testing"

	"gale/codec"
)

// TestH1BodySource reads request bodies through the HTTP/1.1 body
// source, split at every byte and consumed a few bytes at a time: the
// payload comes out de-framed (no chunk sizes, extensions or trailer
// fields), the bytes after the body stay for the next request, and Raw
// counts the body's bytes with their framing.
func TestH1BodySource(t *testing.T) {
	cases := []struct {
		name string
		req  codec.Request
		wire string
	}{
		{"chunked", codec.Request{Chunked: true, ContentLength: -1},
			"5;ext=1\r\nhello\r\n006\r\n world\r\n0\r\nX-T: v\r\n\r\n"},
		{"length", codec.Request{ContentLength: 11}, "hello world"},
	}
	const next = "GET / HTTP/1.1\r\n"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newProxyFixture(t, "  - path: /api/\n    proxy: {to: [\"127.0.0.1:9\"]}\n")
			set := f.cs.loop.Shared.Set.Load()
			wire := c.wire + next
			for split := 0; split <= len(wire); split++ {
				for _, step := range []int{1, 3, 64} {
					src := &f.cs.src
					src.start(&c.req, set)
					f.cl.in = []byte(wire[:split])
					if p, done, _ := src.Next(); len(p) != 0 || done {
						t.Fatalf("split %d: the source read %q before the engine consumed the head", split, p)
					}
					src.arm()
					var got strings.Builder
					ended := false
					pump := func() {
						for !ended {
							p, done, err := src.Next()
							if err != nil {
								t.Fatalf("split %d: %v", split, err)
							}
							if len(p) == 0 {
								ended = done
								return
							}
							n := min(step, len(p))
							got.Write(p[:n])
							src.Consume(n)
							ended = done && n == len(p)
						}
					}
					pump()
					f.cl.in = append(f.cl.in, wire[split:]...)
					pump()
					if !ended || got.String() != "hello world" {
						t.Fatalf("split %d step %d: payload %q ended %v", split, step, got.String(), ended)
					}
					if string(f.cl.in) != next || src.Raw() != int64(len(c.wire)) {
						t.Fatalf("split %d step %d: left %q, raw %d; want %q and %d", split, step, f.cl.in, src.Raw(), next, len(c.wire))
					}
				}
			}
		})
	}
}
