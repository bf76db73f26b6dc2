package payment

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A provider that fails and then answers: a read is retried while it does not answer, and its answer,
// a payment it does not know or one it knows, reaches the caller as it is.
func TestClientRetriesReadsUntilTheProviderAnswers(t *testing.T) {
	for _, last := range []int{http.StatusNotFound, http.StatusOK} {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) < 3 {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			w.WriteHeader(last)
			w.Write([]byte(`{"status":"paid"}`))
		}))
		c := NewClient(srv.URL, "key", 2*time.Second)
		status, err := c.Query(context.Background(), "sbx_1")
		srv.Close()
		if calls.Load() != 3 {
			t.Errorf("answer %d on the third try: the client asked %d times, want 3", last, calls.Load())
		}
		switch last {
		case http.StatusNotFound:
			if err != ErrNotFound {
				t.Errorf("a 404 on the last try: %v (%T), want ErrNotFound itself", err, err)
			}
		default:
			if err != nil || status != StatusPaid {
				t.Errorf("a 200 on the last try: %q, %v, want paid", status, err)
			}
		}
	}
	// A provider that never answers is unavailable, after the tries.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer srv.Close()
	if _, err := NewClient(srv.URL, "key", 2*time.Second).Query(context.Background(), "sbx_1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("a provider that keeps failing: %v, want ErrUnavailable", err)
	}
}
