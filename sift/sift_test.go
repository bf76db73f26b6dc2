package sift

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// crowd builds the joins of a sale the way the scalper scenario spreads people: most on their
// own addresses and devices, some hundreds behind one carrier-grade NAT address, some families sharing a
// laptop and a delivery address (the second of each refused by the address rule), accounts made over the
// day before. Users are numbered from 1; it answers the joins, when each account was made, and the next id.
func crowd(r *rand.Rand, people, behindNAT, families int, day time.Time) ([]Join, map[int64]time.Time, int64) {
	var joins []Join
	made := map[int64]time.Time{}
	u := int64(1)
	for i := range people {
		j := Join{User: u, Device: fmt.Sprintf("dev-p%d", i), Prefix: fmt.Sprintf("10.%d.%d.0/24", i/250, i%250)}
		if i < behindNAT {
			j.Prefix = "100.64.0.0/24"
		}
		joins = append(joins, j)
		made[u] = day.Add(time.Duration(r.Int64N(int64(24 * time.Hour))))
		u++
	}
	for i := range families {
		dev, prefix := fmt.Sprintf("dev-f%d", i), fmt.Sprintf("172.16.%d.0/24", i)
		joins = append(joins, Join{User: u, Device: dev, Prefix: prefix},
			Join{User: u + 1, Device: dev, Prefix: prefix, Refused: "address_limit"})
		made[u], made[u+1] = day.Add(time.Hour), day.Add(time.Hour+time.Minute)
		u += 2
	}
	return joins, made, u
}

// scalper adds the scalper: accounts made within minutes, a few source addresses in one /24,
// one device per 50 accounts, and a delivery address per entrant (the rest refused by the address rule).
func scalper(joins []Join, made map[int64]time.Time, from int64, accounts, addresses int, day time.Time, withDevice bool) ([]Join, []int64) {
	var entrants []int64
	for i := range accounts {
		u := from + int64(i)
		j := Join{User: u, Prefix: "198.51.100.0/24"}
		if withDevice {
			j.Device = fmt.Sprintf("dev-s%d", i/50)
		}
		if i >= addresses {
			j.Refused = "address_limit"
		} else {
			entrants = append(entrants, u)
		}
		joins = append(joins, j)
		made[u] = day.Add(time.Duration(i) * 600 * time.Millisecond) // 1,000 in 10 minutes
	}
	return joins, entrants
}

func flaggedUsers(cs []Cluster) []int64 {
	var out []int64
	for _, c := range cs {
		out = append(out, c.Users...)
	}
	slices.Sort(out)
	return out
}

func TestSiftFlagsTheScalperAndNoPerson(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		withDevice bool
		addresses  int // the scalper's entrants: one per delivery address, or every account without the rule
	}{
		{"one per address, devices shared", true, 20},
		{"no address rule, devices shared", true, 1000},
		{"one per address, cookies dropped", false, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			joins, made, next := crowd(r, 9000, 300, 90, day)
			joins, entrants := scalper(joins, made, next, 1000, tc.addresses, day.Add(3*time.Hour), tc.withDevice)
			r.Shuffle(len(joins), func(i, j int) { joins[i], joins[j] = joins[j], joins[i] })
			cs := Sift(joins, made, Defaults())
			if got := flaggedUsers(cs); !slices.Equal(got, entrants) {
				t.Fatalf("flagged %d users (first %v), want exactly the scalper's %d entrants", len(got), got[:min(5, len(got))], len(entrants))
			}
			if len(cs) != 1 {
				t.Fatalf("%d clusters, want the scalper's one (linked by its prefix)", len(cs))
			}
			c := cs[0]
			if c.Key != fmt.Sprintf("u%d", entrants[0]) || !slices.Contains(c.Signals, PrefixCrowd) || !slices.Contains(c.Signals, Burst) {
				t.Fatalf("cluster %s signals %v: want key u%d with prefix_crowd and burst", c.Key, c.Signals, entrants[0])
			}
			if len(c.Prefixes) != 1 || c.Prefixes[0].Accounts != 1000 {
				t.Fatalf("prefixes %v, want the scalper's one /24 with its 1,000 accounts", c.Prefixes)
			}
		})
	}
}

// Each signal alone flags no one: the carrier-grade NAT crowd, the burst of sign-ups on announcement day
// from everywhere, the family laptop with its refused second account, a device with refusals.
func TestSiftOneSignalAloneFlagsNoOne(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(3, 4))
	joins, made, next := crowd(r, 2000, 600, 40, day)
	// Announcement day: 500 accounts made within ten minutes, each on its own address and device.
	for i := range 500 {
		u := next + int64(i)
		joins = append(joins, Join{User: u, Device: fmt.Sprintf("dev-a%d", i), Prefix: fmt.Sprintf("192.0.%d.0/24", i%250)})
		made[u] = day.Add(time.Duration(i) * time.Second)
	}
	next += 500
	// A shared library computer: eight accounts over months, one device, own prefixes.
	for i := range 8 {
		u := next + int64(i)
		joins = append(joins, Join{User: u, Device: "dev-library", Prefix: fmt.Sprintf("203.0.%d.0/24", i)})
		made[u] = day.Add(-time.Duration(i) * 30 * 24 * time.Hour)
	}
	if cs := Sift(joins, made, Defaults()); len(cs) != 0 {
		t.Fatalf("flagged %v (signals %v): one signal alone must flag no one", flaggedUsers(cs), cs[0].Signals)
	}
}

