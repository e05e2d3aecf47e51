package cache

import "testing"

// Every representation of a version has a tag VariantOf reads back, and
// tags of other versions, other names and broken forms name none.
func TestVariantETags(t *testing.T) {
	base := makeETag(mtime0.UnixNano(), 20000)
	for enc := Identity; enc < numEncodings; enc++ {
		tag := AppendVariantETag(nil, base, enc)
		if enc != Identity && string(tag) != string(codedETag(base, enc)) {
			t.Errorf("%v: %s; the cache names it %s", enc, tag, codedETag(base, enc))
		}
		for _, form := range [][]byte{tag, append([]byte("W/"), tag...)} {
			if got, ok := VariantOf(form, base); !ok || got != enc {
				t.Errorf("VariantOf(%s) = %v, %v; want %v", form, got, ok, enc)
			}
		}
	}
	other := makeETag(mtime0.UnixNano()+1, 20000)
	for _, tag := range []string{
		string(other), string(codedETag(other, Zstd)), // another version
		`"` + string(base[1:len(base)-1]) + `-deflate"`, // a coding the cache never makes
		`"` + string(base[1:len(base)-1]) + `-zstd`,     // no closing quote
		`"` + string(base[1:len(base)-1]) + `zstd"`,     // no dash
		`"` + string(base[1:len(base)-1]) + `-"`,        // no name
		string(base[:len(base)-1]),                      // cut short
		"", `""`, "*",
	} {
		if enc, ok := VariantOf([]byte(tag), base); ok {
			t.Errorf("VariantOf(%s) = %v; want no match", tag, enc)
		}
	}
}
