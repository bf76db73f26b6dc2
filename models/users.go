package models

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"seckill/errs"
)

// CreateUser inserts a user whose password is already hashed. A taken name answers errs.UsernameTaken.
func CreateUser(ctx context.Context, db *gorm.DB, username, passwordHash, role string) (*User, error) {
	if !ValidRole(role) {
		return nil, errs.Invalid("role", "must be shopper, merchant or admin")
	}
	u := &User{Username: username, PasswordHash: passwordHash, Role: role, SessionVersion: 1}
	err := db.WithContext(ctx).Create(u).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return nil, errs.Newf(errs.UsernameTaken, "the username %q is taken", username)
	}
	if err != nil {
		return nil, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// UserByUsername finds a user by name; a missing one answers errs.NotFound.
func UserByUsername(ctx context.Context, db *gorm.DB, username string) (*User, error) {
	var u User
	err := db.WithContext(ctx).Where("username = ?", username).Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such user")
	}
	if err != nil {
		return nil, fmt.Errorf("user by name: %w", err)
	}
	return &u, nil
}
