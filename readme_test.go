package gale_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"gale/config"
)

// heading is one Markdown heading of a file, outside fenced code.
type heading struct {
	level int
	text  string
	slug  string
}

// readme returns README.md's lines.
func readme(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(data), "\n")
}

// headings returns the ATX headings of lines outside fenced code blocks,
// each with the anchor GitHub gives it (a repeated slug gets -1, -2, ...).
func headings(lines []string) []heading {
	var out []heading
	seen := map[string]int{}
	fenced := false
	for _, line := range lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		text := strings.TrimSpace(line[level:])
		slug := githubSlug(text)
		if n := seen[slug]; n > 0 {
			seen[slug]++
			slug = slug + "-" + strconv.Itoa(n)
		} else {
			seen[slug] = 1
		}
		out = append(out, heading{level, text, slug})
	}
	return out
}

var mdLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// githubSlug is the anchor GitHub renders for a heading: the rendered text
// (code spans and links as their text) in lower case, with everything but
// letters, digits, marks, spaces, "-" and "_" removed and each space made a
// "-".
func githubSlug(text string) string {
	text = mdLink.ReplaceAllString(text, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var anchorLink = regexp.MustCompile(`\]\(#([^)]*)\)`)

// TestReadmeAnchors checks that every in-page link of README.md, outside
// fenced code, names a heading's anchor, and that the table of contents
// lists every section.
func TestReadmeAnchors(t *testing.T) {
	lines := readme(t)
	hs := headings(lines)
	anchors := map[string]bool{}
	for _, h := range hs {
		anchors[h.slug] = true
	}
	fenced := false
	links := 0
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range anchorLink.FindAllStringSubmatch(line, -1) {
			links++
			if !anchors[m[1]] {
				t.Errorf("README.md:%d: link to #%s, which no heading has", i+1, m[1])
			}
		}
	}
	if links < 20 {
		t.Fatalf("found %d in-page links, expected the table of contents' and more", links)
	}
	toc := tableOfContents(t, lines)
	for _, h := range hs {
		if h.level >= 2 && h.level <= 3 && h.slug != "contents" && !toc[h.slug] {
			t.Errorf("README.md: the table of contents leaves out %q (#%s)", h.text, h.slug)
		}
	}
}

// tableOfContents returns the anchors the list under "## Contents" links.
func tableOfContents(t *testing.T, lines []string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	in := false
	for _, line := range lines {
		switch {
		case line == "## Contents":
			in = true
		case in && strings.HasPrefix(line, "#"):
			return out
		case in:
			for _, m := range anchorLink.FindAllStringSubmatch(line, -1) {
				out[m[1]] = true
			}
		}
	}
	if !in {
		t.Fatal(`README.md has no "## Contents" section`)
	}
	return out
}

// TestGithubSlug pins the anchor rules on headings of the README's kinds.
func TestGithubSlug(t *testing.T) {
	for text, want := range map[string]string{
		"HTTP/2":                               "http2",
		"`server`: reactor and protocol":       "server-reactor-and-protocol",
		"`mime_types`, `log`, `access_log`":    "mime_types-log-access_log",
		"Matching, rewrites and access":        "matching-rewrites-and-access",
		"1. A static site":                     "1-a-static-site",
		"FastCGI and PHP routes":               "fastcgi-and-php-routes",
		"[Linked](https://example.com) header": "linked-header",
	} {
		if got := githubSlug(text); got != want {
			t.Errorf("githubSlug(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestReadmeSnippets loads every YAML block of README.md marked with a
// preceding "<!-- validate -->" line with the config loader, in a directory
// that holds what the getting-started walk makes: site/index.html,
// app/index.php and a certificate for localhost in certs/.
func TestReadmeSnippets(t *testing.T) {
	blocks := markedYAML(t, readme(t))
	if len(blocks) < 5 {
		t.Fatalf("found %d marked YAML blocks, expected the getting-started steps", len(blocks))
	}
	dir := walkDir(t)
	for _, b := range blocks {
		file := filepath.Join(dir, "gale.yaml")
		if err := os.WriteFile(file, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(file); err != nil {
			t.Errorf("README.md:%d: the marked YAML block does not load:\n%v", b.line, err)
		}
	}
}

// yamlBlock is a fenced YAML block and the line its text starts on.
type yamlBlock struct {
	line int
	text string
}

// markedYAML returns the ```yaml blocks that follow a "<!-- validate -->"
// line (blank lines between them allowed).
func markedYAML(t *testing.T, lines []string) []yamlBlock {
	t.Helper()
	var out []yamlBlock
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "<!-- validate -->" {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) || lines[j] != "```yaml" {
			t.Errorf("README.md:%d: <!-- validate --> is not followed by a ```yaml block", i+1)
			continue
		}
		var b bytes.Buffer
		k := j + 1
		for ; k < len(lines) && lines[k] != "```"; k++ {
			b.WriteString(lines[k] + "\n")
		}
		if k == len(lines) {
			t.Fatalf("README.md:%d: unterminated ```yaml block", j+1)
		}
		out = append(out, yamlBlock{j + 2, b.String()})
		i = k
	}
	return out
}

// walkDir makes the files the getting-started walk creates.
func walkDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cert, key := selfSigned(t)
	for name, data := range map[string][]byte{
		"site/index.html":     []byte("<h1>hello</h1>\n"),
		"app/index.php":       []byte("<?php echo \"hello\\n\";\n"),
		"backend/status.json": []byte("{\"ok\": true}\n"),
		"certs/cert.pem":      cert,
		"certs/key.pem":       key,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// selfSigned returns a PEM certificate for localhost and its key.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

var referenceLink = regexp.MustCompile(`\]\(config/REFERENCE\.md#([^)]*)\)`)

// TestReadmeReferenceLinks checks that every link of README.md into a
// section of config/REFERENCE.md, and every in-page link of that file,
// names one of its headings' anchors.
func TestReadmeReferenceLinks(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("config", config.ReferenceFile))
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.Split(string(data), "\n")
	anchors := map[string]bool{}
	for _, h := range headings(ref) {
		anchors[h.slug] = true
	}
	for i, line := range outsideFences(ref) {
		for _, m := range anchorLink.FindAllStringSubmatch(line, -1) {
			if !anchors[m[1]] {
				t.Errorf("config/REFERENCE.md:%d: link to #%s, which no heading has", i+1, m[1])
			}
		}
	}
	links := 0
	for i, line := range outsideFences(readme(t)) {
		for _, m := range referenceLink.FindAllStringSubmatch(line, -1) {
			links++
			if !anchors[m[1]] {
				t.Errorf("README.md:%d: link to config/REFERENCE.md#%s, which no heading there has", i+1, m[1])
			}
		}
	}
	if links < 5 {
		t.Fatalf("found %d links into config/REFERENCE.md's sections, expected one per configuration section", links)
	}
}

// outsideFences returns lines with those inside fenced code blocks (and
// the fences) blanked, so that indexes stay line numbers.
func outsideFences(lines []string) []string {
	out := make([]string, len(lines))
	fenced := false
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out[i] = line
		}
	}
	return out
}

// maxKeyRows is how many rows of one README table may name config keys
// before the table counts as a hand-written copy of the reference.
const maxKeyRows = 5

// TestReadmeNoKeyTables fails when README.md holds a table whose first
// column names config keys in more than maxKeyRows rows: the keys' types,
// defaults and meanings belong in the key tables (config/keys.go), which
// generate config/REFERENCE.md, and the README links there.
func TestReadmeNoKeyTables(t *testing.T) {
	keys := configKeyNames(t)
	for _, tb := range keyTables(readme(t), keys) {
		if tb.rows > maxKeyRows {
			t.Errorf("README.md:%d: a table whose first column names %d config keys (%s, ...); "+
				"link to config/REFERENCE.md instead, and put what the reference lacks into the keys' docs in config/keys.go",
				tb.line, tb.rows, tb.first)
		}
	}
}

// TestKeyTableDetection checks that keyTables recognises a table of keys
// written as the README used to write them, and not the tables it keeps.
func TestKeyTableDetection(t *testing.T) {
	keys := configKeyNames(t)
	md := strings.Split(`| key | type | default | meaning |
|---|---|---|---|
| `+"`event_loops`"+` | int | `+"`0`"+` | loops |
| `+"`reuse_port`"+` | bool | `+"`true`"+` | SO_REUSEPORT |
| `+"`limits.body_bytes`"+` | size | `+"`10MiB`"+` | 413 beyond |
| `+"`proxy.health_check.interval` / `.timeout`"+` | duration | `+"`5s`"+` | checks |
| `+"`.retries`"+` | int | `+"`1`"+` | retries |
| `+"`static.compress.min_bytes`"+` | size | `+"`1KiB`"+` | small files |

| package | what it owns |
|---|---|
| `+"`config`"+` | the YAML schema |
| `+"`cache`"+` | the static file cache |
| `+"`proxy`"+` | the reverse proxy |
| `+"`fastcgi`"+` | FastCGI |`, "\n")
	got := keyTables(md, keys)
	if len(got) != 2 || got[0].rows != 6 || got[1].rows != 0 {
		t.Fatalf("keyTables = %+v, want 6 key rows in the first table and none in the second", got)
	}
}

// configKeyNames returns every dotted suffix of the path of each key the
// reference lists ("routes[].proxy.retries" gives "retries",
// "proxy.retries" and "routes.proxy.retries"), but of keys whose value is
// only a mapping: those share their names with packages and features.
func configKeyNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, line := range strings.Split(string(config.Reference()), "\n") {
		cells := tableCells(line)
		if len(cells) < 2 || !strings.HasPrefix(cells[0], "`") || cells[1] == "mapping" {
			continue
		}
		segs := strings.Split(strings.ReplaceAll(strings.Trim(cells[0], "`"), "[]", ""), ".")
		for i := range segs {
			out[strings.Join(segs[i:], ".")] = true
		}
	}
	if len(out) < 100 {
		t.Fatalf("found %d key names in the reference, expected hundreds", len(out))
	}
	return out
}

// keyTable is a Markdown table of README.md: the line it starts on, how
// many of its body rows name a config key in their first cell, and the
// first such cell.
type keyTable struct {
	line  int
	rows  int
	first string
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// keyTables returns the tables of lines outside fenced code, each with
// the body rows whose first cell holds a code span naming a key of keys
// (after "[]" and a leading "." are taken off).
func keyTables(lines []string, keys map[string]bool) []keyTable {
	var out []keyTable
	var cur *keyTable
	body := 0
	for i, line := range outsideFences(lines) {
		if !strings.HasPrefix(line, "|") {
			cur = nil
			continue
		}
		if cur == nil {
			out = append(out, keyTable{line: i + 1})
			cur, body = &out[len(out)-1], 0
			continue // the header row
		}
		if body++; body == 1 {
			continue // the delimiter row
		}
		cells := tableCells(line)
		if len(cells) == 0 {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[0], -1) {
			name := strings.TrimPrefix(strings.ReplaceAll(m[1], "[]", ""), ".")
			if keys[name] {
				if cur.rows == 0 {
					cur.first = cells[0]
				}
				cur.rows++
				break
			}
		}
	}
	return out
}

// tableCells splits a Markdown table row into its trimmed cells; "\|" is
// a pipe inside a cell.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") {
		return nil
	}
	var cells []string
	var b strings.Builder
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(line[i])
		}
	}
	return cells
}
