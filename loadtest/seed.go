package loadtest

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/bcrypt"
)

// SeedUsers makes n shoppers' accounts (prefix0 .. prefixN-1, password Password) in one
// statement, all with one password hash made here at bcrypt's lowest cost: a crowd's accounts exist
// before its sale, and registering a hundred thousand through the API (a captcha and a hash each) would
// take longer than the sale, and each would pay a proof of work the run does not measure. The load tool
// then logs each in through the API, as its owner would have. Each account was made at a random moment
// of the year before yesterday, as a crowd's are: none is a new account (a join's proof of work costs a
// new account twice) and they were made in no burst.
func SeedUsers(ctx context.Context, pool *pgxpool.Pool, prefix string, n int) ([]*User, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(Password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `INSERT INTO users (username, password_hash, role, created_at, updated_at)
		SELECT $1 || g, $2, 'shopper', m, m FROM (
			SELECT g, now() - interval '1 day' - random() * interval '364 days' AS m FROM generate_series(0, $3::int - 1) AS g) AS a
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

// SeedAccounts makes shoppers' accounts named prefix0.. (password Password), account i made at made[i],
// in one statement, as SeedUsers does: a scenario that asks how old its accounts are chooses when each
// was made.
func SeedAccounts(ctx context.Context, pool *pgxpool.Pool, prefix string, made []time.Time) ([]*User, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(Password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(made))
	for i := range made {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	rows, err := pool.Query(ctx, `INSERT INTO users (username, password_hash, role, created_at, updated_at)
		SELECT n, $2, 'shopper', m, m FROM unnest($1::text[], $3::timestamptz[]) AS a(n, m)
		RETURNING id, username`, names, string(hash), made)
	if err != nil {
		return nil, fmt.Errorf("seed %d accounts: %w", len(made), err)
	}
	defer rows.Close()
	byName := make(map[string]int64, len(made))
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		byName[name] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("seed %d accounts: %w", len(made), err)
	}
	users := make([]*User, len(made))
	for i, n := range names {
		id, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("account %s was not made", n)
		}
		users[i] = &User{ID: id, Name: n, Password: Password}
	}
	return users, nil
}

// Delivery is a delivery address, as an address book holds it.
type Delivery struct {
	Recipient, Phone, Region, City, Street, Postcode string
}

// SeedAddresses puts deliveries[i] in the address book of the account users[i] (made at made[i]), in one
// statement, and answers each entry's id.
func SeedAddresses(ctx context.Context, pool *pgxpool.Pool, users []int64, deliveries []Delivery, made []time.Time) ([]int64, error) {
	if len(users) != len(deliveries) || len(users) != len(made) {
		return nil, fmt.Errorf("%d accounts, %d addresses, %d times", len(users), len(deliveries), len(made))
	}
	cols := make([][]string, 6)
	for _, d := range deliveries {
		for j, v := range []string{d.Recipient, d.Phone, d.Region, d.City, d.Street, d.Postcode} {
			cols[j] = append(cols[j], v)
		}
	}
	rows, err := pool.Query(ctx, `INSERT INTO addresses (user_id, recipient, phone, region, city, street, postcode, created_at, updated_at)
		SELECT u, r, p, g, c, s, z, m, m FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::timestamptz[]) AS a(u, r, p, g, c, s, z, m)
		RETURNING id, user_id`, users, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], made)
	if err != nil {
		return nil, fmt.Errorf("seed %d addresses: %w", len(users), err)
	}
	defer rows.Close()
	byUser := make(map[int64]int64, len(users))
	for rows.Next() {
		var id, user int64
		if err := rows.Scan(&id, &user); err != nil {
			return nil, err
		}
		byUser[user] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("seed %d addresses: %w", len(users), err)
	}
	ids := make([]int64, len(users))
	for i, u := range users {
		if ids[i] = byUser[u]; ids[i] == 0 {
			return nil, fmt.Errorf("no address was made for account %d", u)
		}
	}
	return ids, nil
}

// SeedOwnAddresses puts a delivery address of its own (a place and a phone no one else gave) in each
// account's book, and answers each entry's id: a crowd's shoppers, each one person at one home.
func SeedOwnAddresses(ctx context.Context, pool *pgxpool.Pool, users []*User) ([]int64, error) {
	ids := make([]int64, len(users))
	deliveries := make([]Delivery, len(users))
	made := make([]time.Time, len(users))
	now := time.Now()
	for i, u := range users {
		ids[i], made[i] = u.ID, now
		deliveries[i] = Delivery{Recipient: "Shopper " + strconv.Itoa(i), Phone: fmt.Sprintf("+86 137%08d", i), Region: "Zhejiang",
			City: "Hangzhou", Street: fmt.Sprintf("No. %d, Crowd Road", i+1), Postcode: "310000"}
	}
	return SeedAddresses(ctx, pool, ids, deliveries, made)
}
