package pow

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	altcha "github.com/altcha-org/altcha-lib-go"

	"seckill/errs"
	"seckill/internal/testenv"
)

const secret = "a session secret of at least thirty-two characters"

type clock struct{ t atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *clock) Advance(d time.Duration) { c.t.Add(int64(d)) }

func newWork(t *testing.T, base int64) (*Work, *clock) {
	t.Helper()
	clk := &clock{}
	clk.t.Store(time.Date(2026, 11, 11, 10, 0, 0, 0, time.UTC).UnixNano())
	return New(secret, base, testenv.Redis(t), clk.Now), clk
}

// solve is what a client does: the number whose hash with the salt is the challenge, sent as the
// contract's base64 JSON.
func solve(t *testing.T, c Challenge) string {
	t.Helper()
	s, err := altcha.SolveChallenge(c.Challenge, c.Salt, altcha.SHA256, int(c.MaxNumber), 0, nil)
	if err != nil || s == nil {
		t.Fatalf("no solution of %+v: %v", c, err)
	}
	return payload(c, int64(s.Number))
}

func payload(c Challenge, n int64) string {
	b, _ := json.Marshal(altcha.Payload{Algorithm: c.Algorithm, Challenge: c.Challenge, Number: n, Salt: c.Salt, Signature: c.Signature})
	return base64.StdEncoding.EncodeToString(b)
}

