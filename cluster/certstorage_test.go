package cluster

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"testing"
	"time"

	"gale/config"
	"gale/internal/redistest"
)

func newTestStore(t *testing.T, addr string) *Store {
	t.Helper()
	c := &config.Cluster{Redis: &config.Redis{Address: addr, Prefix: t.Name() + ":"}}
	s := New(c, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(s.Close)
	return s
}

// TestCertStorageFiles: Store, Load, Exists, Stat, List (flat and
// recursive) and Delete of a directory, as certmagic uses them.
func TestCertStorageFiles(t *testing.T) {
	rs := redistest.Start(t)
	cs := newTestStore(t, rs.Addr).CertStorage(0)
	ctx := context.Background()
	files := map[string]string{
		"certificates/acme/a.example/a.example.crt": "A",
		"certificates/acme/a.example/a.example.key": "AK",
		"certificates/acme/b.example/b.example.crt": "B",
		"acme/account.json":                         "{}",
	}
	for k, v := range files {
		if err := cs.Store(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := cs.Load(ctx, "certificates/acme/a.example/a.example.key"); err != nil || string(v) != "AK" {
		t.Fatalf("Load = %q, %v", v, err)
	}
	if _, err := cs.Load(ctx, "certificates/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a missing key: %v, want fs.ErrNotExist", err)
	}
	for key, want := range map[string]bool{"certificates": true, "certificates/acme/a.example": true, "acme/account.json": true, "certificates/acm": false, "x": false} {
		if got := cs.Exists(ctx, key); got != want {
			t.Errorf("Exists(%q) = %v, want %v", key, got, want)
		}
	}
	if ki, err := cs.Stat(ctx, "certificates/acme/a.example/a.example.key"); err != nil || !ki.IsTerminal || ki.Size != 2 || time.Since(ki.Modified) > time.Minute {
		t.Errorf("Stat of a file = %+v, %v", ki, err)
	}
	if ki, err := cs.Stat(ctx, "certificates/acme"); err != nil || ki.IsTerminal {
		t.Errorf("Stat of a directory = %+v, %v", ki, err)
	}
	if _, err := cs.Stat(ctx, "nothing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of nothing: %v", err)
	}
	flat, err := cs.List(ctx, "certificates/acme", false)
	if want := []string{"certificates/acme/a.example", "certificates/acme/b.example"}; err != nil || !slices.Equal(flat, want) {
		t.Errorf("List flat = %v, %v; want %v", flat, err, want)
	}
	all, err := cs.List(ctx, "certificates", true)
	if err != nil || len(all) != 3 {
		t.Errorf("List recursive = %v, %v", all, err)
	}
	if err := cs.Delete(ctx, "certificates/acme/a.example"); err != nil {
		t.Fatal(err)
	}
	if cs.Exists(ctx, "certificates/acme/a.example") || cs.Exists(ctx, "certificates/acme/a.example/a.example.crt") {
		t.Error("a deleted directory still exists")
	}
	if !cs.Exists(ctx, "certificates/acme/b.example/b.example.crt") {
		t.Error("Delete of a directory removed its sibling")
	}
}

// TestCertStorageLockExpires: a lock is exclusive while its holder
// renews it, and a holder that stops renewing (its process died) frees
// it within the lock's expiry, even after certmagic asked for a long
// lease (it does at every obtain attempt: the retry interval plus the
// obtain timeout, minutes).
func TestCertStorageLockExpires(t *testing.T) {
	rs := redistest.Start(t)
	const ttl = 900 * time.Millisecond
	holder := newTestStore(t, rs.Addr).CertStorage(ttl)
	other := newTestStore(t, rs.Addr).CertStorage(ttl)
	ctx := context.Background()
	if err := holder.Lock(ctx, "issue_cert_a.example"); err != nil {
		t.Fatal(err)
	}
	// Held and renewed across several expiries: the other cannot take it.
	short, cancel := context.WithTimeout(ctx, 3*ttl)
	err := other.Lock(short, "issue_cert_a.example")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the other instance took a held lock: %v", err)
	}
	// The holder starts an obtain attempt and dies at once: its
	// connection goes and nothing renews the lock.
	if err := holder.RenewLockLease(ctx, "issue_cert_a.example", 150*time.Second); err != nil {
		t.Fatal(err)
	}
	holder.s.Close()
	died := time.Now()
	wait, cancel := context.WithTimeout(ctx, 5*ttl)
	defer cancel()
	if err := other.Lock(wait, "issue_cert_a.example"); err != nil {
		t.Fatalf("the lock of a dead holder was not freed: %v", err)
	}
	if el := time.Since(died); el > ttl+2*lockPoll {
		t.Errorf("took the dead holder's lock after %v, want within %v", el, ttl+2*lockPoll)
	}
	if err := other.Unlock(ctx, "issue_cert_a.example"); err != nil {
		t.Fatal(err)
	}
	if err := other.Lock(ctx, "issue_cert_a.example"); err != nil {
		t.Fatalf("an unlocked lock: %v", err)
	}
	_ = other.Unlock(ctx, "issue_cert_a.example")
}
