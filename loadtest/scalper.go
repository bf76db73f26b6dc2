package loadtest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	altcha "github.com/altcha-org/altcha-lib-go"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// The scalper (issue 32): a queue sale's people, spread as real ones are, and one scalper with many
// accounts, all joining the line before the start and paying the join's proof of work for real; the
// run counts the units each side won, the scalper's entrants in the line and outside the shadow line, what
// the scalper paid in proof-of-work CPU, every person's outcome (and any person refused or shadowed
// wrongly), and audits the books as the queue scenario does.
//
// People: most each on a /24 of their own (127.A.B.C on loopback, A.B varying), some hundreds behind one
// carrier-grade NAT address, some families (two accounts sharing a home address and a delivery address:
// the address rule refuses one of the two, which is the rule working, counted apart); accounts made over
// the day before; a delivery address and a browser (its device id cookie, sk_dev, fetched by its first
// GET /api/altcha and kept) each. The scalper: accounts made within ten minutes the day before, ten source
// addresses in one /24, one browser per 50 accounts, a delivery address per 50 accounts (cycled over
// them). Accounts are seeded, not registered: registration's proof of work is not what is measured.

// ScalperOptions set a run of the scalper scenario up. Zero sizes take the issue's.
type ScalperOptions struct {
	People   int   // people (9,000)
	Accounts int   // the scalper's accounts (1,000)
	Units    int64 // units on sale (500)
	Seed     uint64
	// NAT is how many people join from one carrier-grade NAT address (default a thirtieth of the people,
	// at least 60, so that its prefix crowds past the shadow line's default of 50 accounts); Families how
	// many pairs of people share a home and a delivery address (default a hundredth, at least 2).
	NAT, Families int
	// The scalper's source addresses (10, in one /24), accounts a browser (50) and delivery addresses
	// (default: one per 50 accounts).
	Sources, PerDevice, Addresses int
	// Equipped makes a better-equipped scalper: a browser (device cookie) and a delivery address an
	// account, its source addresses spread over /24s of their own (about four accounts a /24), its accounts
	// made over the month before rather than in a burst.
	Equipped  bool
	Rules     Rules         // the sale's
	Countdown time.Duration // from the first joins to the start (0: long enough for the proofs of work, estimated)
	Log       io.Writer
}

func (o *ScalperOptions) defaults() {
	if o.People <= 0 {
		o.People = 9000
	}
	if o.Accounts <= 0 {
		o.Accounts = 1000
	}
	if o.Units <= 0 {
		o.Units = 500
	}
	if o.NAT <= 0 {
		o.NAT = min(max(o.People/30, 60), o.People/4)
	}
	if o.Families <= 0 {
		o.Families = max(o.People/100, 2)
	}
	o.Families = min(o.Families, (o.People-o.NAT)/2)
	if o.Sources <= 0 {
		o.Sources = 10
	}
	if o.PerDevice <= 0 {
		o.PerDevice = 50
	}
	if o.Addresses <= 0 {
		o.Addresses = max(o.Accounts/50, 1)
	}
	if o.Equipped {
		o.PerDevice, o.Addresses = 1, o.Accounts
	}
}

// The groups of people a run reports apart.
const (
	groupAlone  = "on an address of their own"
	groupNAT    = "behind the carrier-grade NAT address"
	groupFamily = "in a family (two accounts, one home, one delivery address)"
)

// scalperPlan is who is where in a run, drawn from its seed: people first, then the scalper's accounts.
type scalperPlan struct {
	from       []netip.Addr
	made       []time.Time
	delivery   []int     // index into deliveries
	device     []int     // the browser; each person's its own
	arrive     []float64 // when the account joins, as a share of the countdown
	group      []string  // a person's; "" for the scalper's
	family     []int     // a family member's family, -1 for others
	deliveries []Delivery
}

