package main

import (
	"io"
	"os"
	"testing"
	"time"
)

// TestSoakShort runs the soak for GALE_SOAK (for example "60s"), at a
// low rate with 200 idle connections, when that variable is set:
//
//	GALE_SOAK=60s go test -run TestSoakShort -v ./bench
//
// Every exchange must succeed; the flatness verdict is logged (a minute
// is too short to judge a leak by).
func TestSoakShort(t *testing.T) {
	d := os.Getenv("GALE_SOAK")
	if d == "" {
		t.Skip("set GALE_SOAK=60s to run the short soak")
	}
	dur, err := time.ParseDuration(d)
	if err != nil {
		t.Fatalf("GALE_SOAK=%q: %v", d, err)
	}
	o := &soakOptions{duration: dur, rate: 150, idle: 200, reload: 10 * time.Second, certSwap: 20 * time.Second,
		sample: max(dur/30, time.Second), serverCPUs: "0", clientCPUs: "1", h2WithProxy: soakH2()}
	rep, err := soak(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.markdown())
	for kind, e := range rep.Errors {
		t.Errorf("%s: %d errors, first: %s", kind, e.Count, e.Example)
	}
	if rep.Reloads["reloaded"] == 0 {
		t.Error("no reload happened")
	}
}

// soakH2 reports whether the soak includes HTTP/2 (GALE_SOAK_H2=0 leaves
// it out).
func soakH2() bool { return os.Getenv("GALE_SOAK_H2") != "0" }
