// Command refgen writes the configuration reference (config.Reference) to
// config/REFERENCE.md. It runs from the config package's directory, as
// `go generate ./config` runs it.
package main

import (
	"fmt"
	"os"

	"gale/config"
)

func main() {
	if err := os.WriteFile(config.ReferenceFile, config.Reference(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "refgen:", err)
		os.Exit(1)
	}
}