// planScalper draws a run's people and scalper from o.Seed: the same seed, the same addresses,
// accounts, addresses and order of joins.
func planScalper(o ScalperOptions, now time.Time) *scalperPlan {
	r := rand.New(rand.NewPCG(o.Seed, 0x5ca1_9e4))
	n := o.People + o.Accounts
	p := &scalperPlan{from: make([]netip.Addr, n), made: make([]time.Time, n), delivery: make([]int, n), device: make([]int, n),
		arrive: make([]float64, n), group: make([]string, n), family: make([]int, n)}
	// The people's /24s: 127.A.B.0 with A from 1 to 199 (127.0 is the tool's and the server's own, 127.250
	// and up the NAT's and the scalper's), drawn without repeats.
	homes := r.Perm(199 * 256)
	home := func(k int) netip.Addr {
		h := homes[k]
		return netip.AddrFrom4([4]byte{127, byte(1 + h/256), byte(h % 256), byte(1 + r.IntN(254))})
	}
	nat := netip.AddrFrom4([4]byte{127, 250, 0, 1})
	dayBefore := now.Add(-48 * time.Hour)
	roles := r.Perm(o.People) // roles[i] < NAT: behind the NAT; then the families' members, two by two
	newDelivery := func(i int) int {
		p.deliveries = append(p.deliveries, Delivery{Recipient: fmt.Sprintf("Shopper %d", i), Phone: fmt.Sprintf("+86 138 %08d", i),
			Region: "Zhejiang", City: "Hangzhou", Street: fmt.Sprintf("%d Wensan Road, flat %d", 1+i/100, 1+i%100), Postcode: "310012"})
		return len(p.deliveries) - 1
	}
	famHome := map[int]netip.Addr{}
	famDelivery := map[int]int{}
	for i := range o.People {
		p.made[i] = dayBefore.Add(time.Duration(r.Int64N(int64(23 * time.Hour)))) // over the day before, older than a day
		p.device[i] = i
		p.arrive[i] = 0.5 * r.Float64()
		p.family[i] = -1
		switch k := roles[i]; {
		case k < o.NAT:
			p.group[i], p.from[i], p.delivery[i] = groupNAT, nat, newDelivery(i)
		case k < o.NAT+2*o.Families:
			f := (k - o.NAT) / 2
			p.group[i], p.family[i] = groupFamily, f
			if _, ok := famHome[f]; !ok {
				famHome[f], famDelivery[f] = home(i), newDelivery(i)
			}
			p.from[i], p.delivery[i] = famHome[f], famDelivery[f]
		default:
			p.group[i], p.from[i], p.delivery[i] = groupAlone, home(i), newDelivery(i)
		}
	}
	// The scalper: its accounts made within ten minutes on the day before, joining from the start of the
	// countdown (a bot does not wait).
	burst := dayBefore.Add(time.Duration(r.Int64N(int64(20 * time.Hour))))
	first := len(p.deliveries)
	for j := range o.Addresses {
		p.deliveries = append(p.deliveries, Delivery{Recipient: fmt.Sprintf("Li %c%c", 'A'+j%26, 'a'+j/26%26), Phone: fmt.Sprintf("+86 139 %08d", j),
			Region: "Guangdong", City: "Shenzhen", Street: fmt.Sprintf("%d Huaqiang North Road, room %d", 100+j, 1+j), Postcode: "518031"})
	}
	for j := range o.Accounts {
		i := o.People + j
		p.from[i] = netip.AddrFrom4([4]byte{127, 251, 0, byte(1 + j%o.Sources)})
		p.made[i] = burst.Add(time.Duration(j) * 10 * time.Minute / time.Duration(o.Accounts))
		if o.Equipped { // 256 /24s of its own, accounts made over the month before
			p.from[i] = netip.AddrFrom4([4]byte{127, 252, byte(j % 256), byte(1 + j/256)})
			p.made[i] = dayBefore.Add(-30 * 24 * time.Hour).Add(time.Duration(j) * 30 * 24 * time.Hour / time.Duration(o.Accounts))
		}
		p.delivery[i] = first + j%o.Addresses
		p.device[i] = o.People + j/o.PerDevice
		p.arrive[i] = 0.1 * r.Float64()
		p.family[i] = -1
	}
	return p
}

