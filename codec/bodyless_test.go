package codec

import "testing"

// TestNoBody: responses to HEAD and 1xx, 204 and 304 responses have no
// body; every other final status may.
func TestNoBody(t *testing.T) {
	for _, tc := range []struct {
		head   bool
		status int
		want   bool
	}{
		{false, 100, true}, {false, 103, true}, {false, 199, true},
		{false, 200, false}, {false, 201, false}, {false, 204, true}, {false, 206, false},
		{false, 301, false}, {false, 304, true}, {false, 404, false}, {false, 503, false},
		{true, 200, true}, {true, 404, true}, {true, 304, true},
	} {
		if got := NoBody(tc.head, tc.status); got != tc.want {
			t.Errorf("NoBody(%v, %d) = %v, want %v", tc.head, tc.status, got, tc.want)
		}
	}
	for m, want := range map[string]bool{"HEAD": true, "GET": false, "head": false, "HEADER": false} {
		r := Request{Method: []byte(m)}
		if r.IsHead() != want {
			t.Errorf("IsHead(%q) = %v", m, !want)
		}
	}
}
