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

const verifiedSlots = 1 << 14

type verifiedValue[T any] struct {
	value string
	found T
	mark  atomic.Int64 // the owner's use: Sessions keeps here until when the value needs no "seen" note
}

func newVerified[T any]() *verified[T] { return &verified[T]{seed: maphash.MakeSeed()} }

// check answers what check found for value, from memory when value passed before.
func (v *verified[T]) check(value string, check func(string) (T, bool)) (T, bool) {
	if p, ok := v.get(value); ok {
		return *p, true
	}
	found, ok := check(value)
	if ok {
		v.put(value, found)
	}
	return found, ok
}

// get answers what was kept for value, if it is.
func (v *verified[T]) get(value string) (*T, bool) {
	if e := v.entry(value); e != nil {
		return &e.found, true
	}
	return nil, false
}

// entry answers the entry kept for value, or nil.
func (v *verified[T]) entry(value string) *verifiedValue[T] {
	if e := v.slots[maphash.String(v.seed, value)%verifiedSlots].Load(); e != nil && e.value == value {
		return e
	}
	return nil
}

// put keeps what a check of value found, and answers the entry kept.
func (v *verified[T]) put(value string, found T) *verifiedValue[T] {
	// The value may live in the request's buffer, which the next request reuses: keep a copy.
	e := &verifiedValue[T]{value: strings.Clone(value), found: found}
	v.slots[maphash.String(v.seed, value)%verifiedSlots].Store(e)
	return e
}
