package app

import (
	"fmt"
	"testing"

	"gale/acme/acmetest"
	"gale/internal/redistest"
)

// TestClusterACMEOneIssuance: three instances share certificates through
// Redis (the default storage with cluster.redis): one of them obtains
// a.gale.test (the others wait on its lock, then load it), the CA issues
// it once, and all three serve it. The CA validates HTTP-01 at the first
// instance, whichever instance placed the order: the challenge's answer
// is in the shared store too.
func TestClusterACMEOneIssuance(t *testing.T) {
	rs := redistest.Start(t)
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	var nodes []*acmeServer
	for i := range 3 {
		y := fmt.Sprintf("listen:\n  - \"127.0.0.1:0\"\n  - address: \"127.0.0.1:0\"\n    tls: {automatic: {ca: %q, ca_root: %q, domains: [a.gale.test], challenges: [http-01]}}\n"+
			"cluster: {redis: {address: %q, prefix: %q}, instance: gale-%d}\n"+
			"routes:\n  - path: /\n    respond: {body: \"hello\\n\"}\n", ca.URL, ca.RootFile, rs.Addr, t.Name()+":", i)
		nodes = append(nodes, startACME(t, y, ""))
	}
	ca.Ready(port(t, nodes[0].plain), port(t, nodes[0].tls))
	for i, n := range nodes {
		c, err := dialName(n.tls, "a.gale.test", ca.IssuerRoots())
		if err != nil {
			t.Fatalf("gale-%d: handshake for a.gale.test: %v\n%s", i, err, n.log)
		}
		getHello(t, c, "a.gale.test")
		c.Close()
	}
	if n := ca.IssuedFor("a.gale.test"); n != 1 {
		t.Errorf("issued %d certificates for a.gale.test over three instances, want 1", n)
	}
}
