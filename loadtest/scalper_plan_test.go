package loadtest

import (
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// TestScalperPlan checks the scenario's people and scalper are spread as the issue says, and that a seed
// draws the same run again.
func TestScalperPlan(t *testing.T) {
	o := ScalperOptions{People: 900, Accounts: 100, Seed: 7}
	o.defaults()
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	p := planScalper(o, now)
	if again := planScalper(o, now); !reflect.DeepEqual(p, again) {
		t.Error("the same seed drew another plan")
	}
	o2 := o
	o2.Seed++
	if other := planScalper(o2, now); reflect.DeepEqual(p.from, other.from) {
		t.Error("another seed drew the same addresses")
	}
	prefix := func(a netip.Addr) netip.Prefix { q, _ := a.Prefix(24); return q }
	groups := map[string]int{}
	prefixes := map[netip.Prefix]int{}
	deliveries := map[int]int{}
	for i := range o.People {
		groups[p.group[i]]++
		prefixes[prefix(p.from[i])]++
		deliveries[p.delivery[i]]++
		if age := now.Sub(p.made[i]); age < 24*time.Hour || age > 48*time.Hour {
			t.Errorf("person %d's account was made %v ago, not the day before", i, age)
		}
	}
	if groups[groupNAT] != 60 || groups[groupFamily] != 2*9 || groups[groupAlone] != 900-60-18 {
		t.Errorf("groups %v, want 60 behind the NAT, 9 families of two, the rest alone", groups)
	}
	// Alone: a /24 each; the NAT's and each family's shared by its members only.
	if len(prefixes) != groups[groupAlone]+1+9 {
		t.Errorf("%d prefixes among the people, want %d", len(prefixes), groups[groupAlone]+10)
	}
	if len(deliveries) != 900-9 {
		t.Errorf("%d delivery addresses among the people, want one each, one a family (%d)", len(deliveries), 900-9)
	}
	scalper := map[netip.Prefix]bool{}
	addrs, devices, dels := map[netip.Addr]bool{}, map[int]int{}, map[int]bool{}
	first, last := p.made[o.People], p.made[o.People]
	for i := o.People; i < o.People+o.Accounts; i++ {
		scalper[prefix(p.from[i])] = true
		addrs[p.from[i]] = true
		devices[p.device[i]]++
		dels[p.delivery[i]] = true
		if p.made[i].Before(first) {
			first = p.made[i]
		}
		if p.made[i].After(last) {
			last = p.made[i]
		}
		if prefixes[prefix(p.from[i])] > 0 {
			t.Errorf("the scalper's %v is a person's prefix too", p.from[i])
		}
	}
	if len(scalper) != 1 || len(addrs) != 10 || len(devices) != 2 || devices[o.People] != 50 || len(dels) != 2 || last.Sub(first) > 10*time.Minute {
		t.Errorf("the scalper: %d prefixes, %d addresses, devices %v, %d delivery addresses, accounts made over %v; want 1, 10, two of 50, 2, ten minutes",
			len(scalper), len(addrs), devices, len(dels), last.Sub(first))
	}
}

// TestEquippedScalperPlan: the better-equipped scalper has a browser and a delivery address an account,
// its addresses spread over /24s none of the people's, its accounts made over the month before.
func TestEquippedScalperPlan(t *testing.T) {
	o := ScalperOptions{People: 900, Accounts: 100, Seed: 7, Equipped: true}
	o.defaults()
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	p := planScalper(o, now)
	prefix := func(a netip.Addr) netip.Prefix { q, _ := a.Prefix(24); return q }
	people := map[netip.Prefix]bool{}
	for i := range o.People {
		people[prefix(p.from[i])] = true
	}
	prefixes, devices, dels := map[netip.Prefix]bool{}, map[int]bool{}, map[int]bool{}
	first, last := p.made[o.People], p.made[o.People]
	for i := o.People; i < o.People+o.Accounts; i++ {
		if people[prefix(p.from[i])] {
			t.Errorf("the scalper's %v is a person's prefix too", p.from[i])
		}
		prefixes[prefix(p.from[i])], devices[p.device[i]], dels[p.delivery[i]] = true, true, true
		if p.made[i].Before(first) {
			first = p.made[i]
		}
		if p.made[i].After(last) {
			last = p.made[i]
		}
	}
	if len(prefixes) != 100 || len(devices) != 100 || len(dels) != 100 || last.Sub(first) < 20*24*time.Hour {
		t.Errorf("the equipped scalper: %d prefixes, %d devices, %d delivery addresses, accounts made over %v; want 100 of each over weeks",
			len(prefixes), len(devices), len(dels), last.Sub(first))
	}
}
