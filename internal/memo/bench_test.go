package memo

import "testing"

type big struct{ a [24]int64 }

// A line's view read by every poll on both cores at once: Map's read lock against Slots' plain loads.
func BenchmarkMapGetParallel(b *testing.B) {
	m := Map[int64, big]{Max: 16}
	m.Add(1, big{})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v, _ := m.Get(1)
			_ = v
		}
	})
}

func BenchmarkSlotsGetParallel(b *testing.B) {
	s := Slots[int64, big]{Max: 16}
	s.Add(1, big{})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v, _ := s.Get(1)
			_ = v
		}
	})
}
