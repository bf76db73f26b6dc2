package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
)

// Token is a single-use secret mailed to a person (migration 00005): only its hash is kept, so that a
// copy of the database cannot verify an address or reset a password.
type Token struct {
	ID        int64     `gorm:"primaryKey"`
	UserID    int64     `gorm:"not null;index"`
	Purpose   string    `gorm:"size:16;not null"`
	Hash      string    `gorm:"size:64;not null;uniqueIndex"` // hex SHA-256 of the token
	Email     string    `gorm:"size:254;not null;default:''"` // the address a verify_email token verifies
	ExpiresAt time.Time `gorm:"not null"`
	UsedAt    *time.Time
	CreatedAt time.Time `gorm:"not null"`
}

// A token's purposes.
const (
	TokenVerifyEmail   = "verify_email"
	TokenPasswordReset = "reset"
)

var errBadToken = errs.New(errs.BadToken, "this link is unknown, used or expired: ask for a new one")

// CreateToken stores a token (its hash) in db, a transaction's when the token is mailed in it.
func CreateToken(ctx context.Context, db *gorm.DB, t *Token) error {
	if err := db.WithContext(ctx).Create(t).Error; err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	return nil
}

// PeekToken finds the live token of purpose with hash (not used, not expired) without using it;
// errs.BadToken otherwise.
func PeekToken(ctx context.Context, db *gorm.DB, purpose, hash string, now time.Time) (*Token, error) {
	var t Token
	err := db.WithContext(ctx).Where("hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?", hash, purpose, now).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errBadToken
	}
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	return &t, nil
}

// UseToken marks the live token of purpose with hash used and returns it, in one statement: of two
// requests with one token, one wins. errs.BadToken when it is unknown, used or expired.
func UseToken(ctx context.Context, db *gorm.DB, purpose, hash string, now time.Time) (*Token, error) {
	var out []Token
	err := db.WithContext(ctx).Raw(`UPDATE tokens SET used_at = ? WHERE hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ? RETURNING *`,
		now, hash, purpose, now).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("use token: %w", err)
	}
	if len(out) == 0 {
		return nil, errBadToken
	}
	return &out[0], nil
}

// EndTokens uses up every live token of a user for purpose (a new address makes older links moot; a
// reset ends the other reset links).
func EndTokens(ctx context.Context, db *gorm.DB, userID int64, purpose string, now time.Time) error {
	err := db.WithContext(ctx).Exec(`UPDATE tokens SET used_at = ? WHERE user_id = ? AND purpose = ? AND used_at IS NULL`, now, userID, purpose).Error
	if err != nil {
		return fmt.Errorf("end tokens: %w", err)
	}
	return nil
}

// SetEmail gives user id the address email (lowercased by the caller), not verified, and returns the
// user as it was before. An address a verified account holds answers errs.EmailTaken; one an unverified
// account holds is taken from it (nobody can keep an address from its owner by typing it first). The
// same address again changes nothing. Run it in a transaction.
func SetEmail(ctx context.Context, tx *gorm.DB, id int64, email string, now time.Time) (*User, error) {
	tx = tx.WithContext(ctx)
	before, err := UserByID(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if before.Email != nil && *before.Email == email {
		return before, nil
	}
	taken := errs.New(errs.EmailTaken, "another account has this e-mail address")
	var holder User
	err = tx.Select("id", "email_verified_at").Where("email = ? AND id <> ?", email, id).Take(&holder).Error
	switch {
	case err == nil && holder.EmailVerifiedAt != nil:
		return nil, taken
	case err == nil:
		if err := tx.Exec(`UPDATE users SET email = NULL, email_verified_at = NULL, updated_at = ? WHERE id = ? AND email_verified_at IS NULL`,
			now, holder.ID).Error; err != nil {
			return nil, fmt.Errorf("release e-mail: %w", err)
		}
	case !errors.Is(err, gorm.ErrRecordNotFound):
		return nil, fmt.Errorf("e-mail holder: %w", err)
	}
	err = tx.Exec(`UPDATE users SET email = ?, email_verified_at = NULL, updated_at = ? WHERE id = ?`, email, now, id).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return nil, taken
	}
	if err != nil {
		return nil, fmt.Errorf("set e-mail: %w", err)
	}
	return before, nil
}

