package app

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gale/gateway/fpmtest"
)

// A php route's cache stores a script's answer that allows it and serves
// it again without running the script; a script that sets no freshness
// (a dynamic page, under a path that looks static: web cache deception)
// runs each time.
func TestProxyCachePHP(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	counter := filepath.Join(dir, "count")
	script := `<?php
$f = getenv("COUNTER");
$n = (int)@file_get_contents($f) + 1;
file_put_contents($f, (string)$n);
if ($_SERVER["SCRIPT_NAME"] === "/cached.php") { header("Cache-Control: max-age=60"); }
echo $n;
`
	for _, name := range []string{"cached.php", "account.php"} {
		writeSettled(t, filepath.Join(site, name), []byte(script))
	}
	fpm := fpmtest.Start(t, "app", dir, "cache", false, 2, "env[COUNTER] = "+counter)
	cfg := writeConfig(t, dir, fmt.Sprintf("listen: [\"127.0.0.1:0\"]\nroutes:\n  - path: /\n    cache: {}\n    php: {to: %q, root: site}\n", fpm.Listen))
	ts := runServer(t, cfg, dir)
	c := boundClient(t, "h1", "127.0.0.1")
	base := "http://" + ts.addr
	_, b1 := accessGet(t, c, "h1", base+"/cached.php")
	r2, b2 := accessGet(t, c, "h1", base+"/cached.php")
	if b1 != "1" || b2 != "1" || r2.Header.Get("Cache-Status") != "gale; hit" {
		t.Fatalf("cached.php: %q then %q (Cache-Status %q); want one answer stored", b1, b2, r2.Header.Get("Cache-Status"))
	}
	_, d1 := accessGet(t, c, "h1", base+"/account.php/x.css")
	_, d2 := accessGet(t, c, "h1", base+"/account.php/x.css")
	if d1 != "2" || d2 != "3" {
		t.Fatalf("account.php/x.css: the dynamic page was stored (%q twice)", d1)
	}
}
