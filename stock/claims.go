package stock

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/errs"
	"seckill/internal/addrkey"
	"seckill/models"
)

// Claims keeps, for each activity whose rule is one_per_address, which entrant first gave each delivery
// address and each phone: another entrant who gives either is refused (address_limit), without being told
// whose it was. The address and the phone are kept as hashes of their one spelling (addrkey), never as
// they were written. One hash per activity, in its own hash slot; it goes a day after the sale ends.
type Claims struct {
	rdb    redis.UniversalClient
	region string // the phones' country when written without their code (PHONE_REGION)
}

// NewClaims returns the claims kept in rdb; phones without a country code are read as region's.
func NewClaims(rdb redis.UniversalClient, region string) *Claims {
	return &Claims{rdb: rdb, region: region}
}

var (
	//go:embed claim.lua
	claimLua    string
	claimScript = redis.NewScript(claimLua)
)

// ErrAddressTaken is the refusal of a delivery address or phone that another entrant of the sale gave.
var ErrAddressTaken = errs.Static(errs.AddressLimit,
	"this delivery address or phone has already entered this sale: one entry per address")

// claimsKeep is how long after a sale's end its claims are kept: its orders' addresses are chosen
// within their payment deadline.
const claimsKeep = 24 * time.Hour

// Check answers ErrAddressTaken when another user of the activity gave d's place or phone, without
// claiming them.
func (c *Claims) Check(ctx context.Context, a *models.Activity, userID int64, d models.Delivery) error {
	return c.run(ctx, "check", a, userID, d)
}

// Claim gives d's place and phone to the user in the activity, or answers ErrAddressTaken when another
// user of it gave either (then nothing is claimed).
func (c *Claims) Claim(ctx context.Context, a *models.Activity, userID int64, d models.Delivery) error {
	return c.run(ctx, "claim", a, userID, d)
}

func (c *Claims) run(ctx context.Context, mode string, a *models.Activity, userID int64, d models.Delivery) error {
	args := []any{userID, a.EndsAt.Add(claimsKeep).Unix(), mode}
	if p := addrkey.Place(d.Region, d.City, d.Street, d.Postcode); p != "" {
		args = append(args, claimKey("a:", p))
	}
	if p := addrkey.Phone(d.Phone, c.region); p != "" {
		args = append(args, claimKey("t:", p))
	}
	key := "sk:{act:" + strconv.FormatInt(a.ID, 10) + "}:claims"
	free, err := claimScript.Run(ctx, c.rdb, []string{key}, args...).Int()
	if err != nil {
		return fmt.Errorf("address claims of activity %d: %w", a.ID, err)
	}
	if free == 0 {
		return ErrAddressTaken
	}
	return nil
}

// claimKey is a kind's prefix and the first 16 bytes of the SHA-256 of the spelling, in hex.
func claimKey(kind, spelling string) string {
	sum := sha256.Sum256([]byte(spelling))
	return kind + hex.EncodeToString(sum[:16])
}