// VerifyEmail marks user id's address verified, if it is still email; errs.BadToken otherwise (the
// address changed after the link was mailed).
func VerifyEmail(ctx context.Context, db *gorm.DB, id int64, email string, now time.Time) error {
	res := db.WithContext(ctx).Exec(`UPDATE users SET email_verified_at = ?, updated_at = ? WHERE id = ? AND email = ?`, now, now, id, email)
	if res.Error != nil {
		return fmt.Errorf("verify e-mail: %w", res.Error)
	}
	if res.RowsAffected > 0 {
		return nil
	}
	// A verified address being replaced stays the account's until the new one's link is used: now. An
	// account whose unverified address was taken by its owner meanwhile has no such change: its link is bad.
	u, err := UserByID(ctx, db, id)
	if err != nil {
		return err
	}
	if u.Email == nil || u.EmailVerifiedAt == nil {
		return errBadToken
	}
	if _, err := SetEmail(ctx, db, id, email, now); err != nil {
		if errs.Is(err, errs.EmailTaken) {
			return errBadToken // another account verified it meanwhile
		}
		return err
	}
	res = db.WithContext(ctx).Exec(`UPDATE users SET email_verified_at = ?, updated_at = ? WHERE id = ? AND email = ?`, now, now, id, email)
	if res.Error != nil {
		return fmt.Errorf("verify e-mail: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return errBadToken
	}
	return nil
}

// EmailFree answers errs.EmailTaken when another account holds email verified; nil when it is free (or
// held unverified, which verifying takes from its holder).
func EmailFree(ctx context.Context, db *gorm.DB, id int64, email string) error {
	var n int64
	if err := db.WithContext(ctx).Model(&User{}).Where("email = ? AND id <> ? AND email_verified_at IS NOT NULL", email, id).Count(&n).Error; err != nil {
		return fmt.Errorf("e-mail holder: %w", err)
	}
	if n > 0 {
		return errs.New(errs.EmailTaken, "another account has this e-mail address")
	}
	return nil
}

// UserByVerifiedEmail finds the account whose verified address is email (lowercased); errs.NotFound
// otherwise. A password reset goes to a verified address only: a mistyped one is a stranger's.
func UserByVerifiedEmail(ctx context.Context, db *gorm.DB, email string) (*User, error) {
	var u User
	err := db.WithContext(ctx).Where("email = ? AND email_verified_at IS NOT NULL", email).Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such user")
	}
	if err != nil {
		return nil, fmt.Errorf("user by e-mail: %w", err)
	}
	return &u, nil
}

// SetPasswordHash replaces user id's password hash.
func SetPasswordHash(ctx context.Context, db *gorm.DB, id int64, hash string, now time.Time) error {
	res := db.WithContext(ctx).Exec(`UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?`, hash, now, id)
	if res.Error != nil {
		return fmt.Errorf("set password: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return errs.New(errs.NotFound, "no such user")
	}
	return nil
}

// EmailOf answers user id's address ("" for none) and whether it is verified.
func EmailOf(ctx context.Context, db *gorm.DB, id int64) (string, bool, error) {
	var u User
	err := db.WithContext(ctx).Select("id", "email", "email_verified_at").Take(&u, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", false, errs.New(errs.NotFound, "no such user")
	}
	if err != nil {
		return "", false, fmt.Errorf("e-mail of user %d: %w", id, err)
	}
	if u.Email == nil {
		return "", false, nil
	}
	return *u.Email, u.EmailVerifiedAt != nil, nil
}
