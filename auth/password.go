// Package auth holds accounts' rules: what a valid username and password are, how passwords are hashed,
// and (with the accounts issue) sessions and QR login.
package auth

import (
	"fmt"
	"regexp"

	"golang.org/x/crypto/bcrypt"

	"seckill/errs"
)

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9_]{3,32}$`)

// ValidateCredentials checks a new account's username and password against the contract's rules.
func ValidateCredentials(username, password string) error {
	if !usernameRE.MatchString(username) {
		return errs.Invalid("username", "must be 3 to 32 letters, digits or underscores")
	}
	// bcrypt reads at most 72 bytes: a longer password would be silently cut, so it is refused.
	if len(password) < 8 || len(password) > 72 {
		return errs.Invalid("password", "must be 8 to 72 bytes long")
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