// ScalperRun is what one run of the scalper scenario measured.
type ScalperRun struct {
	Options   ScalperOptions
	Sale      *Sale
	Countdown time.Duration
	Took      time.Duration // the whole run: seeding, logins, the countdown, the line, the audit
	Price     int64         // the proof of work's maxnumber at rest (the server's POW_MAXNUMBER)

	// Every person's outcome, by group: bought, sold out, refused <rule>, or "" (no final answer).
	People        map[string]map[string]int
	PeopleBought  int
	RuleWorking   int      // families' second members refused by the address rule
	Wrong         []string // people refused or shadowed wrongly (false positives), each said
	PeopleFlagged int      // people the server flagged (-1: it did not say who); wrongly shadowed only with the shadow line on
	ShadowLine    bool     // the server's shadow line held the flagged back (SHADOW_LINE on)

	ScalperBought   int
	ScalperEntrants int            // its accounts in the line (joined)
	ScalperRefused  map[string]int // its joins refused, by rule
	ScalperFlagged  int            // its entrants the server flagged (-1: it did not say who)
	// ScalperOutside is its entrants outside the shadow line; OutsideFrom says where the figure came from.
	ScalperOutside int
	OutsideFrom    string
	Pow, PeoplePow PowSpent // the scalper's proofs of work, and the people's
	Late           int      // joins answered after the start (placed behind the draw)
	Unanswered     int      // accounts without a final answer when the run's time ran out

	Report *ItemReport // the sale's fairness report, as the server made it
	Audit  *Audit
}

// FalsePositives is how many people were refused or shadowed wrongly.
func (r *ScalperRun) FalsePositives() int { return len(r.Wrong) }

// ItemReport is an item's fairness report (GET /api/activities/{id}/report).
type ItemReport struct {
	ItemID   int64            `json:"item_id"`
	Entrants int64            `json:"entrants"`
	Refused  map[string]int64 `json:"refused"`
	Flagged  int64            `json:"flagged"`
	Shadowed int64            `json:"shadowed"`
	Cleared  int64            `json:"cleared"`
	Turns    int64            `json:"turns"`
	Missed   int64            `json:"missed"`
	Buyers   int64            `json:"buyers"`
}

// solveRate is how many tries a second this machine's solver makes on one core (ALTCHA's Go library),
// measured once a process.
var solveRate = sync.OnceValue(measureSolveRate)

func measureSolveRate() float64 {
	const n = 300_000
	num := int64(n)
	ch, err := altcha.CreateChallenge(altcha.ChallengeOptions{Algorithm: altcha.SHA256, MaxNumber: n, Number: &num, HMACKey: "calibrate"})
	if err != nil {
		return 2e6
	}
	start := time.Now()
	if _, err := altcha.SolveChallenge(ch.Challenge, ch.Salt, altcha.SHA256, n, 0, nil); err != nil {
		return 2e6
	}
	return n / max(time.Since(start).Seconds(), 1e-3)
}

