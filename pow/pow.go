// Package pow issues and checks the proofs of work (ALTCHA's protocol, SHA-256) that a registration and
// a join of a line carry, priced by the pressure this instance sees, and accepts each solution once.
package pow

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"time"

	altcha "github.com/altcha-org/altcha-lib-go"
	"github.com/redis/go-redis/v9"

	"seckill/errs"
)

// The purposes a challenge is made for: it opens nothing else.
const (
	Register = "register"
	Join     = "join"
)

const (
	// TTL is how long a challenge may be solved and sent: a few minutes, as long as a captcha lives.
	TTL = 5 * time.Minute
	// DefaultMaxNumber is POW_MAXNUMBER's default: the solution is drawn uniformly from 0..maxnumber, so a
	// solver tries half of it on average and 90% of it at the 90th percentile. The page's solver does about
	// 220 k tries a second on this machine's Chromium with 4× CPU throttling (and 850 k without):
	// 0.9 × 400 k / 220 k ≈ 1.6 s at p90 on a phone (docs/security.md, TestProofOfWorkSolveTimes).
	DefaultMaxNumber = 400_000
	// Floor is the least POW_MAXNUMBER outside demo mode: below it the work costs a scalper nothing.
	Floor = 100_000
	// DemoFloor is the least in demo mode, which may be quick.
	DemoFloor = 10
)

// Pricing by pressure. A challenge costs the base maxnumber times:
//   - the pressure: the joins and registrations whose proof this instance took in the last whole second, r:
//     1 up to pressureKnee (50) a second, then r/50 (2× at 100 a second, 4× at 200), at most 8×. A person's
//     page solves while they type the captcha, so a crowd of people hardly notices; a flood pays in
//     proportion to its size.
//   - 2 for a join by an account made less than a day ago (NewAccount);
//   - 2 for a join from an address prefix (IPv4 /24, IPv6 /48) that sent crowdKnee (20) joins of the
//     item within crowdWindow, 4 from one that sent crowdHeavy (200): a carrier-grade NAT puts hundreds of
//     people behind one address, so this only doubles their work, never refuses them;
//
// and never more than mostFactor (16×) in all: a phone's page still ends within half a minute.
const (
	mostFactor   = 16
	pressureKnee = 50
	pressureMost = 8
	crowdKnee    = 20
	crowdHeavy   = 200
	crowdWindow  = 10 * time.Minute
)

// ErrBadPow is the answer to a missing, wrong, expired or reused proof of work.
var ErrBadPow = errs.Static(errs.BadPow, "the proof of work (altcha) is missing, wrong, expired or used: get a new challenge from GET /api/altcha")

