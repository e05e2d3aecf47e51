package handlers

import (
	"testing"

	"gale/config"
)

func TestRespond(t *testing.T) {
	tests := []struct {
		name     string
		conf     config.Respond
		status   int
		body, ct string
	}{
		{"text", config.Respond{Status: 200, Body: "hello\n", ContentType: "text/plain"}, 200, "hello\n", "text/plain"},
		{"default type", config.Respond{Status: 200, Body: "hi"}, 200, "hi", "text/plain; charset=utf-8"},
		{"json", config.Respond{Status: 503, Body: `{"down":true}`, ContentType: "application/json"}, 503, `{"down":true}`, "application/json"},
		{"empty", config.Respond{Status: 200}, 200, "", ""},
		{"no content", config.Respond{Status: 204}, 204, "", ""},
		{"default status", config.Respond{Body: "x"}, 200, "x", "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := tt.conf
			rt := mustBuild(t, &config.Config{Routes: []config.Route{{Path: "/", Respond: &conf}}})
			for _, method := range []string{"GET", "HEAD", "POST"} {
				c := serve(t, rt, request(method, "example.com", "/anything?x=1"))
				if c.Resp.Status != tt.status || string(c.Resp.Body) != tt.body || header(&c.Resp, "Content-Type") != tt.ct {
					t.Errorf("%s: got %d %q %q; want %d %q %q", method, c.Resp.Status, c.Resp.Body,
						header(&c.Resp, "Content-Type"), tt.status, tt.body, tt.ct)
				}
				if tt.body == "" && c.Resp.Body != nil {
					t.Errorf("%s: empty body should be nil", method)
				}
				if len(c.Resp.Headers) > 1 || c.Resp.File != nil {
					t.Errorf("%s: extra fields %q", method, c.Resp.Headers)
				}
			}
		})
	}
}
