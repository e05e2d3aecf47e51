package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// TestSchemaCommitted fails when config/gale.schema.json is not what
// JSONSchema generates from the key tables.
func TestSchemaCommitted(t *testing.T) {
	got, err := os.ReadFile("gale.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, JSONSchema()) {
		t.Fatal("config/gale.schema.json differs from the key tables; regenerate it: go run ./cmd/gale schema > config/gale.schema.json")
	}
}

// TestSchemaLeavesOutGatedKeys checks that a key whose feature has not
// landed, which the decoder refuses, is not offered by the schema.
func TestSchemaLeavesOutGatedKeys(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(jsonSchema(map[string]string{"server.http2": "HTTP/2"}), &s); err != nil {
		t.Fatal(err)
	}
	server := s.Properties["server"].Properties
	if _, ok := server["http2"]; ok || server["timeouts"] == nil {
		t.Fatalf("gated server.http2 offered, or server's other keys missing: %v", server)
	}
}

// compileSchema compiles JSONSchema with a real validator.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSONSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("gale.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("gale.schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return sch
}

// yamlToJSON turns a YAML document into the JSON value an editor's
// language server validates: mappings with their keys as strings, anchors
// and merges expanded.
func yamlToJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("YAML: %v", err)
	}
	raw, err := json.Marshal(jsonable(v))
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = jsonable(e)
		}
		return out
	case map[any]any:
		out := map[string]any{}
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}

