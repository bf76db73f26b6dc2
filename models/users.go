package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"seckill/errs"
)

// CreateUser inserts a user whose password is already hashed. A name taken in any case (ADA beside ada)
// answers errs.UsernameTaken: the check and the insert run in one transaction under a lock of the name,
// so that the rule holds even where the unique index on lower(username) is left out (Migrate says why).
func CreateUser(ctx context.Context, db *gorm.DB, username, passwordHash, role string) (*User, error) {
	if !ValidRole(role) {
		return nil, errs.Bad(errs.W("role", "role"))
	}
	u := &User{Username: username, PasswordHash: passwordHash, Role: role, SessionVersion: 1}
	taken := errs.Newf(errs.UsernameTaken, "the username %q is taken", username)
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if tx.Dialector.Name() == "postgres" {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?, hashtext(?))", userNameLockSpace, strings.ToLower(username)).Error; err != nil {
				return err
			}
		}
		var same int64
		if err := tx.Model(&User{}).Where("lower(username) = ?", strings.ToLower(username)).Count(&same).Error; err != nil {
			return err
		}
		if same > 0 {
			return taken
		}
		// The e-mail columns (00005) are left out: a new account has none, and a database not yet
		// migrated to them can still make accounts.
		return tx.Omit("Email", "EmailVerifiedAt").Create(u).Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return nil, taken
	}
	if err != nil {
		if errs.Is(err, errs.UsernameTaken) {
			return nil, err
		}
		return nil, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// userNameLockSpace is the first key of the advisory locks that make a new name's check and insert one
// step, apart from the migration's and the uploads'.
const userNameLockSpace = 0x05e4

// UserByUsername finds a user by name in any case; a missing one answers errs.NotFound. Names are unique
// ignoring case, but for accounts made before that rule whose names differ only by case (Migrate lists
// them): each of those is found by its own spelling first.
func UserByUsername(ctx context.Context, db *gorm.DB, username string) (*User, error) {
	var u User
	err := db.WithContext(ctx).Where("lower(username) = ?", strings.ToLower(username)).
		Order(clause.OrderBy{Expression: clause.Expr{SQL: "CASE WHEN username = ? THEN 0 ELSE 1 END, id", Vars: []any{username}}}).
		Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such user")
	}
	if err != nil {
		return nil, fmt.Errorf("user by name: %w", err)
	}
	return &u, nil
}

// UsernameClashes lists the accounts whose names are the same but for case (made before names were
// unique ignoring case), by name and id: an operator resolves them (renames or merges them by hand);
// until then the unique index on lower(username) is left out.
func UsernameClashes(ctx context.Context, db *gorm.DB) ([]User, error) {
	var users []User
	err := db.WithContext(ctx).Select("id", "username", "role", "created_at").
		Where("lower(username) IN (?)", db.Model(&User{}).Select("lower(username)").Group("lower(username)").Having("count(*) > 1")).
		Order("lower(username), id").Find(&users).Error
	if err != nil {
		return nil, fmt.Errorf("usernames that differ only by case: %w", err)
	}
	return users, nil
}

// UserByID finds a user by id; a missing one answers errs.NotFound.
func UserByID(ctx context.Context, db *gorm.DB, id int64) (*User, error) {
	var u User
	err := db.WithContext(ctx).Take(&u, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such user")
	}
	if err != nil {
		return nil, fmt.Errorf("user %d: %w", id, err)
	}
	return &u, nil
}

