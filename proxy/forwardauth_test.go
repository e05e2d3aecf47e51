package proxy

import "testing"

// TestAuthField: which of a client's fields the subrequest carries as
// they came, in any spelling.
func TestAuthField(t *testing.T) {
	for _, tc := range []struct {
		name          string
		plain, trusts bool // carried from any client; from a trusted one with trust_forwarded
	}{
		{"X-Custom", true, true}, {"accept", true, true}, {"AUTHORIZATION", true, true}, {"User-Agent", true, true},
		{"X-Requested-With", true, true}, {"If-None-Match", true, true},
		{"Connection", false, false}, {"keep-alive", false, false}, {"TE", false, false}, {"Trailer", false, false},
		{"Transfer-Encoding", false, false}, {"upgrade", false, false}, {"Proxy-Authorization", false, false},
		{"proxy-connection", false, false}, {"Proxy", false, false}, {"PROXY-anything", false, false},
		{"Content-Length", false, false}, {"content-type", false, false}, {"Host", false, false}, {"Expect", false, false},
		{"Cookie", false, false}, {"X_Forwarded_For", false, false}, {"Client-Cert", false, false},
		{"x-forwarded-for", false, false}, {"X-Forwarded-Method", false, false}, {"X-FORWARDED-URI", false, false},
		{"X-Forwarded-Proto", false, false}, {"x-forwarded-host", false, false},
		{"X-Original-URL", false, false}, {"x-original-method", false, false},
		{"X-Forwarded-Port", false, true}, {"x-forwarded-prefix", false, true}, {"X-Original-Host", false, true},
		{"X-Real-IP", false, true}, {"Forwarded", false, true}, {"True-Client-IP", false, true},
	} {
		if got := authField([]byte(tc.name), false); got != tc.plain {
			t.Errorf("authField(%q, untrusted) = %v", tc.name, got)
		}
		if got := authField([]byte(tc.name), true); got != tc.trusts {
			t.Errorf("authField(%q, trusted) = %v", tc.name, got)
		}
	}
}