// RunScalper runs the scalper scenario once against the server at base (its Redis for the captcha
// answers, its database for the accounts), as admin and merchant.
func RunScalper(ctx context.Context, base string, rdb redis.UniversalClient, pool *pgxpool.Pool, admin, merchant User, o ScalperOptions) (*ScalperRun, error) {
	o.defaults()
	began := time.Now()
	run := &ScalperRun{Options: o, People: map[string]map[string]int{}, ScalperRefused: map[string]int{}, PeopleFlagged: -1, ScalperFlagged: -1}
	people, scalper := NewClient(base, 256), NewClient(base, 64)
	defer people.Close()
	defer scalper.Close()
	// Each side solves on as many threads as there are cores: the scalper's CPU is its own, read from them.
	people.SolveOn(runtime.NumCPU())
	scalper.SolveOn(runtime.NumCPU())
	staff := &Options{Admin: admin, Merchant: merchant}
	if err := people.logins(ctx, staff); err != nil {
		return nil, err
	}
	admin, merchant = staff.Admin, staff.Merchant
	if err := scalper.Start(ctx); err != nil {
		return nil, err
	}

	plan := planScalper(o, time.Now())
	n := o.People + o.Accounts
	logf(o.Log, "scalper: seed %d: seeding %d people's and %d scalper's accounts, with their addresses", o.Seed, o.People, o.Accounts)
	prefix := Name("sk")
	users, err := SeedAccounts(ctx, pool, prefix, plan.made)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, n)
	dels := make([]Delivery, n)
	for i, u := range users {
		ids[i], dels[i] = u.ID, plan.deliveries[plan.delivery[i]]
	}
	addresses, err := SeedAddresses(ctx, pool, ids, dels, plan.made)
	if err != nil {
		return nil, err
	}
	devices := map[int]*Device{}
	for i, u := range users {
		u.FromAddress(plan.from[i])
		if devices[plan.device[i]] == nil {
			devices[plan.device[i]] = &Device{}
		}
		u.UseDevice(devices[plan.device[i]])
	}
	if err := people.LoginAll(ctx, users[:o.People], bar(o.Log, "log in", o.People)); err != nil {
		return nil, err
	}
	if err := scalper.LoginAll(ctx, users[o.People:], nil); err != nil {
		return nil, err
	}

	// The countdown: long enough for every join's proof of work at the server's price (half the maxnumber
	// a join, times what pressure and crowded prefixes raise it by: about 2.5 as measured), on the cores
	// the load tool shares with the server. Joins answered after the start are counted (Late).
	var price struct {
		MaxNumber int64 `json:"maxnumber"`
	}
	if err := people.JSON(ctx, http.MethodGet, "/api/altcha?purpose=register", nil, nil, &price); err != nil {
		return nil, fmt.Errorf("the proof of work's price: %w", err)
	}
	run.Price = price.MaxNumber
	countdown := o.Countdown
	if countdown <= 0 {
		work := float64(n) * float64(price.MaxNumber) / 2 * 2.5 / solveRate() // core-seconds
		countdown = 5*time.Second + time.Duration(work*2/float64(runtime.NumCPU())*float64(time.Second))
	}
	run.Countdown = countdown
	lead := 3*time.Second + time.Duration(n)*200*time.Microsecond // the instances draw captchas ahead meanwhile
	sale, err := people.SetUpSaleRules(ctx, &merchant, &admin, prefix, o.Units, 1, lead+countdown, 2*time.Hour, "queue", o.Rules)
	if err != nil {
		return nil, err
	}
	run.Sale = sale
	logf(o.Log, "scalper: the sale is approved (rules %+v); %d accounts join over a %v countdown", o.Rules, n, countdown.Round(time.Second))
	opens := sale.StartsAt.Add(-countdown)
	if !sleep(ctx, time.Until(opens)) {
		return nil, ctx.Err()
	}
	// The scalper's browsers get their device ids first, one account each: its accounts share them.
	err = parallel(ctx, (o.Accounts+o.PerDevice-1)/o.PerDevice, 16, func(ctx context.Context, k int) error {
		_, err := scalper.Do(ctx, http.MethodGet, "/api/altcha?"+joinQuery(sale.ItemID), nil, users[o.People+k*o.PerDevice])
		return err
	})
	if err != nil {
		return nil, err
	}
	shoppers := make([]*crowdShopper, n)
	for i, u := range users {
		shoppers[i] = &crowdShopper{u: u, arrive: opens.Add(time.Duration(plan.arrive[i] * float64(countdown))), Outcome: newOutcome(i)}
		if o.Rules.OnePerAddress {
			shoppers[i].addressID = addresses[i]
		}
	}
	runCtx, stop := context.WithDeadline(ctx, sale.StartsAt.Add(3*time.Minute+time.Duration(n)*10*time.Millisecond))
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { // how many were in the line at the draw, for the log
		if !sleep(runCtx, time.Until(sale.StartsAt)) {
			return
		}
		in, last := 0, opens
		for _, s := range shoppers {
			s.mu.Lock()
			if !s.inLine.IsZero() {
				in++
				if s.inLine.After(last) {
					last = s.inLine
				}
			}
			s.mu.Unlock()
		}
		logf(o.Log, "scalper: %d of %d accounts in the line at the start, the last %v into the %v countdown", in, n,
			last.Sub(opens).Round(time.Second), countdown.Round(time.Second))
	})
	wg.Go(func() {
		people.runShoppers(runCtx, rdb, sale, shoppers[:o.People], "queue", bar(o.Log, "people", o.People))
	})
	wg.Go(func() { scalper.runShoppers(runCtx, rdb, sale, shoppers[o.People:], "queue", func(int) {}) })
	wg.Wait()
	run.Pow, run.PeoplePow = scalper.Pow(), people.Pow()

	st, _, err := people.WaitDrained(ctx, &admin, sale, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	res := &Result{Kinds: map[string]int{}, Queued: map[int]int{}, Unconfirmed: map[int]int{}, Lost: map[int]int{}}
	for _, s := range shoppers {
		if s.Queued > 0 {
			res.Queued[s.Who] = s.Queued
		}
		if s.Unconfirmed > 0 {
			res.Unconfirmed[s.Who] = s.Unconfirmed
		}
		if s.Lost > 0 {
			res.Lost[s.Who] = s.Lost
		}
		res.Kinds[s.Final]++
		if !s.inLine.IsZero() && s.inLine.After(sale.StartsAt) {
			run.Late++
		}
		if s.Final == "" {
			run.Unanswered++
		}
	}
	var rep struct {
		Items []ItemReport `json:"items"`
	}
	if err := people.JSON(ctx, http.MethodGet, fmt.Sprintf("/api/activities/%d/report", sale.ActivityID), nil, &admin, &rep); err != nil {
		return nil, fmt.Errorf("the fairness report: %w", err)
	}
	for i := range rep.Items {
		if rep.Items[i].ItemID == sale.ItemID {
			run.Report = &rep.Items[i]
		}
	}
	flagged, shadowLine, err := people.flaggedEntrants(ctx, &admin, sale)
	if err != nil {
		return nil, err
	}
	run.ShadowLine = shadowLine
	run.tally(plan, shoppers, flagged)

	run.Audit = people.AuditSale(ctx, sale, st, users, res)
	run.Audit.check(run.Unanswered == 0, "every account has a final answer: bought, sold out or refused (%d without)", run.Unanswered)
	run.Audit.check(int64(run.PeopleBought+run.ScalperBought) == st.OrdersPending+st.OrdersPaid,
		"the units the people (%d) and the scalper (%d) won are the orders (%d)", run.PeopleBought, run.ScalperBought, st.OrdersPending+st.OrdersPaid)
	ok, err := people.checkDraw(ctx, sale.ItemID)
	run.Audit.check(ok && err == nil, "the draw is the rule's order, checked from its public record (%v)", err)
	run.Took = time.Since(began)
	return run, nil
}

