package app

import (
	"strconv"
	"strings"
	"testing"

	"gorm.io/gorm"

	"seckill/models"
)

// dbCounts reads the server's database counters from /metrics: statements by "table/kind", their sum
// under "", and the transactions under "transactions".
func dbCounts(t *testing.T, srv *Server) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, line := range strings.Split(scrape(t, srv), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch {
		case name == "seckill_db_transactions_total":
			out["transactions"] = v
		case strings.HasPrefix(name, "seckill_db_statements_total{"):
			// seckill_db_statements_total{kind="read",table="users"}
			labels := map[string]string{}
			for _, kv := range strings.Split(strings.Trim(strings.TrimPrefix(name, "seckill_db_statements_total"), "{}"), ",") {
				k, v, _ := strings.Cut(kv, "=")
				labels[k] = strings.Trim(v, `"`)
			}
			out[labels["table"]+"/"+labels["kind"]] = v
			out[""] += v
		}
	}
	return out
}

// dbDelta is what changed between two readings of dbCounts, without the zeros.
func dbDelta(before, after map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range after {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// Every statement the server sends is counted by its main table (the SQL's, not a scan destination's
// name) and kind, and every transaction once; the caller's own database handle is not counted.
func TestDBStatementsAreCounted(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	db := s.Srv.Orders.DB // the server's handle
	ctx := t.Context()

	before := dbCounts(t, s.Srv)
	if err := db.WithContext(ctx).Exec("UPDATE orders SET status = status WHERE id = ?", -1).Error; err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := db.WithContext(ctx).Model(&models.Order{}).Where("user_id = ?", -1).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	type row struct{ Status string }
	var rows []row
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Raw("SELECT status FROM orders WHERE id = ?", -1).Scan(&rows).Error; err != nil {
			return err
		}
		return tx.Create(&models.User{Username: "counted_user", PasswordHash: "x", Role: models.RoleShopper, SessionVersion: 1}).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.WithContext(ctx).Create(&models.User{Username: "counted_two", PasswordHash: "x", Role: models.RoleShopper, SessionVersion: 1}).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.WithContext(ctx).Exec("SELECT pg_advisory_xact_lock(?)", 12345).Error; err != nil {
		t.Fatal(err)
	}
	// The test's own handle: not the server's statements.
	if err := s.DB.Exec("UPDATE orders SET status = status WHERE id = ?", -1).Error; err != nil {
		t.Fatal(err)
	}

	got := dbDelta(before, dbCounts(t, s.Srv))
	want := map[string]float64{
		"orders/write": 1, "orders/read": 2, "users/write": 2, "other/read": 1, "": 6,
		// The UPDATE, the count, the block, the create in GORM's own transaction, the lock.
		"transactions": 5,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%q counted %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if got["rows/read"] != 0 {
		t.Errorf("a raw statement was counted under its scan destination's name: %v", got)
	}
}
