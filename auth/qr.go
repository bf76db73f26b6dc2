package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/errs"
	"seckill/internal/hexid"
)

// QR login states, as the contract names them.
const (
	QRPending   = "pending"
	QRScanned   = "scanned"
	QRConfirmed = "confirmed"
	QRExpired   = "expired"
	QRCancelled = "cancelled"
)

//go:embed qr.lua
var qrLua string

var qrScript = redis.NewScript(qrLua)

// QRLogin is the state machine of logging a PC in from a phone: the PC makes a code, a logged-in phone
// scans and confirms it, and the PC's next poll starts its session. Codes live in Redis; each step is one
// Lua script, so a code is scanned once, confirmed only by the phone session that scanned it, and logs in
// only the browser that holds its binding cookie, once.
//
// Each code also has a number of two digits that only its PC is shown, once a phone has scanned it; the
// phone confirms only with it (tapped among qrChoices on the PC's network, typed elsewhere: the handler
// decides). A QR code a phishing page took from this site and showed its victim comes without that number
// (it is on the attacker's screen, not the victim's), and a wrong one cancels the code: one blind try.
type QRLogin struct {
	rdb redis.UniversalClient
	ttl time.Duration
	now func() time.Time
}

// NewQRLogin returns the state machine; codes expire after ttl.
func NewQRLogin(rdb redis.UniversalClient, ttl time.Duration, now func() time.Time) *QRLogin {
	return &QRLogin{rdb: rdb, ttl: ttl, now: now}
}

// qrChoices is how many numbers the phone offers: the computer's and decoys.
const qrChoices = 3

// ErrBadCode answers a confirm that did not carry the computer's number; the login code is cancelled.
var ErrBadCode = errs.Static(errs.BadCode, "that is not the number the computer showed: the login was cancelled")

// QRCode is a new code.
type QRCode struct {
	ID        string
	ExpiresAt time.Time
}

// PC is what the phone is shown of the browser asking to be logged in, so the person can judge.
type PC struct {
	IP        string    `json:"ip"`
	City      string    `json:"city,omitempty"` // where IP is, when the operator gave a location database
	UserAgent string    `json:"user_agent"`
	CreatedAt time.Time `json:"created_at"`
}

// QRScan is what a phone that scanned a code is shown: the PC, and the numbers to pick the PC's from.
type QRScan struct {
	PC      PC
	Choices []string
}

// QRPoll is the state a PC reads: the user to log in on the first read after the phone confirmed, and the
// number to pick on the phone while the code is scanned.
type QRPoll struct {
	State  string
	UserID int64
	Code   string
}

func qrKey(id string) string { return "qr:{" + id + "}" }

// RandomToken returns n random bytes in hex.
func RandomToken(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func bindHash(bind string) string {
	h := sha256.Sum256([]byte(bind))
	return hex.EncodeToString(h[:])
}

// randomBelow returns a uniform random number in [0, n).
func randomBelow(n int64) (int64, error) {
	v, err := rand.Int(rand.Reader, big.NewInt(n))
	if err != nil {
		return 0, err
	}
	return v.Int64(), nil
}

// matchNumbers returns a number of two digits and qrChoices distinct numbers holding it at a random place.
func matchNumbers() (code string, choices []string, err error) {
	seen := map[int64]bool{}
	nums := make([]int64, 0, qrChoices)
	for len(nums) < qrChoices {
		n, err := randomBelow(100)
		if err != nil {
			return "", nil, err
		}
		if !seen[n] {
			seen[n] = true
			nums = append(nums, n)
		}
	}
	// nums[0] is the code; the phone shows all of them in order of value, so the place says nothing.
	code = fmt.Sprintf("%02d", nums[0])
	for _, n := range nums {
		choices = append(choices, fmt.Sprintf("%02d", n))
	}
	slices.Sort(choices)
	return code, choices, nil
}

// Create makes a code bound to the browser holding bind (the value of its binding cookie).
func (q *QRLogin) Create(ctx context.Context, bind string, pc PC) (QRCode, error) {
	id, err := RandomToken(16) // 128 random bits
	if err != nil {
		return QRCode{}, err
	}
	match, choices, err := matchNumbers()
	if err != nil {
		return QRCode{}, err
	}
	now := q.now()
	code := QRCode{ID: id, ExpiresAt: now.Add(q.ttl).UTC()}
	key := qrKey(id)
	_, err = q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, map[string]any{
			"state": QRPending, "expires_at": code.ExpiresAt.UnixMilli(), "bind": bindHash(bind),
			"pc_ip": pc.IP, "pc_ua": pc.UserAgent, "created_at": now.UTC().Format(time.RFC3339),
			"code": match, "choices": strings.Join(choices, " "),
		})
		// Kept a while past its expiry, so that the PC is told "expired" rather than "unknown".
		p.Expire(ctx, key, q.ttl+5*time.Minute)
		return nil
	})
	if err != nil {
		return QRCode{}, fmt.Errorf("qr create: %w", err)
	}
	return code, nil
}

