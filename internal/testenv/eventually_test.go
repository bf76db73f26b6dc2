package testenv_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"seckill/internal/testenv"
)

// recorder is a test that notes its failure instead of ending the goroutine.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	r := &recorder{TB: t}
	asked := 0
	start := time.Now()
	testenv.Eventually(r, 5*time.Second, "the third ask", func() bool { asked++; return asked == 3 })
	if r.failed != "" || asked != 3 {
		t.Errorf("failed %q after %d asks, want success on the third", r.failed, asked)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("three asks took %v", took)
	}
}

func TestEventuallyFailsWithWhatItWaitedForAndTheLastSeen(t *testing.T) {
	r := &recorder{TB: t}
	asked := 0
	start := time.Now()
	testenv.EventuallySaw(r, 200*time.Millisecond, "the queue to drain", func() (bool, string) {
		asked++
		return false, fmt.Sprintf("%d left", 100-asked)
	})
	took := time.Since(start)
	if took < 200*time.Millisecond || took > 2*time.Second {
		t.Errorf("gave up after %v, want about 200ms", took)
	}
	want := fmt.Sprintf("waited 200ms for the queue to drain; last saw: %d left", 100-asked)
	if r.failed != want {
		t.Errorf("failed with %q, want %q", r.failed, want)
	}
	r.failed = ""
	testenv.Eventually(r, 50*time.Millisecond, "nothing", func() bool { return false })
	if !strings.HasPrefix(r.failed, "waited 50ms for nothing") || strings.Contains(r.failed, "last saw") {
		t.Errorf("failed with %q", r.failed)
	}
}