// BumpSessionVersion ends every session of a user: cookies carry the version they were issued with.
func BumpSessionVersion(ctx context.Context, db *gorm.DB, id int64, now time.Time) (*User, error) {
	res := db.WithContext(ctx).Exec(
		"UPDATE users SET session_version = session_version + 1, auth_changed_at = ?, updated_at = ? WHERE id = ?",
		now, now, id)
	if res.Error != nil {
		return nil, fmt.Errorf("end sessions of user %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, errs.New(errs.NotFound, "no such user")
	}
	return UserByID(ctx, db, id)
}

// errLastAdmin refuses the change that would leave the shop with no active admin: nobody could then
// review a sale, end one, or make another admin but from the command line.
var errLastAdmin = errs.New(errs.LastAdmin, "the shop would be left without an active admin: make another admin first")

// keepAnAdmin refuses, with errs.LastAdmin, a change that takes user id out of the active admins (its
// role taken away, or blocked) when it is the last of them. Run first in the change's transaction: on
// PostgreSQL it locks every active admin's row, in id order, until the transaction ends, so that two
// admins demoting each other at once are done one after the other, and the second sees the first's
// change (a locked row is read again once its lock is released, and one no longer an active admin
// drops out); SQLite runs one writing transaction at a time.
func keepAnAdmin(tx *gorm.DB, id int64) error {
	q := "SELECT id FROM users WHERE role = ? AND blocked_at IS NULL ORDER BY id"
	if tx.Dialector.Name() == "postgres" {
		q += " FOR UPDATE"
	}
	var admins []int64
	if err := tx.Raw(q, RoleAdmin).Scan(&admins).Error; err != nil {
		return fmt.Errorf("active admins: %w", err)
	}
	if len(admins) == 1 && admins[0] == id {
		return errLastAdmin
	}
	return nil
}

// SetRole changes a user's role, and audits it as who's action. The last active admin keeps its role.
func SetRole(ctx context.Context, db *gorm.DB, who Actor, id int64, role string, now time.Time) (*User, error) {
	if !ValidRole(role) {
		return nil, errs.Bad(errs.W("role", "role"))
	}
	var u *User
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if role != RoleAdmin {
			if err := keepAnAdmin(tx, id); err != nil {
				return err
			}
		}
		before, err := UserByID(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := tx.Exec("UPDATE users SET role = ?, auth_changed_at = ?, updated_at = ? WHERE id = ?", role, now, now, id).Error; err != nil {
			return fmt.Errorf("set role of user %d: %w", id, err)
		}
		if u, err = UserByID(ctx, tx, id); err != nil {
			return err
		}
		return Audit(tx, who, "user.role", fmt.Sprintf("user:%d", id),
			map[string]string{"username": before.Username, "role": before.Role}, map[string]string{"username": u.Username, "role": u.Role}, now)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// UsersAuthChangedSince lists the users whose session version or role changed after since.
func UsersAuthChangedSince(ctx context.Context, db *gorm.DB, since time.Time) ([]User, error) {
	var users []User
	err := db.WithContext(ctx).
		Select("id", "session_version", "role", "auth_changed_at").
		Where("auth_changed_at > ?", since).
		Find(&users).Error
	if err != nil {
		return nil, fmt.Errorf("users changed since %v: %w", since, err)
	}
	return users, nil
}

// Usernames maps user ids to names.
func Usernames(ctx context.Context, db *gorm.DB, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var users []User
	if err := db.WithContext(ctx).Select("id", "username").Where("id IN ?", ids).Find(&users).Error; err != nil {
		return nil, fmt.Errorf("usernames: %w", err)
	}
	for _, u := range users {
		out[u.ID] = u.Username
	}
	return out, nil
}

// NewestUserMadeBy answers the id of the newest account made at t or before (0 when none): accounts are
// numbered in the order they are made, so every account with a greater id was made after t.
func NewestUserMadeBy(ctx context.Context, db *gorm.DB, t time.Time) (int64, error) {
	var id int64
	if err := db.WithContext(ctx).Raw(`SELECT COALESCE(MAX(id), 0) FROM users WHERE created_at <= ?`, t).Scan(&id).Error; err != nil {
		return 0, fmt.Errorf("the newest account made by %s: %w", t.Format(time.RFC3339), err)
	}
	return id, nil
}

// madeChunk bounds the ids one query of UsersMadeAt asks for (PostgreSQL takes at most 65,535 parameters).
const madeChunk = 10_000

// UsersMadeAt maps user ids to when their accounts were made: the shadow line reads it for every entrant
// of a draw, a chunk of ids a query.
func UsersMadeAt(ctx context.Context, db *gorm.DB, ids []int64) (map[int64]time.Time, error) {
	out := make(map[int64]time.Time, len(ids))
	for i := 0; i < len(ids); i += madeChunk {
		var users []User
		if err := db.WithContext(ctx).Select("id", "created_at").Where("id IN ?", ids[i:min(i+madeChunk, len(ids))]).Find(&users).Error; err != nil {
			return nil, fmt.Errorf("when accounts were made: %w", err)
		}
		for _, u := range users {
			out[u.ID] = u.CreatedAt
		}
	}
	return out, nil
}

// SetBlocked blocks an account (its sessions end, it cannot log in; its orders stay) or unblocks it, as
// who's action with a reason, audited. An admin cannot block itself, nor anyone the last active admin.
func SetBlocked(ctx context.Context, db *gorm.DB, who Actor, id int64, blocked bool, reason string, now time.Time) (*User, error) {
	reason, err := checkReason(reason, blocked)
	if err != nil {
		return nil, err
	}
	if blocked && who.ID == id {
		return nil, errs.Say(errs.Conflict, "block_yourself")
	}
	var u *User
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if blocked {
			if err := keepAnAdmin(tx, id); err != nil {
				return err
			}
		}
		before, err := UserByID(ctx, tx, id)
		if err != nil {
			return err
		}
		if (before.BlockedAt != nil) == blocked {
			if blocked {
				return errs.Say(errs.Conflict, "blocked_already")
			}
			return errs.Say(errs.Conflict, "not_blocked")
		}
		change := map[string]any{"block_reason": "", "auth_changed_at": now, "updated_at": now}
		action := "user.unblock"
		if blocked {
			change["block_reason"] = reason
			action = "user.block"
			change["blocked_at"] = now
			change["session_version"] = gorm.Expr("session_version + 1") // every session ends, everywhere
		} else {
			change["blocked_at"] = nil
		}
		if err := tx.Model(&User{}).Where("id = ?", id).Updates(change).Error; err != nil {
			return fmt.Errorf("block user %d: %w", id, err)
		}
		if u, err = UserByID(ctx, tx, id); err != nil {
			return err
		}
		return Audit(tx, who, action, fmt.Sprintf("user:%d", id),
			map[string]any{"username": before.Username, "blocked": before.BlockedAt != nil},
			map[string]any{"username": u.Username, "blocked": u.BlockedAt != nil, "reason": reason}, now)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// SearchUsers finds users whose name holds q (any case; all when q is empty), by id, a page of limit
// from offset, with how many match.
func SearchUsers(ctx context.Context, db *gorm.DB, q string, limit, offset int) ([]User, int64, error) {
	query := db.WithContext(ctx).Model(&User{})
	if q = strings.TrimSpace(q); q != "" {
		pattern := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(strings.ToLower(q)) + "%"
		query = query.Where(`LOWER(username) LIKE ? ESCAPE '\'`, pattern)
	}
	var total int64
	if err := query.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("search users: %w", err)
	}
	var users []User
	if err := query.Order("id").Limit(limit).Offset(offset).Find(&users).Error; err != nil {
		return nil, 0, fmt.Errorf("search users: %w", err)
	}
	return users, total, nil
}
