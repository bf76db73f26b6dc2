package auth

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// verified remembers values whose signature was checked, with what the check found, so that a hot
// request (a poll, a buy) does not check the same cookie or token again: a slot per hash of the value,
// the newest value in each, a few hundred kilobytes at most. Only values that passed are kept.
type verified[T any] struct {
	slots [verifiedSlots]atomic.Pointer[verifiedValue[T]]
	seed  maphash.Seed
}

const verifiedSlots = 4096

type verifiedValue[T any] struct {
	value string
	found T
}

func newVerified[T any]() *verified[T] { return &verified[T]{seed: maphash.MakeSeed()} }

// check answers what check found for value, from memory when value passed before.
func (v *verified[T]) check(value string, check func(string) (T, bool)) (T, bool) {
	slot := &v.slots[maphash.String(v.seed, value)%verifiedSlots]
	if e := slot.Load(); e != nil && e.value == value {
		return e.found, true
	}
	found, ok := check(value)
	if ok {
		// The value may live in the request's buffer, which the next request reuses: keep a copy.
		slot.Store(&verifiedValue[T]{value: strings.Clone(value), found: found})
	}
	return found, ok
}
