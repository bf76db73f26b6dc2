package models

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
	"golang.org/x/text/unicode/norm"
	"gorm.io/gorm"

	"seckill/errs"
)

// Address is one entry of a shopper's address book.
type Address struct {
	ID        int64 `gorm:"primaryKey"`
	UserID    int64 `gorm:"not null;index"`
	Delivery  `gorm:"embedded"`
	CreatedAt time.Time `gorm:"not null"`
	UpdatedAt time.Time `gorm:"not null"`
}

// Delivery is what a delivery address says. An order keeps a copy of the one its buyer chose, which later
// edits of the address book do not change.
type Delivery struct {
	Recipient string `gorm:"size:200;not null" json:"recipient"`
	Phone     string `gorm:"size:80;not null" json:"phone"`
	Region    string `gorm:"size:200;not null" json:"region"` // province, state or region
	City      string `gorm:"size:200;not null" json:"city"`
	Street    string `gorm:"size:800;not null" json:"street"` // street, number, building, flat
	Postcode  string `gorm:"size:64;not null" json:"postcode"`
}

// PhoneShown is the phone as a person reads it, in its country's international grouping ("+86 138 0013
// 8000"); a number stored before the rules (not E.164) as it was written.
func (d Delivery) PhoneShown() string {
	if !strings.HasPrefix(d.Phone, "+") {
		return d.Phone
	}
	n, err := phonenumbers.Parse(d.Phone, "")
	if err != nil || !phonenumbers.IsValidNumber(n) {
		return d.Phone
	}
	return phonenumbers.Format(n, phonenumbers.INTERNATIONAL)
}

// PhoneToEdit is the phone as its edit field shows it, the way a person types it: a number of region (the
// shop's PHONE_REGION, CN when "") in its national grouping ("138 0013 8000"), another country's in its
// international one. Either reads back as the same number; one that would not (or a number stored before the
// rules) is shown as PhoneShown does.
func (d Delivery) PhoneToEdit(region string) string {
	if region == "" {
		region = DefaultPhoneRegion
	}
	n, err := phonenumbers.Parse(d.Phone, "")
	if !strings.HasPrefix(d.Phone, "+") || err != nil || !phonenumbers.IsValidNumber(n) ||
		phonenumbers.GetRegionCodeForNumber(n) != strings.ToUpper(region) {
		return d.PhoneShown()
	}
	national := phonenumbers.Format(n, phonenumbers.NATIONAL)
	if back, bad := phoneE164(national, region); bad != nil || back != d.Phone {
		return d.PhoneShown()
	}
	return national
}

// maxAddresses is how many addresses one shopper's book holds.
const maxAddresses = 20

// The fields' limits, in characters.
const (
	maxRecipient = 50
	maxPlace     = 50
	maxStreet    = 200
)

