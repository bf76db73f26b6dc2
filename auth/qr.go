package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/errs"
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
type QRLogin struct {
	rdb redis.UniversalClient
	ttl time.Duration
	now func() time.Time
}

// NewQRLogin returns the state machine; codes expire after ttl.
func NewQRLogin(rdb redis.UniversalClient, ttl time.Duration, now func() time.Time) *QRLogin {
	return &QRLogin{rdb: rdb, ttl: ttl, now: now}
}

// QRCode is a new code.
type QRCode struct {
	ID        string
	ExpiresAt time.Time
}

// PC is what the phone is shown of the browser asking to be logged in, so the person can judge.
type PC struct {
	IP        string    `json:"ip"`
	UserAgent string    `json:"user_agent"`
	CreatedAt time.Time `json:"created_at"`
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

// validID reports whether id can be a code's id (32 hex digits), so that junk never reaches Redis.
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// Create makes a code bound to the browser holding bind (the value of its binding cookie).
func (q *QRLogin) Create(ctx context.Context, bind string, pc PC) (QRCode, error) {
	id, err := RandomToken(16) // 128 random bits
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

func (q *QRLogin) step(ctx context.Context, id, action, sid string, uid int64) (string, int64, error) {
	if !validID(id) {
		return "", 0, errs.New(errs.NotFound, "no such login code")
	}
	res, err := qrScript.Run(ctx, q.rdb, []string{qrKey(id)}, action, q.now().UnixMilli(), sid, uid).StringSlice()
	if err != nil {
		return "", 0, fmt.Errorf("qr %s: %w", action, err)
	}
	switch res[0] {
	case "not_found":
		return "", 0, errs.New(errs.NotFound, "no such login code")
	case "qr_state":
		return "", 0, errs.Newf(errs.QRState, "this login code cannot be used now: %s", describe(res[1]))
	}
	var user int64
	if len(res) > 2 {
		user, _ = strconv.ParseInt(res[2], 10, 64)
	}
	return res[1], user, nil
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

// Scan records that the phone session sid of user uid scanned the code, and returns the PC's details.
func (q *QRLogin) Scan(ctx context.Context, id, sid string, uid int64) (PC, error) {
	if _, _, err := q.step(ctx, id, "scan", sid, uid); err != nil {
		return PC{}, err
	}
	f, err := q.rdb.HMGet(ctx, qrKey(id), "pc_ip", "pc_ua", "created_at").Result()
	if err != nil {
		return PC{}, fmt.Errorf("qr scan: %w", err)
	}
	pc := PC{}
	pc.IP, _ = f[0].(string)
	pc.UserAgent, _ = f[1].(string)
	if s, ok := f[2].(string); ok {
		pc.CreatedAt, _ = time.Parse(time.RFC3339, s)
	}
	return pc, nil
}

// Confirm logs the PC in: only the phone session that scanned the code may.
func (q *QRLogin) Confirm(ctx context.Context, id, sid string) error {
	_, _, err := q.step(ctx, id, "confirm", sid, 0)
	return err
}

// Cancel refuses the PC: only the phone session that scanned the code may.
func (q *QRLogin) Cancel(ctx context.Context, id, sid string) error {
	_, _, err := q.step(ctx, id, "cancel", sid, 0)
	return err
}

// Poll returns the code's state for the browser holding bind. The first poll after the phone confirmed
// returns the user to log in (userID > 0); every later one returns 0.
func (q *QRLogin) Poll(ctx context.Context, id, bind string) (state string, userID int64, err error) {
	return q.step(ctx, id, "poll", bindHash(bind), 0)
}