func challenge(t *testing.T, w *Work, a Ask) Challenge {
	t.Helper()
	c, err := w.Challenge(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAChallengeIsTheContractsAndSolvable(t *testing.T) {
	w, _ := newWork(t, 1000)
	c := challenge(t, w, Ask{Purpose: Register})
	if c.Algorithm != "SHA-256" || c.MaxNumber != 1000 || len(c.Challenge) != 64 || len(c.Signature) != 64 {
		t.Fatalf("challenge %+v", c)
	}
	b, _ := json.Marshal(c)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"algorithm", "challenge", "maxnumber", "salt", "signature"} {
		if _, ok := m[k]; !ok {
			t.Errorf("the JSON %s has no %q", b, k)
		}
	}
	// The contract's rule, spelled out: the hex SHA-256 of the salt and the decimal solution.
	s, _ := altcha.SolveChallenge(c.Challenge, c.Salt, altcha.SHA256, int(c.MaxNumber), 0, nil)
	sum := sha256.Sum256([]byte(c.Salt + strconv.Itoa(s.Number)))
	if hex.EncodeToString(sum[:]) != c.Challenge {
		t.Fatal("the challenge is not the SHA-256 of salt and number")
	}
	if err := w.Verify(context.Background(), payload(c, int64(s.Number)), Ask{Purpose: Register}); err != nil {
		t.Fatalf("a right solution was refused: %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	ctx := context.Background()
	join := Ask{Purpose: Join, ItemID: 7, UserID: 3}
	tests := []struct {
		name  string
		made  Ask
		sent  func(t *testing.T, w *Work, clk *clock, c Challenge) string
		check Ask
	}{
		{"missing", join, func(*testing.T, *Work, *clock, Challenge) string { return "" }, join},
		{"not base64", join, func(*testing.T, *Work, *clock, Challenge) string { return "%%%" }, join},
		{"not JSON", join, func(*testing.T, *Work, *clock, Challenge) string {
			return base64.StdEncoding.EncodeToString([]byte("{"))
		}, join},
		{"wrong number", join, func(t *testing.T, w *Work, _ *clock, c Challenge) string {
			s, _ := altcha.SolveChallenge(c.Challenge, c.Salt, altcha.SHA256, int(c.MaxNumber), 0, nil)
			return payload(c, int64(s.Number)+1)
		}, join},
		{"reused", join, func(t *testing.T, w *Work, _ *clock, c Challenge) string {
			p := solve(t, c)
			if err := w.Verify(ctx, p, join); err != nil {
				t.Fatalf("the first use was refused: %v", err)
			}
			return p
		}, join},
		{"expired", join, func(t *testing.T, w *Work, clk *clock, c Challenge) string {
			clk.Advance(TTL + time.Second)
			return solve(t, c)
		}, join},
		{"forged: signed with another key", join, func(t *testing.T, w *Work, _ *clock, c Challenge) string {
			exp := time.Unix(0, 0).Add(time.Hour * 24 * 365 * 60)
			f, _ := altcha.CreateChallenge(altcha.ChallengeOptions{Algorithm: altcha.SHA256, MaxNumber: 10, HMACKey: "guessed",
				Expires: &exp, Params: params(join, exp)})
			return solve(t, Challenge{f.Algorithm, f.Challenge, f.MaxNumber, f.Salt, f.Signature})
		}, join},
		{"forged: the salt's expiry moved", join, func(t *testing.T, w *Work, _ *clock, c Challenge) string {
			s, _ := altcha.SolveChallenge(c.Challenge, c.Salt, altcha.SHA256, int(c.MaxNumber), 0, nil)
			c.Salt = c.Salt[:len(c.Salt)-1] + "9"
			return payload(c, int64(s.Number))
		}, join},
		{"another algorithm named", join, func(t *testing.T, w *Work, _ *clock, c Challenge) string {
			s, _ := altcha.SolveChallenge(c.Challenge, c.Salt, altcha.SHA256, int(c.MaxNumber), 0, nil)
			c.Algorithm = "SHA-1"
			return payload(c, int64(s.Number))
		}, join},
		{"a registration's for a join", Ask{Purpose: Register}, func(t *testing.T, w *Work, _ *clock, c Challenge) string { return solve(t, c) }, join},
		{"a join's for a registration", join, func(t *testing.T, w *Work, _ *clock, c Challenge) string { return solve(t, c) }, Ask{Purpose: Register}},
		{"another item's", join, func(t *testing.T, w *Work, _ *clock, c Challenge) string { return solve(t, c) }, Ask{Purpose: Join, ItemID: 8, UserID: 3}},
		{"another account's", join, func(t *testing.T, w *Work, _ *clock, c Challenge) string { return solve(t, c) }, Ask{Purpose: Join, ItemID: 7, UserID: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, clk := newWork(t, 500)
			c := challenge(t, w, tt.made)
			err := w.Verify(ctx, tt.sent(t, w, clk, c), tt.check)
			if !errs.Is(err, errs.BadPow) {
				t.Fatalf("got %v, want bad_pow", err)
			}
		})
	}
}

// A solution sent twice at once is taken by one of them only.
func TestASolutionIsTakenOnceUnderARace(t *testing.T) {
	w, _ := newWork(t, 500)
	c := challenge(t, w, Ask{Purpose: Register})
	p := solve(t, c)
	var ok atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w.Verify(context.Background(), p, Ask{Purpose: Register}) == nil {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 {
		t.Fatalf("%d took it, want 1", ok.Load())
	}
}

func TestUsedSolutionsAreKeptUntilTheirChallengeExpires(t *testing.T) {
	w, _ := newWork(t, 500)
	c := challenge(t, w, Ask{Purpose: Register})
	if err := w.Verify(context.Background(), solve(t, c), Ask{Purpose: Register}); err != nil {
		t.Fatal(err)
	}
	ttl := w.rdb.TTL(context.Background(), "pow:used:"+c.Challenge).Val()
	if ttl <= TTL-time.Minute || ttl > TTL+time.Second {
		t.Fatalf("the used solution is kept %v, want about %v", ttl, TTL)
	}
}

func TestPriceRisesWithPressureNewAccountsAndCrowdedPrefixes(t *testing.T) {
	ctx := context.Background()
	w, clk := newWork(t, 1000)
	quiet := Ask{Purpose: Join, ItemID: 9, UserID: 1, Prefix: "10.0.0.0/24"}
	if p := w.Price(ctx, quiet); p != 1000 {
		t.Fatalf("at rest %d, want the base 1000", p)
	}
	if p := w.Price(ctx, Ask{Purpose: Join, ItemID: 9, UserID: 1, NewAccount: true}); p != 2000 {
		t.Errorf("a new account's %d, want 2000", p)
	}
	if p := w.Price(ctx, Ask{Purpose: Register, NewAccount: true}); p != 1000 {
		t.Errorf("a registration's %d, want 1000 (no account yet)", p)
	}
	// A crowded prefix: its joins counted as they are checked.
	for range crowdKnee {
		c := challenge(t, w, quiet)
		if err := w.Verify(ctx, solve(t, c), quiet); err != nil {
			t.Fatal(err)
		}
	}
	if p := w.Price(ctx, quiet); p != 2000 {
		t.Errorf("after %d joins from the prefix %d, want 2000", crowdKnee, p)
	}
	if p := w.Price(ctx, Ask{Purpose: Join, ItemID: 10, UserID: 1, Prefix: "10.0.0.0/24"}); p != 1000 {
		t.Errorf("another item's from the same prefix %d, want 1000", p)
	}
	// Pressure: 200 proofs taken in one second price the next second's challenges at 4×.
	clk.Advance(time.Second)
	for range 99 {
		w.seen.add(clk.Now())
	}
	for range 10 { // junk is refused for nothing, and raises nobody's price
		_ = w.Verify(ctx, "junk", Ask{Purpose: Register})
	}
	clk.Advance(time.Second)
	if p := w.Price(ctx, Ask{Purpose: Register}); p != 1000 {
		t.Errorf("after 99 proofs and 10 junk ones a second %d, want 1000", p)
	}
	for range 200 {
		w.seen.add(clk.Now())
	}
	clk.Advance(time.Second)
	if p := w.Price(ctx, Ask{Purpose: Register}); p != 4000 {
		t.Errorf("after 200 a second %d, want 4000", p)
	}
	clk.Advance(2 * time.Second)
	if p := w.Price(ctx, Ask{Purpose: Register}); p != 1000 {
		t.Errorf("once quiet again %d, want 1000", p)
	}
	for range 10_000 {
		w.seen.add(clk.Now())
	}
	if p := w.Price(ctx, Ask{Purpose: Join, ItemID: 9, UserID: 1, NewAccount: true, Prefix: "10.0.0.0/24"}); p != 16*1000 {
		t.Errorf("under a flood, new and crowded: %d, want %d", p, 16*1000)
	}
}

func TestPrefix(t *testing.T) {
	for ip, want := range map[string]string{
		"203.0.113.77":        "203.0.113.0/24",
		"::ffff:203.0.113.77": "203.0.113.0/24",
		"2001:db8:1:2::5":     "2001:db8:1::/48",
		"junk":                "",
	} {
		if got := Prefix(ip); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", ip, got, want)
		}
	}
}
