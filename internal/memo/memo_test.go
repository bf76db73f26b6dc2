package memo

import "testing"

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