// tally counts each side's outcome from what each account saw and whom the server flagged (nil: it
// does not say). A person flagged is shadowed wrongly when the shadow line is on; with it off, flagged
// people are counted apart (PeopleFlagged), as what the line would have done.
func (r *ScalperRun) tally(plan *scalperPlan, shoppers []*crowdShopper, flagged map[int64]bool) {
	o := r.Options
	famRefused := map[int]int{}
	known := flagged != nil
	if known {
		r.PeopleFlagged, r.ScalperFlagged = 0, 0
	}
	for i, s := range shoppers {
		joined := !s.inLine.IsZero()
		if i < o.People {
			g := plan.group[i]
			if r.People[g] == nil {
				r.People[g] = map[string]int{}
			}
			r.People[g][s.Final]++
			switch {
			case s.Final == "bought":
				r.PeopleBought++
			case s.Final == "refused address_limit" && plan.family[i] >= 0 && famRefused[plan.family[i]] == 0:
				famRefused[plan.family[i]]++
				r.RuleWorking++
			case strings.HasPrefix(s.Final, "refused "):
				r.Wrong = append(r.Wrong, fmt.Sprintf("%s (%s) was %s", s.u.Name, g, s.Final))
			}
			if known && flagged[s.u.ID] {
				r.PeopleFlagged++
				if r.ShadowLine {
					r.Wrong = append(r.Wrong, fmt.Sprintf("%s (%s) was shadowed", s.u.Name, g))
				}
			}
			continue
		}
		switch {
		case s.Final == "bought":
			r.ScalperBought++
		case strings.HasPrefix(s.Final, "refused "):
			r.ScalperRefused[strings.TrimPrefix(s.Final, "refused ")]++
		}
		if joined {
			r.ScalperEntrants++
			if known && flagged[s.u.ID] {
				r.ScalperFlagged++
			}
		}
	}
	switch {
	case known && !r.ShadowLine:
		r.ScalperOutside, r.OutsideFrom = r.ScalperEntrants, "none: the shadow line is off (the server flags, and shadows no one)"
	case known:
		r.ScalperOutside, r.OutsideFrom = r.ScalperEntrants-r.ScalperFlagged, "counted by account from the server's flagged clusters"
	case r.Report != nil && r.Report.Shadowed > 0:
		// The report says how many, not who: at least its entrants beyond the shadowed are outside.
		r.ScalperOutside, r.OutsideFrom = max(r.ScalperEntrants-int(r.Report.Shadowed), 0), "at least, from the report's count of the shadowed"
	default:
		r.ScalperOutside, r.OutsideFrom = r.ScalperEntrants, "none: the report shadowed no one"
	}
}

