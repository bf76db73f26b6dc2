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
// whose it was. The address and the phone are kept as hashes of their one spelling (addrkey), not as
// they were written (unkeyed: not secret, as a phone's can be found again by trying numbers). One hash per activity, in its own hash slot; it goes a day after the sale ends.
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

// ErrTooManyAddresses is the refusal of an entrant who would give the sale more places and phones than
// maxClaimsPerUser: one entrant may not lock others out of the sale by giving it address after address.
var ErrTooManyAddresses = errs.Say(errs.AddressLimit, "too_many_addresses")

// ErrNotYourEntry is the refusal of an order's address that its buyer did not give when joining the line.
var ErrNotYourEntry = errs.Say(errs.AddressLimit, "not_your_entry")

// maxClaimsPerUser is how many keys (places and phones) one entrant may claim in a sale: two addresses.
const maxClaimsPerUser = 4

// claimsKeep is how long after a sale's end its claims are kept: its orders' addresses are chosen
// within their payment deadline.
const claimsKeep = 24 * time.Hour

// ClaimKeys are what a claim gives of a delivery address: the first 16 bytes of the SHA-256 of its place's
// one spelling and of its phone's (addrkey); a zero one is absent (nothing to spell). A page may carry
// them signed (auth.AddressCards), so that a join need not read the address.
type ClaimKeys struct{ Place, Phone [16]byte }

// KeysOf answers d's claim keys.
func (c *Claims) KeysOf(d models.Delivery) ClaimKeys {
	var k ClaimKeys
	if p := addrkey.Place(d.Region, d.City, d.Street); p != "" {
		k.Place = claimHash(p)
	}
	if p := addrkey.Phone(d.Phone, c.region); p != "" {
		k.Phone = claimHash(p)
	}
	return k
}

// Check answers ErrAddressTaken when another user of the activity gave k's place or phone, without
// claiming them.
func (c *Claims) Check(ctx context.Context, a *models.Activity, userID int64, k ClaimKeys) error {
	return c.run(ctx, "check", a, userID, k)
}

// Claim gives k's place and phone to the user in the activity, or answers ErrAddressTaken when another
// user of it gave either, or ErrTooManyAddresses past the user's share (then nothing is claimed).
func (c *Claims) Claim(ctx context.Context, a *models.Activity, userID int64, k ClaimKeys) error {
	return c.run(ctx, "claim", a, userID, k)
}

// Owned answers nil when d's place and phone are both the user's in the activity (given when joining),
// else ErrAddressTaken (another's) or ErrNotYourEntry (nobody's yet).
func (c *Claims) Owned(ctx context.Context, a *models.Activity, userID int64, d models.Delivery) error {
	return c.run(ctx, "owned", a, userID, c.KeysOf(d))
}

func (c *Claims) run(ctx context.Context, mode string, a *models.Activity, userID int64, k ClaimKeys) error {
	args := []any{userID, a.EndsAt.Add(claimsKeep).Unix(), mode, maxClaimsPerUser}
	if k.Place != ([16]byte{}) {
		args = append(args, "a:"+hex.EncodeToString(k.Place[:]))
	}
	if k.Phone != ([16]byte{}) {
		args = append(args, "t:"+hex.EncodeToString(k.Phone[:]))
	}
	tag := "sk:{act:" + strconv.FormatInt(a.ID, 10) + "}:"
	answer, err := claimScript.Run(ctx, c.rdb, []string{tag + "claims", tag + "claimsby"}, args...).Int()
	if err != nil {
		return fmt.Errorf("address claims of activity %d: %w", a.ID, err)
	}
	switch answer {
	case 0:
		return ErrAddressTaken
	case 2:
		return ErrTooManyAddresses
	case 3:
		return ErrNotYourEntry
	}
	return nil
}

// claimHash is the first 16 bytes of the SHA-256 of a spelling: a claim's key is its kind's prefix and
// this in hex.
func claimHash(spelling string) [16]byte {
	sum := sha256.Sum256([]byte(spelling))
	return [16]byte(sum[:16])
}
