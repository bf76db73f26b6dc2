package loadtest

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/bcrypt"
)

// SeedUsers makes n shoppers' accounts (prefix0 .. prefixN-1, password Password) in one
// statement, all with one password hash made here at bcrypt's lowest cost: a crowd's accounts exist
// before its sale, and registering a hundred thousand through the API (a captcha and a hash each) would
// take longer than the sale, and each would pay a proof of work the run does not measure. The load tool
// then logs each in through the API, as its owner would have.
func SeedUsers(ctx context.Context, pool *pgxpool.Pool, prefix string, n int) ([]*User, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(Password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `INSERT INTO users (username, password_hash, role, created_at, updated_at)
		SELECT $1 || g, $2, 'shopper', now(), now() FROM generate_series(0, $3::int - 1) AS g
		RETURNING id, username`, prefix, string(hash), n)
	if err != nil {
		return nil, fmt.Errorf("seed %d accounts: %w", n, err)
	}
	defer rows.Close()
	users := make([]*User, n)
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		var i int
		if _, err := fmt.Sscanf(name[len(prefix):], "%d", &i); err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("seeded an account named %q", name)
		}
		users[i] = &User{ID: id, Name: name, Password: Password}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("seed %d accounts: %w", n, err)
	}
	for i, u := range users {
		if u == nil {
			return nil, fmt.Errorf("account %s%d was not made", prefix, i)
		}
	}
	return users, nil
}
