// Package config loads gale's YAML configuration: it decodes the file
// strictly, fills in every default, validates, and compiles the result into
// the typed values the other packages take (see Config). Consumers never
// apply defaults of their own and never see YAML.
//
// Decoding walks the YAML node tree by hand rather than unmarshalling into
// structs, so that every problem is reported with its line and column and
// the dotted path of its key, as
//
//	FILE:LINE:COL: KEY: message
//
// for example
//
//	gale.yaml:7:7: routes[1].static.rooot: unknown key "rooot"; did you mean "root"? (expected one of: root, index, browse, spa_fallback, hidden, follow_symlinks, cache_control, error_pages, compress)
//
// and so that all problems are collected in one pass (an ErrorList) instead
// of stopping at the first. Unknown keys, duplicate keys and values of the
// wrong type are errors; keys of features that have not landed yet are
// rejected with "not supported yet" rather than accepted and ignored.
//
// Value grammars:
//   - sizes are whole numbers of bytes (65536) or strings with a unit:
//     "64KiB", "10MiB", "1GiB" (powers of 1024) or "64KB", "1MB", "1GB"
//     (powers of 1000), or "512B";
//   - durations use Go syntax ("10s", "1m30s", "250ms") and timeouts must be
//     positive;
//   - relative paths resolve against the directory of the config file.
//
// The YAML schema and its defaults are described in the project's design
// notes ("Config contract") and on the fields in types.go.
package config
