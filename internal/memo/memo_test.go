package memo

import (
	"testing"
	"time"
)

func TestMapForgetsAllWhenFull(t *testing.T) {
	m := Map[int, string]{Max: 2}
	m.Add(1, "a")
	m.Add(2, "b")
	if v, ok := m.Get(1); !ok || v != "a" {
		t.Fatalf("get 1: %q %v", v, ok)
	}
	m.Add(3, "c") // full: 1 and 2 are forgotten
	if _, ok := m.Get(1); ok {
		t.Error("1 kept past the bound")
	}
	if v, ok := m.Get(3); !ok || v != "c" {
		t.Errorf("get 3: %q %v", v, ok)
	}
	m.Remove(3)
	if _, ok := m.Get(3); ok {
		t.Error("3 kept after Remove")
	}
}

func TestTimedAnswersOnlyWithinItsTTL(t *testing.T) {
	m := NewTimed[int, string](2, 50*time.Millisecond)
	m.Add(1, "a")
	if v, ok := m.Get(1); !ok || v != "a" {
		t.Fatalf("get 1 at once: %q %v", v, ok)
	}
	time.Sleep(60 * time.Millisecond)
	if v, ok := m.Get(1); ok {
		t.Fatalf("get 1 past its ttl: %q", v)
	}
	m.Add(1, "b") // added again: answered again
	if v, ok := m.Get(1); !ok || v != "b" {
		t.Fatalf("get 1 added again: %q %v", v, ok)
	}
	m.Add(2, "c")
	m.Add(3, "d") // full: 1 and 2 are forgotten
	if _, ok := m.Get(1); ok {
		t.Error("1 kept past the bound")
	}
	m.Purge()
	if _, ok := m.Get(3); ok {
		t.Error("3 kept after Purge")
	}
}

func TestSlotsKeepTheLastValueOfAtMostMaxKeys(t *testing.T) {
	s := Slots[int, string]{Max: 2}
	if _, ok := s.Get(1); ok {
		t.Fatal("an empty Slots answered")
	}
	s.Add(1, "a")
	s.Add(1, "b") // the slot's value swapped
	s.Add(2, "c")
	if v, ok := s.Get(1); !ok || v != "b" {
		t.Fatalf("get 1: %q %v; want b", v, ok)
	}
	s.Add(3, "d") // a third key: full, 1 and 2 are forgotten
	if _, ok := s.Get(1); ok {
		t.Error("1 kept past the bound")
	}
	if v, ok := s.Get(3); !ok || v != "d" {
		t.Fatalf("get 3: %q %v", v, ok)
	}
}

// Readers and writers at once (run with -race): a reader sees a value some writer added.
func TestSlotsUnderConcurrency(t *testing.T) {
	s := Slots[int, int]{Max: 8}
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 2000 {
				s.Add(i%16, w)
			}
		}()
	}
	for range 4000 {
		if v, ok := s.Get(3); ok && (v < 0 || v > 3) {
			t.Fatalf("read %d, which no writer added", v)
		}
	}
	for range 4 {
		<-done
	}
}