var (
	phoneChars = regexp.MustCompile(`^\+?[0-9 ()./-]{3,24}$`)
	postcode   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 -]{1,10}[A-Za-z0-9]$`)
)

// maxPhoneBytes bounds what a phone field may hold before it is read: 24 characters, each of up to 4 bytes
// (full-width digits are 3), and spaces around them.
const maxPhoneBytes = 128

// DefaultPhoneRegion is the country of a phone number written without a country code when the caller
// names none (PHONE_REGION's default).
const DefaultPhoneRegion = "CN"

// phoneE164 answers a phone number in its one spelling, E.164 ("+8613800138000"), when it is a number
// by the rules of the country it names (region's, an ISO 3166 code, when it names none): the same library
// and the same reading as the one-entrant-per-address rule's (internal/addrkey), so that the book's
// numbers and the rule's agree. Else it answers why not, beside the field.
func phoneE164(phone, region string) (string, *errs.Why) {
	if region == "" {
		region = DefaultPhoneRegion
	}
	bad := func(key string, args ...any) (string, *errs.Why) {
		w := errs.W("phone", key, args...)
		return "", &w
	}
	if len(phone) > maxPhoneBytes {
		return bad("phone_number") // before the normalising: a number is a few dozen bytes
	}
	s := strings.TrimSpace(norm.NFKC.String(phone))
	if !phoneChars.MatchString(s) {
		return bad("phone_number")
	}
	n, err := phonenumbers.Parse(s, region)
	if err != nil {
		if errors.Is(err, phonenumbers.ErrInvalidCountryCode) {
			return bad("phone_country")
		}
		return bad("phone_number")
	}
	cc := "+" + strconv.Itoa(int(n.GetCountryCode()))
	switch phonenumbers.IsPossibleNumberWithReason(n) {
	case phonenumbers.INVALID_COUNTRY_CODE:
		return bad("phone_country")
	case phonenumbers.TOO_SHORT:
		return bad("phone_short", cc)
	case phonenumbers.TOO_LONG:
		return bad("phone_long", cc)
	}
	if !phonenumbers.IsValidNumber(n) {
		// The library's lengths allow a local number of a few digits; a person is told "too short" when
		// the number is shorter than every example of its country's mobiles and lines (11 and 10 digits
		// in China), "too long" when longer than all of them.
		short, long := exampleLengths(phonenumbers.GetRegionCodeForCountryCode(int(n.GetCountryCode())))
		switch l := len(phonenumbers.GetNationalSignificantNumber(n)); {
		case short > 0 && l < short:
			return bad("phone_short", cc)
		case long > 0 && l > long:
			return bad("phone_long", cc)
		}
		return bad("phone_invalid", cc)
	}
	return phonenumbers.Format(n, phonenumbers.E164), nil
}

// exampleLengths answers the shortest and the longest of a country's example mobile and fixed-line
// numbers, in digits of the national number (0, 0 when it has none).
func exampleLengths(region string) (short, long int) {
	for _, typ := range []phonenumbers.PhoneNumberType{phonenumbers.MOBILE, phonenumbers.FIXED_LINE} {
		ex := phonenumbers.GetExampleNumberForType(region, typ)
		if ex == nil {
			continue
		}
		l := len(phonenumbers.GetNationalSignificantNumber(ex))
		if short == 0 || l < short {
			short = l
		}
		long = max(long, l)
	}
	return short, long
}

// clean trims the fields and answers what is wrong with each, in the form's order (none when it is good);
// the phone becomes its E.164 spelling, a number without a country code read as region's.
func (d *Delivery) clean(region string) []errs.Why {
	var bad []errs.Why
	add := func(w *errs.Why) {
		if w != nil {
			bad = append(bad, *w)
		}
	}
	add(lineText("recipient", &d.Recipient, maxRecipient))
	if p, w := phoneE164(d.Phone, region); w != nil {
		d.Phone = strings.TrimSpace(d.Phone)
		add(w)
	} else {
		d.Phone = p
	}
	add(lineText("region", &d.Region, maxPlace))
	add(lineText("city", &d.City, maxPlace))
	add(lineText("street", &d.Street, maxStreet))
	d.Postcode = strings.TrimSpace(d.Postcode)
	if d.Postcode != "" && !postcode.MatchString(d.Postcode) {
		bad = append(bad, errs.W("postcode", "postcode"))
	}
	return bad
}

// lineText trims a one-line text field and answers what is wrong with it: empty (or only invisible
// characters), over most characters, or not on one line (a line break, a control character or a
// bidirectional override); nil when it is good.
func lineText(field string, v *string, most int) *errs.Why {
	*v = strings.TrimSpace(*v)
	var w errs.Why
	switch {
	case strings.TrimFunc(*v, invisible) == "":
		w = errs.W(field, "empty")
	case utf8.RuneCountInString(*v) > most:
		w = errs.W(field, "max_chars", most)
	case !utf8.ValidString(*v) || strings.IndexFunc(*v, notOnALine) >= 0:
		w = errs.W(field, "one_line")
	default:
		return nil
	}
	return &w
}

// invisible is a character that shows nothing: a space, or a format character (a zero-width space).
func invisible(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) }

// notOnALine is a character an address line must not hold: a control character, a line or paragraph
// separator, or a bidirectional override (which would show the text reversed on a shipping label).
func notOnALine(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp) || unicode.Is(unicode.Bidi_Control, r)
}

// AddressesOfUser lists a user's address book, oldest first.
func AddressesOfUser(ctx context.Context, db *gorm.DB, userID int64) ([]Address, error) {
	var out []Address
	if err := db.WithContext(ctx).Where("user_id = ?", userID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("addresses of user %d: %w", userID, err)
	}
	return out, nil
}

// AddressOfUser finds one of a user's addresses; another user's, or none, answers errs.NotFound.
func AddressOfUser(ctx context.Context, db *gorm.DB, userID, id int64) (*Address, error) {
	var a Address
	err := db.WithContext(ctx).Where("id = ? AND user_id = ?", id, userID).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such address")
	}
	if err != nil {
		return nil, fmt.Errorf("address %d: %w", id, err)
	}
	return &a, nil
}

// AddAddress adds d to the user's address book, at most MaxAddresses of them (409 conflict beyond); a
// phone number without a country code is read as phoneRegion's (an ISO 3166 code, "" for CN).
func AddAddress(ctx context.Context, db *gorm.DB, userID int64, phoneRegion string, d Delivery) (*Address, error) {
	if bad := d.clean(phoneRegion); len(bad) > 0 {
		return nil, errs.Bad(bad...)
	}
	a := Address{UserID: userID, Delivery: d}
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The user's row is locked so that two adds at once cannot both pass the count.
		var u User
		if err := tx.Clauses(lockForUpdate).Select("id").Where("id = ?", userID).Take(&u).Error; err != nil {
			return fmt.Errorf("user %d: %w", userID, err)
		}
		var n int64
		if err := tx.Model(&Address{}).Where("user_id = ?", userID).Count(&n).Error; err != nil {
			return err
		}
		if n >= maxAddresses {
			return errs.Newf(errs.Conflict, "an address book holds %d addresses: delete one first", maxAddresses)
		}
		return tx.Create(&a).Error
	})
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// UpdateAddress changes one of the user's addresses (its phone read as AddAddress reads it). Orders keep
// the copy they took.
func UpdateAddress(ctx context.Context, db *gorm.DB, userID, id int64, phoneRegion string, d Delivery) (*Address, error) {
	if bad := d.clean(phoneRegion); len(bad) > 0 {
		return nil, errs.Bad(bad...)
	}
	a, err := AddressOfUser(ctx, db, userID, id)
	if err != nil {
		return nil, err
	}
	a.Delivery = d
	res := db.WithContext(ctx).Model(a).Where("user_id = ?", userID).
		Select("recipient", "phone", "region", "city", "street", "postcode", "updated_at").Updates(a)
	if res.Error != nil {
		return nil, fmt.Errorf("address %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, errs.New(errs.NotFound, "no such address") // deleted meanwhile
	}
	return a, nil
}

// DeleteAddress removes one of the user's addresses. Orders keep the copy they took.
func DeleteAddress(ctx context.Context, db *gorm.DB, userID, id int64) error {
	res := db.WithContext(ctx).Where("id = ? AND user_id = ?", id, userID).Delete(&Address{})
	if res.Error != nil {
		return fmt.Errorf("address %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return errs.New(errs.NotFound, "no such address")
	}
	return nil
}

// SetOrderAddress gives an order a copy of a delivery address, only while it waits for payment: it
// answers false when it no longer does (the orders package's ChooseAddress checks who and when).
func SetOrderAddress(ctx context.Context, db *gorm.DB, orderID int64, d Delivery, now time.Time) (bool, error) {
	res := db.WithContext(ctx).Model(&Order{ID: orderID}).Where("status = ?", OrderPendingPayment).
		Select("address", "updated_at").Updates(&Order{Address: &d, UpdatedAt: now})
	if res.Error != nil {
		return false, fmt.Errorf("address of order %d: %w", orderID, res.Error)
	}
	return res.RowsAffected == 1, nil
}
