// Package sift finds the entrants of a line who are likely one person's many accounts: the traces bulk
// leaves in the joins (devices, address prefixes, when the accounts were made, refused joins), read
// together, never one alone.
package sift

import (
	"slices"
	"sort"
	"strconv"
	"time"
)

// Join is one join of an item's line as the server saw it, refused or not.
type Join struct {
	User    int64
	Device  string // the browser's device id ("" when the join carried none)
	Prefix  string // the client's address prefix: IPv4 /24, IPv6 /48
	Refused string // the rule that refused it (address_limit, not_eligible), "" when it joined
}

// NotEligible is the refusal of an account made after the sale's announcement: it is refused before the
// proof of work, so its joins cost nothing and say nothing of a prefix (anyone could send them from a
// neighbour's); they count only against their own device.
const NotEligible = "not_eligible"

// paid reports whether the join paid its way in (the proof of work): whether it may count toward its
// prefix's crowd and its bursts of accounts.
func (j Join) paid() bool { return j.Refused != NotEligible }

// Thresholds are when a trace counts as a signal. No signal alone flags anyone: a carrier-grade NAT
// address or a campus puts hundreds of real people in one prefix, a family shares a laptop, and accounts
// are made in bursts on the day a sale is announced. Two together do.
type Thresholds struct {
	// A prefix is crowded when at least PrefixMin accounts joined from it and PrefixFactor times the
	// median accounts of the sale's prefixes (about 1 where people join from their own addresses).
	PrefixMin    int
	PrefixFactor float64
	// An account is one of a burst when at least Burst accounts of its prefix or its device were made
	// within BurstWindow of each other.
	Burst       int
	BurstWindow time.Duration
	// A device is shared when DeviceAccounts accounts joined from it, and refusing when DeviceRefused of
	// its accounts were refused by a rule.
	DeviceAccounts int
	DeviceRefused  int
}

// Defaults are the thresholds an operator starts from (docs/security.md says why each).
func Defaults() Thresholds {
	return Thresholds{PrefixMin: 50, PrefixFactor: 20, Burst: 20, BurstWindow: 10 * time.Minute, DeviceAccounts: 5, DeviceRefused: 3}
}

// The signals, as the admin's page and the API name them.
const (
	PrefixCrowd   = "prefix_crowd"   // the entrant's prefix is crowded far beyond the sale's normal
	Burst         = "burst"          // its account was made in a burst with others of its prefix or device
	DeviceShared  = "device_shared"  // its device joined for many accounts
	DeviceRefused = "device_refused" // its device's accounts were refused by a rule, one after another
	NoDevice      = "no_device"      // it joined without the device id every page carries (a client that drops cookies)
)

// Cluster is a group of flagged entrants linked by a device or a crowded prefix, with its evidence.
type Cluster struct {
	Key      string   // "u" and the smallest user id: stable while the cluster keeps that member
	Users    []int64  // the flagged entrants, ascending
	Signals  []string // every signal that fired for one of them, sorted
	Prefixes []PrefixCount
	Devices  int // the devices its entrants joined from
	Refused  int // the accounts refused from its devices (from its prefixes when it has no device)
	// MadeFrom and MadeTo span when its entrants' accounts were made (zero when unknown).
	MadeFrom, MadeTo time.Time
}

// PrefixCount is how many accounts joined from a prefix.
type PrefixCount struct {
	Prefix   string `json:"prefix"`
	Accounts int    `json:"accounts"`
}

// person is one account's traces over its joins.
type person struct {
	entrant  bool
	noDevice bool
	devices  []string
	prefixes []string
	signals  map[string]bool
}

