package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// checkResponses sends three requests on one keep-alive connection and
// verifies each response's status, Content-Length and every body byte.
func checkResponses(port, size int) error {
	nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	want := makeBody(size)
	br := bufio.NewReader(nc)
	for i := 0; i < 3; i++ {
		if _, err := io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return fmt.Errorf("response %d: %w", i, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("response %d body: %w", i, err)
		}
		if resp.StatusCode != 200 || !bytes.Equal(got, want) {
			return fmt.Errorf("response %d: status %d, %d body bytes, equal %v", i, resp.StatusCode, len(got), bytes.Equal(got, want))
		}
	}
	return nil
}
