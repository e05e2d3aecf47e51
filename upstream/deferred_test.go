package upstream

import (
	"errors"
	"testing"
)

func TestDeferredSettle(t *testing.T) {
	var got []string
	abort := func() { got = append(got, "abort") }
	fail := func(status int, why string) { got = append(got, why) }
	lost := func(err error) { got = append(got, "lost: "+err.Error()) }

	var d Deferred
	if d.ClientClosed() || d.ConnLost(errors.New("x")) || d.ConnGone() {
		t.Fatal("not busy: nothing may be recorded")
	}
	if d.Settle(abort, fail, lost) || len(got) != 0 {
		t.Fatalf("settled %v with nothing recorded", got)
	}
	d.Busy = true
	if !d.ConnLost(errors.New("reset")) || !d.ConnLost(errors.New("later")) || !d.ConnGone() {
		t.Fatal("busy: the loss is recorded")
	}
	d.Fault, d.Why = 502, "bad"
	d.Busy = false
	if !d.Settle(abort, fail, lost) || !d.Settle(abort, fail, lost) || d.Settle(abort, fail, lost) {
		t.Fatalf("settles: %v", got)
	}
	if len(got) != 2 || got[0] != "bad" || got[1] != "lost: reset" {
		t.Fatalf("got %v, want the fault first, then the first loss", got)
	}
	d.Busy = true
	d.ClientClosed()
	d.ConnLost(nil)
	d.ForgetConn()
	got = got[:0]
	d.Settle(abort, fail, lost)
	if len(got) != 1 || got[0] != "abort" || d.ConnGone() {
		t.Fatalf("got %v, want abort only", got)
	}
}
