// Package poll waits for a condition that announces nothing when it
// changes: a counter, a scrape, a log file, the kernel's state. Tests use
// it to wait on the event itself rather than on a guessed duration.
package poll

import "time"

// Until calls cond until it reports true or d has passed, and reports
// whether it did. It polls at once, then after pauses doubling from
// 50 µs to 10 ms: fast for what comes at once, cheap for what takes long.
// The pause is the polling interval, not a guess at how long anything
// takes.
func Until(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for pause := 50 * time.Microsecond; !cond(); pause = min(2*pause, 10*time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
	return true
}

// TB is the part of testing.TB that Must uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Must is Until that fails the test, naming what it waited for, when d
// passed first.
func Must(t TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}