// Sift answers the clusters of flagged entrants among the joins, given when each account was made
// (made; an account missing there is in no burst). The answer is the same for the same joins in any order.
func Sift(joins []Join, made map[int64]time.Time, th Thresholds) []Cluster {
	people := map[int64]*person{}
	byPrefix := map[string]map[int64]bool{}
	byDevice := map[string]map[int64]bool{}
	refusedBy := map[string]map[int64]bool{} // device → accounts refused from it
	refusedIn := map[string]map[int64]bool{} // prefix → accounts refused from it
	add := func(m map[string]map[int64]bool, k string, u int64) {
		if m[k] == nil {
			m[k] = map[int64]bool{}
		}
		m[k][u] = true
	}
	for _, j := range joins {
		p := people[j.User]
		if p == nil {
			p = &person{signals: map[string]bool{}}
			people[j.User] = p
		}
		if j.Refused == "" {
			p.entrant = true
		} else {
			if j.Device != "" {
				add(refusedBy, j.Device, j.User)
			}
			if j.paid() {
				add(refusedIn, j.Prefix, j.User)
			}
		}
		if j.Device == "" {
			p.noDevice = true
		} else if !slices.Contains(p.devices, j.Device) {
			p.devices = append(p.devices, j.Device)
			add(byDevice, j.Device, j.User)
		}
		if j.Prefix != "" && j.paid() && !slices.Contains(p.prefixes, j.Prefix) {
			p.prefixes = append(p.prefixes, j.Prefix)
			add(byPrefix, j.Prefix, j.User)
		}
	}

	crowded := map[string]bool{}
	normal := medianSize(byPrefix)
	for prefix, users := range byPrefix {
		if n := len(users); n >= th.PrefixMin && float64(n) >= th.PrefixFactor*normal {
			crowded[prefix] = true
		}
	}
	inBurst := map[int64]bool{}
	for _, group := range []map[string]map[int64]bool{byPrefix, byDevice} {
		for _, users := range group {
			markBursts(users, made, th, inBurst)
		}
	}
	for u, p := range people {
		if p.noDevice {
			p.signals[NoDevice] = true
		}
		if inBurst[u] {
			p.signals[Burst] = true
		}
		for _, prefix := range p.prefixes {
			if crowded[prefix] {
				p.signals[PrefixCrowd] = true
			}
		}
		for _, d := range p.devices {
			if len(byDevice[d]) >= th.DeviceAccounts {
				p.signals[DeviceShared] = true
			}
			if len(refusedBy[d]) >= th.DeviceRefused {
				p.signals[DeviceRefused] = true
			}
		}
	}

	// The flagged entrants, grouped by what links them: a device, or a crowded prefix.
	flagged := map[int64]bool{}
	for u, p := range people {
		if p.entrant && len(p.signals) >= 2 {
			flagged[u] = true
		}
	}
	parent := map[int64]int64{}
	var find func(int64) int64
	find = func(u int64) int64 {
		if parent[u] == u {
			return u
		}
		parent[u] = find(parent[u])
		return parent[u]
	}
	union := func(a, b int64) {
		ra, rb := find(a), find(b)
		if ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	for u := range flagged {
		parent[u] = u
	}
	link := func(users map[int64]bool) {
		first := int64(-1)
		for u := range users {
			if !flagged[u] {
				continue
			}
			if first < 0 {
				first = u
			} else {
				union(first, u)
			}
		}
	}
	for _, users := range byDevice {
		link(users)
	}
	for prefix, users := range byPrefix {
		if crowded[prefix] {
			link(users)
		}
	}
	groups := map[int64][]int64{}
	for u := range flagged {
		r := find(u)
		groups[r] = append(groups[r], u)
	}
	out := make([]Cluster, 0, len(groups))
	for root, users := range groups {
		slices.Sort(users)
		out = append(out, describe(root, users, people, byPrefix, refusedBy, refusedIn, made))
	}
	Order(out)
	return out
}

// Order sorts clusters as Sift answers them: the biggest first, then by key.
func Order(cs []Cluster) {
	sort.Slice(cs, func(i, j int) bool {
		if len(cs[i].Users) != len(cs[j].Users) {
			return len(cs[i].Users) > len(cs[j].Users)
		}
		return cs[i].Key < cs[j].Key
	})
}

// describe gathers a cluster's evidence.
func describe(root int64, users []int64, people map[int64]*person, byPrefix map[string]map[int64]bool,
	refusedBy, refusedIn map[string]map[int64]bool, made map[int64]time.Time) Cluster {
	c := Cluster{Key: "u" + strconv.FormatInt(root, 10), Users: users}
	signals, devices, prefixes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, u := range users {
		p := people[u]
		for s := range p.signals {
			signals[s] = true
		}
		for _, d := range p.devices {
			devices[d] = true
		}
		for _, pr := range p.prefixes {
			prefixes[pr] = true
		}
		if t, ok := made[u]; ok {
			if c.MadeFrom.IsZero() || t.Before(c.MadeFrom) {
				c.MadeFrom = t
			}
			if t.After(c.MadeTo) {
				c.MadeTo = t
			}
		}
	}
	for s := range signals {
		c.Signals = append(c.Signals, s)
	}
	slices.Sort(c.Signals)
	c.Devices = len(devices)
	refused := map[int64]bool{}
	for d := range devices {
		for u := range refusedBy[d] {
			refused[u] = true
		}
	}
	for pr := range prefixes {
		c.Prefixes = append(c.Prefixes, PrefixCount{Prefix: pr, Accounts: len(byPrefix[pr])})
		if len(devices) == 0 {
			for u := range refusedIn[pr] {
				refused[u] = true
			}
		}
	}
	c.Refused = len(refused)
	sort.Slice(c.Prefixes, func(i, j int) bool {
		if c.Prefixes[i].Accounts != c.Prefixes[j].Accounts {
			return c.Prefixes[i].Accounts > c.Prefixes[j].Accounts
		}
		return c.Prefixes[i].Prefix < c.Prefixes[j].Prefix
	})
	return c
}

// medianSize is the median number of accounts per prefix (1 when there is none).
func medianSize(groups map[string]map[int64]bool) float64 {
	if len(groups) == 0 {
		return 1
	}
	sizes := make([]int, 0, len(groups))
	for _, g := range groups {
		sizes = append(sizes, len(g))
	}
	slices.Sort(sizes)
	n := len(sizes)
	if n%2 == 1 {
		return float64(sizes[n/2])
	}
	return float64(sizes[n/2-1]+sizes[n/2]) / 2
}

// markBursts marks the users of a group whose accounts were made within th.BurstWindow of at least
// th.Burst-1 others of the group.
func markBursts(users map[int64]bool, made map[int64]time.Time, th Thresholds, out map[int64]bool) {
	if len(users) < th.Burst || th.Burst <= 0 {
		return
	}
	type at struct {
		user int64
		t    time.Time
	}
	times := make([]at, 0, len(users))
	for u := range users {
		if t, ok := made[u]; ok {
			times = append(times, at{u, t})
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].t.Before(times[j].t) })
	// Two pointers: every window [i, j] no longer than BurstWindow holding Burst or more marks them all.
	j, marked := 0, -1 // marked: the last index marked so far (each is marked once)
	for i := range times {
		j = max(j, i)
		for j+1 < len(times) && times[j+1].t.Sub(times[i].t) <= th.BurstWindow {
			j++
		}
		if j-i+1 >= th.Burst {
			for k := max(i, marked+1); k <= j; k++ {
				out[times[k].user] = true
			}
			marked = j
		}
	}
}