// The answer does not depend on the order the joins were recorded in.
func TestSiftIsOrderFree(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(5, 6))
	joins, made, next := crowd(r, 500, 100, 10, day)
	joins, _ = scalper(joins, made, next, 200, 20, day, true)
	want := Sift(joins, made, Defaults())
	for range 5 {
		r.Shuffle(len(joins), func(i, j int) { joins[i], joins[j] = joins[j], joins[i] })
		got := Sift(joins, made, Defaults())
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("shuffled joins sifted to %v, want %v", got, want)
		}
	}
}

func TestMarkBurstsNeedsBurstAccountsWithinTheWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	th := Thresholds{Burst: 3, BurstWindow: time.Minute}
	users := map[int64]bool{1: true, 2: true, 3: true, 4: true, 5: true}
	made := map[int64]time.Time{1: t0, 2: t0.Add(30 * time.Second), 3: t0.Add(time.Minute), 4: t0.Add(3 * time.Minute), 5: t0.Add(10 * time.Minute)}
	out := map[int64]bool{}
	markBursts(users, made, th, out)
	if !out[1] || !out[2] || !out[3] || out[4] || out[5] {
		t.Fatalf("in burst %v, want 1, 2 and 3 (three within a minute), not 4 or 5", out)
	}
}

// BenchmarkSiftHundredThousand sifts a hundred thousand people's joins and a scalper's thousand accounts:
// the work the draw of a big sale adds.
func BenchmarkSiftHundredThousand(b *testing.B) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(7, 8))
	joins, made, next := crowd(r, 100_000, 3000, 1000, day)
	joins, _ = scalper(joins, made, next, 1000, 20, day, true)
	b.ResetTimer()
	for range b.N {
		Sift(joins, made, Defaults())
	}
}

// Joins refused before the proof of work (accounts made after the announcement) cost nothing: sent from a
// neighbour's prefix around the time the neighbour signed up, they must not make a crowd or a burst of
// it. A person retrying a taken address is one refused account, however many tries.
func TestSiftIsNotFramedByFreeJoins(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	joins := []Join{
		{User: 1, Device: "dev-victim", Prefix: "127.0.7.0/24"},
		{User: 2, Device: "dev-family", Prefix: "127.0.7.0/24"},
		{User: 3, Device: "dev-family", Prefix: "127.0.7.0/24", Refused: "address_limit"},
		{User: 3, Device: "dev-family", Prefix: "127.0.7.0/24", Refused: "address_limit"},
		{User: 3, Device: "dev-family", Prefix: "127.0.7.0/24", Refused: "address_limit"},
	}
	made := map[int64]time.Time{1: day, 2: day.Add(time.Minute), 3: day.Add(2 * time.Minute)}
	for i := range 60 { // the framer's free joins, accounts made around the victim's
		u := int64(100 + i)
		joins = append(joins, Join{User: u, Device: fmt.Sprintf("dev-junk%d", i), Prefix: "127.0.7.0/24", Refused: NotEligible})
		made[u] = day.Add(time.Duration(i) * time.Second)
	}
	for i := range 40 { // and the sale's other people, each on their own
		u := int64(1000 + i)
		joins = append(joins, Join{User: u, Device: fmt.Sprintf("dev-o%d", i), Prefix: fmt.Sprintf("10.1.%d.0/24", i)})
		made[u] = day.Add(-time.Duration(i) * time.Hour)
	}
	if cs := Sift(joins, made, Defaults()); len(cs) != 0 {
		t.Fatalf("flagged %v (signals %v): free joins framed the victim or the family", flaggedUsers(cs), cs[0].Signals)
	}
	// The same joins from the framer's own browser make its device refusing: that trace is its own.
	for i := range 60 {
		joins = append(joins, Join{User: int64(100 + i), Device: "dev-framer", Prefix: "127.0.8.0/24", Refused: NotEligible})
	}
	joins = append(joins, Join{User: 99, Device: "dev-framer", Prefix: "127.0.8.0/24"})
	made[99] = day
	if got := flaggedUsers(Sift(joins, made, Defaults())); !slices.Equal(got, []int64{99}) {
		t.Fatalf("flagged %v; want the framer's own entrant 99 (a device shared and refusing)", got)
	}
}
