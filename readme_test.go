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
