package accesslog

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gale/config"
)

// After the file is moved away (as logrotate does) and Reopen asked, new
// lines go to a new file at the path; with lines submitted throughout,
// every line is written exactly once, the moved file holds a first run of
// them and the new one the rest, in order.
func TestReopenAfterMove(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	a, err := Open(config.AccessLog{Path: path, Format: "combined"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const total = 20000
	moved := make(chan struct{})
	done := make(chan []byte)
	go func() { // the loops' side: lines in batches of ten
		var buf []byte
		for i := range total {
			buf = append(buf, "line "...)
			buf = strconv.AppendInt(buf, int64(i), 10)
			buf = append(buf, '\n')
			if i%10 == 9 {
				for len(a.queue) > cap(a.queue)/2 { // pace: lose nothing to a full queue
				}
				buf = a.Submit(buf)
			}
			if i == total/2 {
				<-moved // the second half comes after the reopen was asked
			}
		}
		done <- buf
	}()
	// Once lines reach the file, move it and ask for a reopen, with lines
	// still queued.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if st, err := os.Stat(path); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no line reached the file")
		}
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	a.Reopen()
	close(moved)
	buf := <-done
	a.Submit(buf)
	a.Close()
	if d := a.Dropped(); d != 0 {
		t.Fatalf("%d lines dropped", d)
	}
	oldB, err1 := os.ReadFile(path + ".1")
	newB, err2 := os.ReadFile(path)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	oldL, newL := strings.Split(strings.TrimSuffix(string(oldB), "\n"), "\n"), strings.Split(strings.TrimSuffix(string(newB), "\n"), "\n")
	if len(oldB) == 0 || len(newB) == 0 {
		t.Fatalf("moved file %d lines, new file %d lines: the move did not split the log", len(oldL), len(newL))
	}
	all := append(oldL, newL...)
	if len(all) != total {
		t.Fatalf("%d lines written (%d + %d), want %d", len(all), len(oldL), len(newL), total)
	}
	for i, l := range all {
		if l != fmt.Sprintf("line %d", i) {
			t.Fatalf("line %d is %q: lost, duplicated or out of order", i, l)
		}
	}
}

// A write that fails (a full disk) drops its lines and counts them, and
// the process log says so once per run of drops.
func TestWriteFailureCounted(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	var logged bytes.Buffer
	a, err := Open(config.AccessLog{Path: "/dev/full", Format: "combined"}, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	a.Submit([]byte("one\ntwo\nthree\n"))
	a.Close()
	if d := a.Dropped(); d != 3 {
		t.Errorf("%d lines dropped, want 3", d)
	}
	if !strings.Contains(logged.String(), "lines dropped") || !strings.Contains(logged.String(), "dropped=3") {
		t.Errorf("process log: %q", logged.String())
	}
}
