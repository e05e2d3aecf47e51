package importer

import "fmt"

// FromCaddyfile converts the Caddyfile at path. The Caddyfile side is
// not built yet; it answers with an error naming the file.
func FromCaddyfile(path string) (*Result, error) {
	return nil, fmt.Errorf("%s: converting Caddyfiles is not available yet; only nginx configs are", path)
}