// step runs one action of the state machine; code is the number a confirm carries.
func (q *QRLogin) step(ctx context.Context, id, action, sid string, uid int64, code string) (QRPoll, error) {
	if !hexid.Valid(id) { // junk never reaches Redis
		return QRPoll{}, errs.New(errs.NotFound, "no such login code")
	}
	res, err := qrScript.Run(ctx, q.rdb, []string{qrKey(id)}, action, q.now().UnixMilli(), sid, uid, code).StringSlice()
	if err != nil {
		return QRPoll{}, fmt.Errorf("qr %s: %w", action, err)
	}
	switch res[0] {
	case "not_found":
		return QRPoll{}, errs.New(errs.NotFound, "no such login code")
	case "qr_state":
		return QRPoll{}, errs.Newf(errs.QRState, "this login code cannot be used now: %s", describe(res[1]))
	case "bad_code":
		return QRPoll{}, ErrBadCode
	}
	p := QRPoll{State: res[1]}
	if len(res) > 2 {
		p.UserID, _ = strconv.ParseInt(res[2], 10, 64)
	}
	if len(res) > 3 {
		p.Code = res[3]
	}
	return p, nil
}

func describe(state string) string {
	switch state {
	case QRPending:
		return "it has not been scanned"
	case QRScanned:
		return "it has been scanned already"
	case "scanned_elsewhere":
		return "another session scanned it"
	case QRConfirmed:
		return "it has been used"
	case QRExpired:
		return "it has expired"
	case QRCancelled:
		return "it was cancelled"
	}
	return state
}

// Scan records that the phone session sid of user uid scanned the code, and returns the PC's details and
// the numbers to pick from (never which one is the PC's).
func (q *QRLogin) Scan(ctx context.Context, id, sid string, uid int64) (QRScan, error) {
	if _, err := q.step(ctx, id, "scan", sid, uid, ""); err != nil {
		return QRScan{}, err
	}
	f, err := q.rdb.HMGet(ctx, qrKey(id), "pc_ip", "pc_ua", "created_at", "choices").Result()
	if err != nil {
		return QRScan{}, fmt.Errorf("qr scan: %w", err)
	}
	var s QRScan
	s.PC.IP, _ = f[0].(string)
	s.PC.UserAgent, _ = f[1].(string)
	if v, ok := f[2].(string); ok {
		s.PC.CreatedAt, _ = time.Parse(time.RFC3339, v)
	}
	if v, ok := f[3].(string); ok {
		s.Choices = strings.Fields(v)
	}
	return s, nil
}

// Confirm logs the PC in: only the phone session that scanned the code may, and only with the number the
// PC shows. Any other number (or none) answers ErrBadCode and cancels the code: one try.
func (q *QRLogin) Confirm(ctx context.Context, id, sid, code string) error {
	if len(code) > 8 {
		code = code[:8] // never a long string into Redis; it is wrong anyway
	}
	_, err := q.step(ctx, id, "confirm", sid, 0, code)
	return err
}

// Cancel refuses the PC: only the phone session that scanned the code may.
func (q *QRLogin) Cancel(ctx context.Context, id, sid string) error {
	_, err := q.step(ctx, id, "cancel", sid, 0, "")
	return err
}

// Poll returns the code's state for the browser holding bind. The first poll after the phone confirmed
// returns the user to log in (UserID > 0); every later one returns 0. While the code is scanned, Code is
// the number the person picks on the phone; it is never shown before a phone scanned the code, so a QR
// code copied off this page carries no number with it.
func (q *QRLogin) Poll(ctx context.Context, id, bind string) (QRPoll, error) {
	return q.step(ctx, id, "poll", bindHash(bind), 0, "")
}
