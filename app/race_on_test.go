//go:build race

package app

// raceDetector is whether the tests run with the race detector, which makes the server several times
// slower: a test that times the server against its own deadline sends less work then.
const raceDetector = true
