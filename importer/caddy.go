package importer

import "errors"

// FromCaddyfile converts the Caddyfile at path.
func FromCaddyfile(path string) (*Result, error) { return nil, errors.New("not yet") }