// flaggedEntrants answers the sale's flagged entrants, by account, from the admins' view of its flagged
// clusters (GET /api/admin/items/{id}/clusters), and whether the shadow line holds them back (SHADOW_LINE
// off: the server flags, and shadows no one); nil where the server has no such view (a server from before
// the shadow line).
func (c *Client) flaggedEntrants(ctx context.Context, admin *User, sale *Sale) (flagged map[int64]bool, shadowLine bool, err error) {
	a, err := c.Patient(ctx, http.MethodGet, fmt.Sprintf("/api/admin/items/%d/clusters", sale.ItemID), nil, admin)
	if err != nil {
		return nil, false, err
	}
	if a.Status == http.StatusNotFound {
		return nil, false, nil
	}
	var cs struct {
		ShadowLine bool `json:"shadow_line"`
		Clusters   []struct {
			Users []int64 `json:"users"`
		} `json:"clusters"`
	}
	if a.Status != http.StatusOK || jsonUnmarshal(a.Body, &cs) != nil {
		return nil, false, fmt.Errorf("the flagged clusters: %d %.200s", a.Status, a.Body)
	}
	flagged = map[int64]bool{}
	for _, cl := range cs.Clusters {
		for _, u := range cl.Users {
			flagged[u] = true
		}
	}
	return flagged, cs.ShadowLine, nil
}

// ScalperVariant is a run's rules: the sale's, and the server's shadow line (SHADOW_LINE).
type ScalperVariant struct {
	Name   string
	Rules  Rules
	Shadow bool
}

// Env is the server's environment for the variant.
func (v ScalperVariant) Env() []string {
	return []string{"SHADOW_LINE=" + map[bool]string{true: "on", false: "off"}[v.Shadow]}
}

// ScalperVariants are each rule alone, neither and both, by name.
var ScalperVariants = []ScalperVariant{
	{Name: "none", Rules: Rules{}},
	{Name: "one_per_address", Rules: Rules{OnePerAddress: true}},
	{Name: "shadow", Shadow: true},
	{Name: "both", Rules: Rules{OnePerAddress: true, AccountsBeforeApproval: true}, Shadow: true},
}

// VariantsNamed answers the variants a comma-separated list names ("all": every one).
func VariantsNamed(list string) ([]ScalperVariant, error) {
	if list == "" || list == "all" {
		return ScalperVariants, nil
	}
	var out []ScalperVariant
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(ScalperVariants, func(v ScalperVariant) bool { return v.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("no scalper variant %q (none, one_per_address, shadow, both, all)", name)
		}
		out = append(out, ScalperVariants[i])
	}
	return out, nil
}

// ScalperSeries is a variant's runs, one a seed.
type ScalperSeries struct {
	Variant ScalperVariant
	Runs    []*ScalperRun
}

// Figures of a series: the median and the worst of the scalper's units and entrants outside the shadow
// line, and the most false positives of any run.
func (s *ScalperSeries) figure(of func(*ScalperRun) int) (median float64, worst int) {
	v := make([]int, len(s.Runs))
	for i, r := range s.Runs {
		v[i] = of(r)
	}
	sort.Ints(v)
	if len(v) == 0 {
		return 0, 0
	}
	m := len(v) / 2
	median = float64(v[m])
	if len(v)%2 == 0 {
		median = float64(v[m-1]+v[m]) / 2
	}
	return median, v[len(v)-1]
}

// OK reports whether every run's audit passed.
func (s *ScalperSeries) OK() bool {
	for _, r := range s.Runs {
		if !r.Audit.OK() {
			return false
		}
	}
	return len(s.Runs) > 0
}

