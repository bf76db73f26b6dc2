// Package auth holds accounts' rules: what a valid username and password are, how passwords are hashed,
// and (with the accounts issue) sessions and QR login.
package auth

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/trustelem/zxcvbn"
	"golang.org/x/crypto/bcrypt"

	"seckill/errs"
	"seckill/internal/gate"
)

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9_]{3,32}$`)

// ValidUsername reports whether name can be a username at all: a name that cannot is never looked up.
func ValidUsername(name string) bool { return usernameRE.MatchString(name) }

// ValidateCredentials checks a new account's username and password against the contract's rules.
func ValidateCredentials(username, password string) error {
	var why []errs.Why
	if !usernameRE.MatchString(username) {
		why = append(why, errs.W("username", "username_format"))
	}
	why = append(why, ValidatePassword("password", username, password)...)
	if len(why) > 0 {
		return errs.Bad(why...)
	}
	return nil
}

// minGuesses is how many guesses zxcvbn must estimate a password takes, at least, for it to be taken:
// a million, its score 2 ("protection from unthrottled online attacks"). Below that are the most used
// passwords and their near variants (P@ssw0rd, password1), repeats (aaaaaaaa), runs (12345678), rows
// of the keyboard (qwertyui, 1q2w3e4r), dates, and common words and names with a digit or two.
const minGuesses = 1e6

// siteWords are guessed first by anyone attacking this shop's accounts, as zxcvbn's user inputs are.
var siteWords = []string{"seckill", "flash", "sale", "shop"}

// ValidatePassword says what is wrong, if anything, with a password being set for the account username,
// wherever one is set (registration, seckill user create, and a password change or reset when they
// come): field is the form's field ("password", "new_password"). A password must be 8 to 72 bytes
// (bcrypt reads 72: a longer one would be silently cut), must not hold the username in any case, and
// must not be common: zxcvbn (dropbox's estimator, ported to Go by trustelem) ranks it against 30,000
// leaked passwords, English words, names and surnames, with l33t spellings, repeats, sequences, keyboard
// rows and dates, and the username and the shop's own words. It can take a tenth of a core-second for a
// long password of look-alike characters: a request from anyone runs it through Passwords.Vet.
func ValidatePassword(field, username, password string) []errs.Why {
	if len(password) < 8 || len(password) > 72 {
		return []errs.Why{errs.W(field, "password_length")}
	}
	if username != "" && strings.Contains(strings.ToLower(password), strings.ToLower(username)) {
		return []errs.Why{errs.W(field, "password_username")}
	}
	inputs := append([]string{username}, siteWords...)
	if zxcvbn.PasswordStrength(password, inputs).Guesses < minGuesses {
		return []errs.Why{errs.W(field, "password_common")}
	}
	return nil
}

// HashPassword hashes a password with bcrypt at the given cost.
func HashPassword(password string, cost int) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// CheckPassword reports whether password matches hash.
func CheckPassword(hash, password string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// Passwords hashes and checks passwords at a cost, a few at a time: bcrypt is meant to be slow (about a
// quarter of a core-second at cost 12), and logins or registrations from anyone must not take the cores
// the buy endpoint needs. A caller that waits too long for a turn is told to come back (429).
type Passwords struct {
	cost      int
	gate      *gate.Gate
	vet       *gate.Gate // turns of their own for judging new passwords (Vet), as many as the hashing's
	dummyHash string     // checked against when a username is unknown, so that a miss takes as long as a hit
}

// NewPasswords returns a hasher at cost that hashes in the turns of costly.
func NewPasswords(cost int, costly *gate.Gate) (*Passwords, error) {
	dummy, err := HashPassword("not a real password", cost)
	if err != nil {
		return nil, err
	}
	// Judging a new password has turns apart from hashing: a flood of logins holding every hashing turn
	// must not stop a registration from being told its name is taken (which comes after the fields).
	return &Passwords{cost: cost, gate: costly, vet: gate.New(costly.Turns(), time.Second), dummyHash: dummy}, nil
}

// Vet is ValidatePassword in a bounded turn (as many at once as hashes, apart from them; 429 after a
// second without one), for a password anyone can send (a registration): a password whose length is
// wrong is refused without one.
func (p *Passwords) Vet(ctx context.Context, field, username, password string) (why []errs.Why, err error) {
	if len(password) < 8 || len(password) > 72 {
		return ValidatePassword(field, username, password), nil
	}
	if err := p.vet.Do(ctx, func() { why = ValidatePassword(field, username, password) }); err != nil {
		return nil, err
	}
	return why, nil
}

// Hash hashes a new password in a turn.
func (p *Passwords) Hash(ctx context.Context, password string) (hash string, err error) {
	if gerr := p.gate.Do(ctx, func() { hash, err = HashPassword(password, p.cost) }); gerr != nil {
		return "", gerr
	}
	return hash, err
}

// Check reports, in a turn, whether password matches hash; an empty hash (no such user) is checked
// against a dummy, as slowly, and never matches. first runs in the turn before the check (the attempt's
// count, say): an attempt that got no turn is not counted, and one that first refuses is not checked.
func (p *Passwords) Check(ctx context.Context, hash, password string, first func() error) (ok bool, err error) {
	var firstErr error
	err = p.gate.Do(ctx, func() {
		if firstErr = first(); firstErr != nil {
			return
		}
		if hash == "" {
			CheckPassword(p.dummyHash, password)
			return
		}
		ok = CheckPassword(hash, password)
	})
	if err == nil {
		err = firstErr
	}
	return ok, err
}
