package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"gale/config"
)

// Client calls a running gale's admin API, as the config a names it:
// over its unix socket, or over TCP with its token.
type Client struct {
	a  config.Admin
	hc *http.Client
}

// NewClient returns a client of the API a. It fails when the config has
// no admin API.
func NewClient(a config.Admin) (*Client, error) {
	if a.Network == "" {
		return nil, errors.New("admin: the config has no admin.listen")
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, a.Network, a.Address)
		},
		DisableKeepAlives: true,
	}
	return &Client{a: a, hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}, nil
}

// Response is an answer of the API.
type Response struct {
	Status int
	Body   []byte
}

// Do sends one request: method, path (with its query) and body (nil for
// none), and reads the answer (up to 16MiB). The error is a transport
// error; a refusal is a Response with its status.
func (c *Client) Do(method, path string, body []byte, header http.Header) (*Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://gale-admin"+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if c.a.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.a.Token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin API at %s: %w", c.a.Listen, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("admin API at %s: %w", c.a.Listen, err)
	}
	return &Response{Status: resp.StatusCode, Body: b}, nil
}
