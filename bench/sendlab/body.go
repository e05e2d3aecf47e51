package main

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// makeBody returns size deterministic bytes, the same in server and checker.
func makeBody(size int) []byte {
	b := make([]byte, size)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// sealedMemfd copies body into a memfd sealed against any change, as gale's
// cache does for bodies it sends with sendfile.
func sealedMemfd(body []byte) (int, error) {
	fd, err := unix.MemfdCreate("sendlab-body", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, fmt.Errorf("memfd_create: %w", err)
	}
	for off := 0; off < len(body); {
		n, err := unix.Write(fd, body[off:])
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("memfd write: %w", err)
		}
		off += n
	}
	seals := unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("memfd seal: %w", err)
	}
	return fd, nil
}

// headMaker builds the response head: about 200 bytes with a Date that
// changes once a second, so the head cannot live with the body.
type headMaker struct {
	size int
	sec  int64
	buf  []byte
}

func (h *headMaker) head() []byte {
	now := time.Now()
	if now.Unix() != h.sec || h.buf == nil {
		h.sec = now.Unix()
		h.buf = fmt.Appendf(h.buf[:0], "HTTP/1.1 200 OK\r\n"+
			"Server: sendlab\r\n"+
			"Date: %s\r\n"+
			"Content-Type: application/octet-stream\r\n"+
			"Content-Length: %d\r\n"+
			"Last-Modified: Sun, 06 Dec 2026 08:00:00 GMT\r\n"+
			"ETag: \"sendlab-%x\"\r\n"+
			"Accept-Ranges: bytes\r\n\r\n",
			now.UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT"), h.size, h.size)
	}
	return h.buf
}
