//go:build race

package app

// raceDetector reports whether the tests run under the race detector,
// whose shadow memory makes RSS figures meaningless.
const raceDetector = true
