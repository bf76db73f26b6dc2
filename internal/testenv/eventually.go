package testenv

import (
	"testing"
	"time"
)

// Poll is how often Eventually asks again.
const Poll = 20 * time.Millisecond

// Eventually waits for something that happens in the background (a queue drained, a server up, an
// order written): it asks cond every Poll until it holds, and fails the test saying what it waited for
// if it still does not hold after within. cond runs on the test's goroutine, so it may call t.Fatal.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	EventuallySaw(t, within, what, func() (bool, string) { return cond(), "" })
}

// EventuallySaw is Eventually for a condition that also describes what it saw (how many are left, the
// status, the log so far); a failure tells the last of these.
func EventuallySaw(t testing.TB, within time.Duration, what string, cond func() (ok bool, saw string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if saw != "" {
				saw = "; last saw: " + saw
			}
			t.Fatalf("waited %v for %s%s", within, what, saw)
			return
		}
		time.Sleep(Poll)
	}
}