// RunScalperSeries runs each variant on a server of its own (start makes it, with the variant's
// environment; the runs of a variant share it, each with a sale and accounts of its own), once a seed
// from o.Seed to o.Seed+seeds-1.
func RunScalperSeries(ctx context.Context, variants []ScalperVariant, seeds int, o ScalperOptions,
	start func(ctx context.Context, v ScalperVariant) (*Server, error)) ([]*ScalperSeries, error) {
	var out []*ScalperSeries
	for _, v := range variants {
		srv, err := start(ctx, v)
		if err != nil {
			return out, fmt.Errorf("%s: the server: %w", v.Name, err)
		}
		s := &ScalperSeries{Variant: v}
		for k := range max(seeds, 1) {
			ro := o
			ro.Seed, ro.Rules = o.Seed+uint64(k), v.Rules
			logf(o.Log, "scalper %s: run %d of %d (seed %d)", v.Name, k+1, max(seeds, 1), ro.Seed)
			r, err := RunScalper(ctx, srv.Base, srv.Redis, srv.Pool, srv.Admin, srv.Merchant, ro)
			if err != nil {
				srv.Stop()
				return out, fmt.Errorf("%s, seed %d: %w", v.Name, ro.Seed, err)
			}
			logf(o.Log, "scalper %s seed %d: %s", v.Name, ro.Seed, r.Line())
			s.Runs = append(s.Runs, r)
		}
		srv.Stop()
		out = append(out, s)
	}
	return out, nil
}

// Line is a run's figures on one line, for the terminal.
func (r *ScalperRun) Line() string {
	audit := "audit ok"
	if !r.Audit.OK() {
		audit = "AUDIT FAILED: " + strings.Join(r.Audit.Failures, "; ")
	}
	return fmt.Sprintf("scalper won %d of %d (people %d); its entrants %d, outside the shadow line %d; false positives %d; "+
		"the address rule held back a family member %d times; its proofs of work %.1f CPU s (%.1f ms an account); late joins %d; %v; %s",
		r.ScalperBought, r.Options.Units, r.PeopleBought, r.ScalperEntrants, r.ScalperOutside, r.FalsePositives(), r.RuleWorking,
		r.Pow.CPU.Seconds(), r.Pow.CPU.Seconds()*1000/float64(max(r.Options.Accounts, 1)), r.Late, r.Took.Round(time.Second), audit)
}

