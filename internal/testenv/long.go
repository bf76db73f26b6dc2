package testenv

import "testing"

// Long marks a test that make check (go test -short) leaves out: a crowd, a browser, a chaos or load
// scenario, or another test of a few seconds whose rule a faster test also covers. make test runs it.
func Long(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("long: make test runs it")
	}
}