// exampleCopy puts data, the example file, where a user who followed its
// comments has it: in a directory that holds the example site (a link to
// examples/site) and the certificate they made for localhost
// (certs/cert.pem, certs/key.pem). It returns the copy's path.
func exampleCopy(t *testing.T, file string, data []byte) string {
	t.Helper()
	dir := t.TempDir()
	site, err := filepath.Abs(filepath.Join(filepath.Dir(file), "site"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(site, filepath.Join(dir, "site")); err != nil {
		t.Fatal(err)
	}
	p := newTestPair(t, "localhost")
	if err := os.Mkdir(filepath.Join(dir, "certs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"cert.pem": append(append([]byte{}, p.leafPEM...), p.interPEM...), "key.pem": p.keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, "certs", name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSchemaValidatesExamples validates every shipped example config (the
// Kubernetes ConfigMap's included) and every valid golden config against
// the schema, and checks that each example
// names the schema in its modeline.
func TestSchemaValidatesExamples(t *testing.T) {
	sch := compileSchema(t)
	examples, err := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, file := range examples {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte("# yaml-language-server: $schema=../config/gale.schema.json\n")) {
			t.Errorf("%s does not begin with the yaml-language-server modeline", file)
		}
		if _, err := Load(exampleCopy(t, file, data)); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		if err := sch.Validate(yamlToJSON(t, data)); err != nil {
			t.Errorf("%s: the schema rejects it: %v", file, err)
		}
	}
	// The config the Kubernetes example mounts from its ConfigMap.
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	cmData, err := os.ReadFile(filepath.Join("..", "examples", "kubernetes", "configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(cmData, &cm); err != nil || cm.Data["gale.yaml"] == "" {
		t.Fatalf("examples/kubernetes/configmap.yaml: no gale.yaml (%v)", err)
	}
	if err := sch.Validate(yamlToJSON(t, []byte(cm.Data["gale.yaml"]))); err != nil {
		t.Errorf("the Kubernetes ConfigMap's gale.yaml: the schema rejects it: %v", err)
	}

	goldens, _ := filepath.Glob(filepath.Join("testdata", "*.golden"))
	n := 0
	for _, file := range goldens {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		input, want, _ := bytes.Cut(data, []byte(goldenMarker))
		if bytes.HasPrefix(want, []byte("BUG")) || !bytes.HasPrefix(bytes.TrimSpace(want), []byte("{")) {
			continue // an error expectation
		}
		n++
		if err := sch.Validate(yamlToJSON(t, input)); err != nil {
			t.Errorf("%s: the schema rejects a config the decoder accepts: %v", file, err)
		}
	}
	if n < 15 {
		t.Fatalf("validated %d valid golden configs, expected at least 15", n)
	}
}

// TestSchemaRejectsInvalid checks a few invalid configs that both the
// schema and the decoder refuse.
func TestSchemaRejectsInvalid(t *testing.T) {
	sch := compileSchema(t)
	for _, doc := range []string{
		"listen: [\":0\"]\nroutes: [{path: /, respond: {}}]\nlisten_on: x\n",                  // unknown key
		"listen: [\":0\"]\nroutes: [{path: /, respond: {}}]\nserver: {reuse_port: \"yes\"}\n", // a string for a boolean
		"listen: [\":0\"]\nroutes: [{path: /, respond: {}}]\nlog: {level: verbose}\n",         // not an option
		"listen: [\":0\"]\n", // no routes
		"listen: [\":0\"]\nroutes: [{path: /, respond: {}, redirect: {to: /x}}]\n",                  // two handlers
		"listen: [\":0\"]\nroutes: [{path: /, respond: {}}]\nserver: {timeouts: {idle: 10}}\n",      // a duration without unit
		"listen: [\":0\"]\nroutes: [{path: /, respond: {}}]\nserver: {limits: {header_bytes: 0}}\n", // out of range
		"listen: [\":0\"]\nroutes: [{path: /, redirect: {to: /x, status: 300}}]\n",                  // not a redirect status
		"listen: [\":0\"]\nroutes: [{path: /, proxy: {to: []}}]\n",                                  // no upstream
	} {
		if _, err := Parse([]byte(doc), ""); err == nil {
			t.Errorf("the decoder accepts:\n%s", doc)
		}
		if err := sch.Validate(yamlToJSON(t, []byte(doc))); err == nil {
			t.Errorf("the schema accepts:\n%s", doc)
		}
	}
}

// keySamples are valid values for the string keys (and string items) whose
// decoder checks more than the type, by key path. The walk fails on a
// string key that has none, so a new key gets one.
var keySamples = map[string]any{
	"listen":                                     "127.0.0.1:0",
	"listen.address":                             "127.0.0.1:0",
	"listen.deny[]":                              "10.0.0.0/8",
	"server.trusted_proxies[]":                   "10.0.0.0/8",
	"listen.tls.certificates[].cert":             "cert.pem",
	"listen.tls.certificates[].key":              "key.pem",
	"listen.tls.automatic.domains[]":             "example.com",
	"listen.tls.automatic.email":                 "ops@example.com",
	"listen.tls.automatic.ca":                    "letsencrypt-staging",
	"listen.tls.automatic.ca_root":               "cert.pem",
	"listen.tls.automatic.storage":               "acme",
	"listen.tls.automatic.challenges":            []any{"tls-alpn-01"},
	"listen.tls.automatic.on_demand.ask":         "http://127.0.0.1:9/allowed",
	"listen.tls.automatic.on_demand.rate":        "10/m",
	"server.server_header":                       "gale",
	"mime_types":                                 map[string]any{".webmanifest": "application/manifest+json"},
	"access_log.path":                            "access.log",
	"admin.listen":                               "unix:admin.sock",
	"admin.token_file":                           "admin.token",
	"routes[].name":                              "api",
	"routes[].host":                              "example.com",
	"routes[].path":                              "/",
	"routes[].headers.request.set":               map[string]any{"X-A": "1"},
	"routes[].headers.request.add":               map[string]any{"X-A": []any{"1", "2"}},
	"routes[].headers.request.remove":            []any{"X-B"},
	"routes[].headers.response.set":              map[string]any{"X-A": "1"},
	"routes[].headers.response.add":              map[string]any{"X-A": []any{"1", "2"}},
	"routes[].headers.response.remove":           []any{"X-B"},
	"routes[].static.root":                       "site",
	"routes[].static.index":                      []any{"index.html"},
	"routes[].static.spa_fallback":               "/index.html",
	"routes[].static.cache_control":              "no-cache",
	"routes[].static.error_pages":                map[any]any{404: "404.html"},
	"routes[].respond.body":                      "hello",
	"routes[].respond.content_type":              "text/plain",
	"routes[].redirect.to":                       "/elsewhere",
	"routes[].fastcgi.to":                        "127.0.0.1:9",
	"routes[].fastcgi.root":                      "site",
	"routes[].fastcgi.env":                       map[string]any{"APP_ENV": "prod"},
	"routes[].fastcgi.trusted_proxies":           []any{"10.0.0.0/8"},
	"routes[].php.to":                            "127.0.0.1:9",
	"routes[].php.root":                          "site",
	"routes[].php.env":                           map[string]any{"APP_ENV": "prod"},
	"routes[].php.trusted_proxies":               []any{"10.0.0.0/8"},
	"routes[].fastcgi.split_path":                []any{".php"},
	"routes[].fastcgi.index":                     "index.php",
	"routes[].proxy.to":                          "127.0.0.1:9",
	"routes[].proxy.rewrite":                     "/v2/",
	"routes[].proxy.health_check.path":           "/healthz",
	"routes[].proxy.trusted_proxies":             []any{"10.0.0.0/8"},
	"routes[].match.methods":                     []any{"GET"},
	"routes[].match.path":                        "/",
	"routes[].match.path_regex":                  "/(.*)",
	"routes[].match.remote":                      []any{"10.0.0.0/8"},
	"routes[].rewrite":                           "/x{path}?{query}",
	"routes[].access":                            []any{map[string]any{"allow": "all"}},
	"routes[].access[].allow":                    []any{"127.0.0.2", "10.0.0.0/8"},
	"routes[].access[].deny":                     "all",
	"routes[].rate_limit.rate":                   "10/s",
	"routes[].basic_auth.realm":                  "staff",
	"routes[].basic_auth.users":                  map[string]any{"alice": "$2a$04$FxxBKMKXSGAv6nRhKjp.eemloTS3TBOIvSnAeNuJOPZhOM8Xb0wiu"},
	"routes[].basic_auth.htpasswd":               "/dev/null",
	"routes[].forward_auth.to":                   "127.0.0.1:9",
	"routes[].forward_auth.uri":                  "/verify",
	"routes[].forward_auth.copy_headers":         []any{"X-User"},
	"routes[].rate_limit.header":                 "X-Api-Key",
	"routes[].static.try_files":                  []any{"{path}", "/index.html"},
	"listen.tls.client_auth":                     map[string]any{"mode": "require", "ca": "clients-ca.pem"},
	"listen.tls.certificates[].client_auth":      map[string]any{"mode": "require", "ca": "clients-ca.pem"},
	"listen.tls.client_auth.mode":                "request",
	"listen.tls.client_auth.ca":                  "clients-ca.pem",
	"listen.tls.client_auth.crl":                 "clients.crl",
	"listen.tls.certificates[].client_auth.mode": "require",
	"listen.tls.certificates[].client_auth.ca":   "clients-ca.pem",
	"listen.tls.certificates[].client_auth.crl":  "clients.crl",
	"routes[].access[].client_cert":              "verified",
	"routes[].access[].client_cert.names":        []any{"admin.example.com"},
	"routes[].proxy.hash_header":                 "X-User",
	"routes[].proxy.hash_cookie":                 "sid",
	"routes[].proxy.resolve.resolver":            "127.0.0.1:53",
	"routes[].access[].client_cert.fingerprints": "AB:" + strings.Repeat("0f:", 30) + "CD",
	"routes[].proxy.tls.server_name":             "localhost",
	"routes[].proxy.tls.ca":                      "cert.pem",
	"routes[].proxy.tls.certificate":             "cert.pem",
	"routes[].proxy.tls.key":                     "key.pem",
	"cluster.redis.address":                      "127.0.0.1:6379",
	"cluster.redis.username":                     "gale",
	"cluster.redis.password_file":                "redis.password",
	"cluster.instance":                           "gale-0",
}

// documentSiblings are keys the decoder accepts only when the document
// holds another top-level key, which the generated document then holds.
var documentSiblings = map[string]map[string]any{
	"routes[].rate_limit.scope": {"cluster": map[string]any{"redis": map[string]any{"address": "127.0.0.1:6379"}}},
}

// sampleSiblings are keys the decoder accepts only beside another key,
// which the generated document then holds too.
var sampleSiblings = map[string]map[string]any{
	"routes[].proxy.hash_header":                 {"load_balancing": "header-hash"},
	"routes[].proxy.hash_cookie":                 {"load_balancing": "cookie-hash"},
	"listen.tls.client_auth.mode":                {"ca": "clients-ca.pem"},
	"routes[].access[].client_cert":              {"allow": "all"},
	"routes[].cache":                             {"proxy": map[string]any{"to": "127.0.0.1:9"}},
	"listen.tls.client_auth.crl":                 {"ca": "clients-ca.pem"},
	"listen.tls.certificates[].client_auth.mode": {"ca": "clients-ca.pem"},
	"listen.tls.certificates[].client_auth.crl":  {"ca": "clients-ca.pem"},
}

// optionSiblings are options the decoder accepts only beside another
// key, by "path=option".
var optionSiblings = map[string]map[string]any{
	"routes[].proxy.load_balancing=header-hash": {"hash_header": "X-User"},
	"routes[].proxy.load_balancing=cookie-hash": {"hash_cookie": "sid"},
}

// crossKeyBounds are keys whose own bound the decoder accepts only
// together with another key: the schema states the key's range, and the
// relation is the decoder's alone.
var crossKeyBounds = map[string]string{
	"cache.max_bytes":                       "max_file_bytes (default 1MiB) must not exceed it",
	"cache.max_file_bytes":                  "must not exceed max_bytes",
	"routes[].cache.max_bytes":              "max_entry_bytes (default 1MiB) must not exceed it",
	"routes[].cache.max_entry_bytes":        "must not exceed max_bytes",
	"listen.tls.max_handshakes_per_address": "must not exceed max_handshakes",
}

// crossKeyOptions are options ("path=option") the decoder accepts only
// together with other keys.
var crossKeyOptions = map[string]string{
	"routes[].proxy.protocol=h2":   "HTTP/2 over TLS: the upstreams must be https://",
	"routes[].proxy.protocol=auto": "chosen by ALPN: the upstreams must be https://",
}

// samplePath turns a key path with list indexes into a keySamples key.
func samplePath(path string) string { return pattern(path) }

// schemaCase is one generated document for one key.
type schemaCase struct {
	key   *keySpec
	path  string // the key's path, e.g. "server.limits.connections"
	build func(t *testing.T, v any, present bool) map[string]any
}

// collectCases walks the key tables and returns a case for every key
// outside a list item or map value: how to build a valid document that
// holds the key with a given value.
func collectCases() []schemaCase {
	var out []schemaCase
	var walk func(sec *keySpec, path string, wrap func(t *testing.T, m map[string]any) map[string]any)
	walk = func(sec *keySpec, path string, wrap func(t *testing.T, m map[string]any) map[string]any) {
		for _, k := range sec.keys {
			k := k
			kp := join(path, k.name)
			out = append(out, schemaCase{key: k, path: kp, build: func(t *testing.T, v any, present bool) map[string]any {
				m := fill(t, sec, path, k.name)
				addSiblings(m, sec, kp)
				if present {
					m[k.name] = v
					for name, v := range optionSiblings[fmt.Sprint(samplePath(kp), "=", v)] {
						m[name] = v
					}
				}
				doc := wrap(t, m)
				for name, v := range documentSiblings[samplePath(kp)] {
					doc[name] = v
				}
				return doc
			}})
			for _, inner := range sectionsIn(k, kp) {
				inner := inner
				walk(inner.sec, inner.path, func(t *testing.T, m map[string]any) map[string]any {
					parent := fill(t, sec, path, k.name)
					addSiblings(parent, sec, kp)
					parent[k.name] = inner.wrap(m)
					return wrap(t, parent)
				})
			}
		}
	}
	walk(topKeys, "", func(t *testing.T, m map[string]any) map[string]any { return m })
	return out
}

// addSiblings puts the siblings key path kp needs (sampleSiblings) in
// m, a mapping of section sec; a sibling that is one of sec's
// exclusive keys (a route's handler) replaces the one fill chose.
func addSiblings(m map[string]any, sec *keySpec, kp string) {
	for name, v := range sampleSiblings[samplePath(kp)] {
		if slices.Contains(sec.oneOf, name) {
			for _, o := range sec.oneOf {
				delete(m, o)
			}
		}
		m[name] = v
	}
}

// reached is a section found inside a key's value, and how to put its
// mapping in that value.
type reached struct {
	sec  *keySpec
	path string
	wrap func(m map[string]any) any
}

// sectionsIn returns the sections a key's value may hold: itself, the
// items of a list, the alternatives of an anyOf.
func sectionsIn(k *keySpec, path string) []reached {
	switch k.typ {
	case typeSection:
		return []reached{{k, path, func(m map[string]any) any { return m }}}
	case typeList:
		var out []reached
		for _, r := range sectionsIn(k.item, path+"[]") {
			inner := r.wrap
			out = append(out, reached{r.sec, r.path, func(m map[string]any) any { return []any{inner(m)} }})
		}
		return out
	case typeAnyOf:
		var out []reached
		for _, a := range k.alts {
			for _, r := range sectionsIn(a, path) {
				if !containsSection(out, r.sec) {
					out = append(out, r)
				}
			}
		}
		return out
	}
	return nil
}

func containsSection(rs []reached, sec *keySpec) bool {
	for _, r := range rs {
		if r.sec == sec {
			return true
		}
	}
	return false
}

// fill returns a mapping for section sec holding its required keys (and,
// for a route, a handler), except key except.
func fill(t *testing.T, sec *keySpec, path, except string) map[string]any {
	m := map[string]any{}
	for _, k := range sec.keys {
		if k.required && k.name != except {
			m[k.name] = sampleOf(t, k, join(path, k.name))
		}
	}
	if slices.Contains(sec.together, except) {
		for _, name := range sec.together {
			if name != except {
				m[name] = sampleOf(t, sec.key(name), join(path, name))
			}
		}
	}
	for _, name := range sec.anyOf {
		if name != except {
			m[name] = sampleOf(t, sec.key(name), join(path, name))
			break
		}
	}
	if len(sec.oneOf) > 0 {
		for _, name := range sec.oneOf {
			if name == except {
				return m
			}
		}
		for _, name := range sec.oneOf {
			if k := sec.key(name); len(fill(t, k, join(path, name), "")) == 0 {
				m[name] = nil
				break
			}
		}
	}
	return m
}

// sampleOf returns a valid value for key k at path.
func sampleOf(t *testing.T, k *keySpec, path string) any {
	if v, ok := keySamples[samplePath(path)]; ok {
		return v
	}
	if k.def != "" {
		return defaultValue(k)
	}
	switch k.typ {
	case typeBool:
		return true
	case typeInt:
		if k.enum != nil {
			return intOptions(k.enum)[0]
		}
		return int(k.lo)
	case typeSize:
		return int(k.lo)
	case typeDuration:
		return "1s"
	case typeEnum:
		return k.enum[0]
	case typeSection:
		return fill(t, k, path, "")
	case typeList:
		return []any{sampleOf(t, k.item, path+"[]")}
	case typeMap:
		return map[string]any{}
	}
	t.Fatalf("no sample value for key %s: add one to keySamples", path)
	return nil
}

// typeOK reports whether v has the type, options and range of key k: what
// the schema must accept and what the decoder must refuse when it is
// false.
func typeOK(k *keySpec, v any) bool {
	switch k.typ {
	case typeString:
		_, ok := v.(string)
		return ok
	case typeBool:
		_, ok := v.(bool)
		return ok
	case typeInt:
		n, ok := v.(int)
		if !ok {
			return false
		}
		if k.enum != nil {
			for _, o := range intOptions(k.enum) {
				if o == n {
					return true
				}
			}
			return false
		}
		return int64(n) >= k.lo && int64(n) <= k.hi
	case typeSize:
		switch v := v.(type) {
		case int:
			return int64(v) >= k.lo && int64(v) <= k.hi
		case string:
			_, msg := parseSize(v)
			return msg == ""
		}
		return false
	case typeDuration:
		s, ok := v.(string)
		if !ok {
			return false
		}
		d, err := time.ParseDuration(s)
		return err == nil && d > 0 && !strings.HasPrefix(s, "+")
	case typeEnum:
		for _, o := range k.enum {
			if v == any(o) {
				return true
			}
			if f, ok := v.(float64); ok && k.numbers && fmt.Sprint(f) == o {
				return true
			}
		}
		return false
	case typeSection:
		m, isMap := v.(map[string]any)
		if v != nil && !isMap {
			return false
		}
		return sectionOK(k, m)
	case typeList:
		l, ok := v.([]any)
		return ok && len(l) >= k.minItems
	case typeMap:
		if v == nil {
			return true
		}
		re := regexp.MustCompile(k.pattern)
		switch m := v.(type) {
		case map[string]any:
			for name, e := range m {
				if !re.MatchString(name) || !typeOK(k.item, e) {
					return false
				}
			}
			return true
		case map[any]any:
			for name, e := range m {
				if !re.MatchString(fmt.Sprint(name)) || !typeOK(k.item, e) {
					return false
				}
			}
			return true
		}
		return false
	case typeAnyOf:
		for _, a := range k.alts {
			if typeOK(a, v) {
				return true
			}
		}
	}
	return false
}

// sectionOK reports whether mapping m holds only known keys, each of the
// right type, every required key and exactly one of a oneOf group.
func sectionOK(k *keySpec, m map[string]any) bool {
	for name, v := range m {
		if !slices.Contains(k.names(), name) || !typeOK(k.key(name), v) {
			return false
		}
	}
	for _, c := range k.keys {
		if _, ok := m[c.name]; c.required && !ok {
			return false
		}
	}
	if len(k.anyOf) > 0 && !slices.ContainsFunc(k.anyOf, func(name string) bool { _, ok := m[name]; return ok }) {
		return false
	}
	present := 0
	for _, name := range k.together {
		if _, ok := m[name]; ok {
			present++
		}
	}
	if present > 0 && present < len(k.together) {
		return false
	}
	if len(k.oneOf) == 0 {
		return true
	}
	n := 0
	for _, name := range k.oneOf {
		if _, ok := m[name]; ok {
			n++
		}
	}
	return n == 1
}

// probes are values of every YAML type, tried on every key.
var probes = []any{true, 7, "x7", 1.5, nil, []any{}, map[string]any{}, map[string]any{"zz_unknown": 1}, "10s", "64KiB", "0"}

// TestSchemaAgreesWithDecoder drives the schema and the decoder with the
// same documents, generated from the key tables for every key: its valid
// sample, values of every type, the bounds of its range and one past them,
// every option of an enumeration and one that is not, an unknown key in
// every section, and its default written out. A value of the wrong type,
// option or range must be refused by both; a value of the right one must
// be accepted by the schema; whatever the decoder accepts, the schema
// accepts; and writing a default changes nothing in the decoded config.
func TestSchemaAgreesWithDecoder(t *testing.T) {
	sch := compileSchema(t)
	dir := t.TempDir()
	pair := newTestPair(t, "localhost")
	clientCA := newTestClientCA(t)
	for name, data := range map[string][]byte{
		"cert.pem": pair.leafPEM, "key.pem": pair.keyPEM,
		"clients-ca.pem": clientCA.caPEM, "clients.crl": clientCA.crlPEM,
		"site/index.html": []byte("hi\n"), "404.html": []byte("not here\n"),
		"admin.token": []byte("0123456789abcdef0123\n"), "redis.password": []byte("redis-password\n"),
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "gale.yaml")
	decode := func(doc map[string]any) (*Config, []byte, error) {
		data, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := Parse(data, file)
		return cfg, data, err
	}
	valid := func(data []byte) error { return sch.Validate(yamlToJSON(t, data)) }

	cases := collectCases()
	if len(cases) < 100 {
		t.Fatalf("walked %d keys, expected over 100", len(cases))
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			check := func(v any, what string) {
				_, data, derr := decode(c.build(t, v, true))
				serr := valid(data)
				switch {
				case !typeOK(c.key, v) && derr == nil:
					t.Errorf("%s %#v: the decoder accepts a value of the wrong type or range", what, v)
				case !typeOK(c.key, v) && serr == nil:
					t.Errorf("%s %#v: the schema accepts a value of the wrong type or range", what, v)
				case typeOK(c.key, v) && serr != nil:
					t.Errorf("%s %#v: the schema refuses a value of the right type: %v", what, v, serr)
				case derr == nil && serr != nil:
					t.Errorf("%s %#v: the schema refuses what the decoder accepts: %v", what, v, serr)
				}
			}
			sample := sampleOf(t, c.key, c.path)
			if _, data, err := decode(c.build(t, sample, true)); err != nil {
				t.Fatalf("the decoder refuses the sample %#v: %v\n%s", sample, err, data)
			}
			check(sample, "sample")
			for _, v := range probes {
				check(v, "probe")
			}
			switch k := c.key; {
			case k.typ == typeInt && k.enum == nil, k.typ == typeSize:
				for _, n := range []int64{k.lo - 1, k.lo, k.hi, k.hi + 1} {
					if n == k.hi+1 && k.hi == 1<<63-1 {
						continue
					}
					check(int(n), "bound")
					if n < k.lo || n > k.hi || crossKeyBounds[pattern(c.path)] != "" {
						continue
					}
					if _, _, err := decode(c.build(t, int(n), true)); err != nil {
						t.Errorf("the decoder refuses %d, within the table's range %d..%d: %v", n, k.lo, k.hi, err)
					}
				}
			case k.enum != nil:
				opts := []any{}
				if k.typ == typeInt {
					opts = intOptions(k.enum)
				} else {
					for _, o := range k.enum {
						opts = append(opts, o, "x"+o)
					}
				}
				for _, o := range opts {
					check(o, "option")
					if typeOK(k, o) && crossKeyOptions[fmt.Sprintf("%s=%v", pattern(c.path), o)] == "" {
						if _, _, err := decode(c.build(t, o, true)); err != nil {
							t.Errorf("the decoder refuses option %#v: %v", o, err)
						}
					}
				}
			case k.typ == typeSection:
				check(map[string]any{"zz_unknown": 1}, "unknown key")
			}
			if c.key.def != "" {
				with, _, err1 := decode(c.build(t, defaultValue(c.key), true))
				without, _, err2 := decode(c.build(t, nil, false))
				if err1 != nil || err2 != nil {
					t.Fatalf("decoding with and without the default: %v / %v", err1, err2)
				}
				zeroPos(reflect.ValueOf(with).Elem())
				zeroPos(reflect.ValueOf(without).Elem())
				if !reflect.DeepEqual(with, without) {
					t.Errorf("the table's default %s is not the decoder's", c.key.def)
				}
			}
		})
	}
}

// zeroPos clears every Pos in v, so that configs decoded from documents
// laid out differently compare equal.
func zeroPos(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			zeroPos(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[Pos]() {
			v.SetZero()
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				zeroPos(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			zeroPos(v.Index(i))
		}
	}
}
