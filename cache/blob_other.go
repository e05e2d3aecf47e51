//go:build !linux

package cache

import (
	"errors"

	"gale/fds"
)

// Blob is, on Linux, a copy of a representation's body in a sealed memfd
// for sendfile(2); elsewhere the cache makes none and bodies are sent
// from memory.
type Blob struct{ size int64 }

func newBlob(body []byte, budget *fds.Budget) *Blob { return nil }

// Size is the Blob's length in bytes.
func (b *Blob) Size() int64 { return b.size }

var errNoBlob = errors.New("cache: no sendfile on this platform")

// SendTo is not supported here.
func (b *Blob) SendTo(sock int, off *int64, n int) (int, error) { return 0, errNoBlob }