// Challenge is the contract's challenge: ALTCHA's, with maxnumber spelled as the contract spells it.
type Challenge struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	MaxNumber int64  `json:"maxnumber"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// Ask is what a challenge is for, and what prices it.
type Ask struct {
	Purpose    string
	ItemID     int64  // a join's item
	UserID     int64  // a join's account: its challenge opens no other account's join
	NewAccount bool   // a join by an account made less than a day ago
	Prefix     string // the caller's address prefix (Prefix), counted for a join's crowd
}

// Work issues and checks challenges.
type Work struct {
	key  string // the HMAC key, derived from SESSION_SECRET
	rdb  redis.UniversalClient
	base int64
	now  func() time.Time
	seen rate
}

// New returns challenges signed with a key derived from secret, of base maxnumber at rest, accepted once
// each through rdb.
func New(secret string, base int64, rdb redis.UniversalClient, now func() time.Time) *Work {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("pow")) // as auth derives its keys: one key a purpose
	return &Work{key: hex.EncodeToString(m.Sum(nil)), rdb: rdb, base: base, now: now}
}

// Prefix is the address prefix an address counts in: its /24 for IPv4, its /48 for IPv6; "" for a
// string that is no address.
func Prefix(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	a = a.Unmap()
	bits := 48
	if a.Is4() {
		bits = 24
	}
	p, _ := a.Prefix(bits)
	return p.String()
}

func crowdKey(itemID int64, prefix string) string {
	return "pow:crowd:" + strconv.FormatInt(itemID, 10) + ":" + prefix
}

// Price is the maxnumber of a challenge for a.
func (w *Work) Price(ctx context.Context, a Ask) int64 {
	m := int64(1)
	if r := w.seen.last(w.now()); r > pressureKnee {
		m = min(r/pressureKnee, pressureMost)
	}
	if a.Purpose == Join {
		if a.NewAccount {
			m *= 2
		}
		if a.Prefix != "" {
			// A lost count prices as a quiet prefix: the proof stays the same for everyone else.
			n, _ := w.rdb.Get(ctx, crowdKey(a.ItemID, a.Prefix)).Int64()
			switch {
			case n >= crowdHeavy:
				m *= 4
			case n >= crowdKnee:
				m *= 2
			}
		}
	}
	return w.base * min(m, mostFactor)
}

// params are what a challenge's salt says it is for, and until when.
func params(a Ask, expires time.Time) url.Values {
	v := url.Values{}
	v.Set("expires", strconv.FormatInt(expires.Unix(), 10))
	v.Set("purpose", a.Purpose)
	if a.Purpose == Join {
		v.Set("item", strconv.FormatInt(a.ItemID, 10))
		v.Set("user", strconv.FormatInt(a.UserID, 10))
	}
	return v
}

// Challenge makes a challenge for a, priced now.
func (w *Work) Challenge(ctx context.Context, a Ask) (Challenge, error) {
	expires := w.now().Add(TTL)
	c, err := altcha.CreateChallenge(altcha.ChallengeOptions{
		Algorithm: altcha.SHA256, MaxNumber: w.Price(ctx, a), HMACKey: w.key,
		Expires: &expires, Params: params(a, expires),
	})
	if err != nil {
		return Challenge{}, err
	}
	return Challenge{Algorithm: c.Algorithm, Challenge: c.Challenge, MaxNumber: c.MaxNumber, Salt: c.Salt, Signature: c.Signature}, nil
}

// maxPayload bounds the base64 a request may hand to the decoder: a real one is about 300 bytes.
const maxPayload = 2048

// Verify checks the solution payload (the base64 of ALTCHA's JSON) for a, and uses it up: a missing,
// wrong, expired, reused one, or one made for another purpose, item or account, answers ErrBadPow.
func (w *Work) Verify(ctx context.Context, payload string, a Ask) error {
	now := w.now()
	if payload == "" || len(payload) > maxPayload {
		return ErrBadPow
	}
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return ErrBadPow
	}
	var p altcha.Payload
	if json.Unmarshal(raw, &p) != nil || p.Algorithm != string(altcha.SHA256) {
		return ErrBadPow
	}
	// The expiry is this server's clock's to judge (the library would read the wall clock): checked here.
	ok, err := altcha.VerifySolutionSafe(p, w.key, false)
	if err != nil || !ok {
		return ErrBadPow
	}
	got := altcha.ExtractParams(p)
	expires, err := strconv.ParseInt(got.Get("expires"), 10, 64)
	if err != nil || now.Unix() > expires {
		return ErrBadPow
	}
	want := params(a, time.Unix(expires, 0))
	if len(got) != len(want) {
		return ErrBadPow
	}
	for k := range want {
		if got.Get(k) != want.Get(k) {
			return ErrBadPow
		}
	}
	// Once: the first to send it takes it, until it would have expired anyway.
	ttl := time.Unix(expires, 0).Sub(now) + time.Second
	first, err := w.rdb.SetNX(ctx, "pow:used:"+p.Challenge, 1, ttl).Result()
	if err != nil {
		return err
	}
	if !first {
		return ErrBadPow
	}
	// Counted once good: junk costs nothing to refuse, and must not raise everyone's price.
	w.seen.add(now)
	if a.Purpose == Join && a.Prefix != "" {
		key := crowdKey(a.ItemID, a.Prefix)
		pipe := w.rdb.Pipeline()
		pipe.Incr(ctx, key)
		pipe.Expire(ctx, key, crowdWindow)
		_, _ = pipe.Exec(ctx) // a lost count prices one prefix lower for a while; the join goes on
	}
	return nil
}

// rate counts the checks of the current and the last whole second: cheap, and enough to price by.
type rate struct {
	mu        sync.Mutex
	sec       int64 // the current second, Unix
	cur, prev int64
}

func (r *rate) roll(now time.Time) {
	s := now.Unix()
	switch {
	case s == r.sec:
	case s == r.sec+1:
		r.sec, r.prev, r.cur = s, r.cur, 0
	default:
		r.sec, r.prev, r.cur = s, 0, 0
	}
}

func (r *rate) add(now time.Time) {
	r.mu.Lock()
	r.roll(now)
	r.cur++
	r.mu.Unlock()
}

// last is the count of the last whole second, or of the current one when it is already higher.
func (r *rate) last(now time.Time) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.roll(now)
	return max(r.prev, r.cur)
}