// ScalperMarkdown is the scenario's section of a report: each variant's figures (medians and worst over
// its seeds), then each variant's first run in detail.
func ScalperMarkdown(series []*ScalperSeries) string {
	var b strings.Builder
	if len(series) == 0 || len(series[0].Runs) == 0 {
		return ""
	}
	o := series[0].Runs[0].Options
	scalper := fmt.Sprintf("made within ten minutes the day before; %d source addresses in one /24; a browser a %d accounts; %d delivery addresses",
		o.Sources, o.PerDevice, o.Addresses)
	if o.Equipped {
		scalper = fmt.Sprintf("better equipped: made over the month before; its source addresses over 256 /24s, about %d accounts a /24; "+
			"a browser and a delivery address an account", (o.Accounts+255)/256)
	}
	fmt.Fprintf(&b, "%d people (%d behind one carrier-grade NAT address, %d families of two sharing a delivery address, the rest on a /24 "+
		"of their own) and a scalper with %d accounts (%s), all joining a queue sale's line before its start, for %d units. Accounts seeded "+
		"with their addresses; every join paid its proof of work (the server's maxnumber at rest: %d). %d run(s) a variant, seeds %d and on; "+
		"a server of its own a variant.\n\n",
		o.People, o.NAT, o.Families, o.Accounts, scalper, o.Units, series[0].Runs[0].Price, len(series[0].Runs), o.Seed)
	b.WriteString("| variant | scalper's units: median (worst) | its entrants | outside the shadow line: median (worst) | " +
		"people's units | false positives (most) | the address rule working (families) | scalper's proof-of-work CPU an account | audits |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, s := range series {
		units, unitsWorst := s.figure(func(r *ScalperRun) int { return r.ScalperBought })
		entr, _ := s.figure(func(r *ScalperRun) int { return r.ScalperEntrants })
		out, outWorst := s.figure(func(r *ScalperRun) int { return r.ScalperOutside })
		ppl, _ := s.figure(func(r *ScalperRun) int { return r.PeopleBought })
		_, fp := s.figure(func(r *ScalperRun) int { return r.FalsePositives() })
		fam, _ := s.figure(func(r *ScalperRun) int { return r.RuleWorking })
		cpu := 0.0
		for _, r := range s.Runs {
			cpu += r.Pow.CPU.Seconds() * 1000 / float64(max(r.Options.Accounts, 1))
		}
		audits := "passed"
		if !s.OK() {
			audits = "**FAILED**"
		}
		fmt.Fprintf(&b, "| %s | %g (%d) | %g | %g (%d) | %g | %d | %g | %.1f ms | %s |\n", s.Variant.Name, units, unitsWorst, entr, out, outWorst,
			ppl, fp, fam, cpu/float64(len(s.Runs)), audits)
	}
	b.WriteString("\n")
	for _, s := range series {
		r := s.Runs[0]
		fmt.Fprintf(&b, "#### %s (seed %d)\n\n", s.Variant.Name, r.Options.Seed)
		fmt.Fprintf(&b, "Rules: one per address %v, accounts before approval %v; shadow line %v. Countdown %v; the run took %v.\n\n",
			r.Options.Rules.OnePerAddress, r.Options.Rules.AccountsBeforeApproval, s.Variant.Shadow, r.Countdown.Round(time.Second), r.Took.Round(time.Second))
		fmt.Fprintf(&b, "The scalper: %d accounts, %d in the line, refused %v; %d outside the shadow line (%s); won **%d** of %d units. "+
			"Its proofs of work: %s; %.1f CPU seconds (%.1f ms an account). The people's: %.1f ms a join.\n\n", r.Options.Accounts,
			r.ScalperEntrants, r.ScalperRefused, r.ScalperOutside, r.OutsideFrom, r.ScalperBought, r.Options.Units, r.Pow, r.Pow.CPU.Seconds(),
			r.Pow.CPU.Seconds()*1000/float64(max(r.Options.Accounts, 1)), r.PeoplePow.CPU.Seconds()*1000/float64(max(r.PeoplePow.Solves, 1)))
		b.WriteString("| people | outcome | count |\n| --- | --- | --- |\n")
		for _, g := range sortedKeys(r.People) {
			for _, f := range sortedKeys(r.People[g]) {
				name := f
				if name == "" {
					name = "no final answer"
				}
				fmt.Fprintf(&b, "| %s | %s | %d |\n", g, name, r.People[g][f])
			}
		}
		fmt.Fprintf(&b, "\nFalse positives (people refused or shadowed wrongly): **%d**", r.FalsePositives())
		if len(r.Wrong) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(r.Wrong[:min(len(r.Wrong), 5)], "; "))
		}
		fmt.Fprintf(&b, "; a family's second account refused by the address rule (the rule working): %d.", r.RuleWorking)
		switch {
		case r.PeopleFlagged < 0:
			b.WriteString(" The server does not say whom it flagged: people shadowed wrongly are not counted.")
		case !r.ShadowLine:
			fmt.Fprintf(&b, " The shadow line is off: the server flagged %d people and %d of the scalper's entrants, and held none back.",
				r.PeopleFlagged, r.ScalperFlagged)
		default:
			fmt.Fprintf(&b, " Flagged and shadowed: %d of the scalper's entrants, %d people.", r.ScalperFlagged, r.PeopleFlagged)
		}
		if rp := r.Report; rp != nil {
			fmt.Fprintf(&b, " The fairness report: %d entrants, refused %v, flagged %d, shadowed %d, cleared %d, turns %d, buyers %d.",
				rp.Entrants, rp.Refused, rp.Flagged, rp.Shadowed, rp.Cleared, rp.Turns, rp.Buyers)
		}
		if r.Late > 0 {
			fmt.Fprintf(&b, " %d joins were answered after the start (behind the draw).", r.Late)
		}
		b.WriteString("\n\n")
		writeAudit(&b, &Report{Audit: r.Audit})
	}
	return b.String()
}
