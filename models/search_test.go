package models_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/models"
)

// bigShop is the size the admins' search is held to: 100,000 orders and 100,000 audit rows, over
// 20,000 buyers, 50 sales and 100 days.
const (
	bigOrders = 100_000
	bigAudit  = 100_000
	bigUsers  = 20_000
	bigSales  = 50
)

// bigEpoch is the first day of the big shop's orders and audit rows.
var bigEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seedBigShop fills db (PostgreSQL) with the big shop in a few statements, and analyzes it so that the
// planner knows its sizes. Buyers are named buyer_<n>; every 1,000th is named alice_<n> instead.
func seedBigShop(t testing.TB, db *gorm.DB) {
	t.Helper()
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO users (username, password_hash, role, created_at, updated_at)
			SELECT CASE WHEN g %% 1000 = 0 THEN 'alice_' ELSE 'buyer_' END || g, 'x', 'shopper', now(), now()
			FROM generate_series(1, %d) g`, bigUsers),
		fmt.Sprintf(`INSERT INTO orders (order_no, user_id, item_id, activity_id, price_cents, status, pay_deadline, created_at, updated_at)
			SELECT 'SK' || (1000000000 + g), 1 + (g * 7919) %% %d, 1 + g %% %d, 1 + g %% %d, 990,
				(ARRAY['paid','paid','paid','shipped','shipped','cancelled','refunded','pending_payment'])[1 + g %% 8],
				timestamptz '2026-01-01' + g * interval '86 seconds' + interval '15 minutes',
				timestamptz '2026-01-01' + g * interval '86 seconds', timestamptz '2026-01-01' + g * interval '86 seconds'
			FROM generate_series(1, %d) g`, bigUsers, bigSales, bigSales, bigOrders),
		fmt.Sprintf(`INSERT INTO audit_logs (actor_id, actor, action, target, before, after, created_at)
			SELECT 1 + g %% 40, 'staff_' || (1 + g %% 40),
				(ARRAY['order.ship','order.refund','refund.request','refund.done','activity.approve','activity.pause','user.block','activity.edit'])[1 + g %% 8],
				CASE WHEN g %% 8 < 4 THEN 'order:SK' || (1000000000 + g) WHEN g %% 8 = 6 THEN 'user:' || (1 + g %% %d) ELSE 'activity:' || (1 + g %% %d) END,
				'{"status":"paid"}', '{"status":"shipped"}', timestamptz '2026-01-01' + g * interval '86 seconds'
			FROM generate_series(1, %d) g`, bigUsers, bigSales, bigAudit),
		"VACUUM ANALYZE users", "VACUUM ANALYZE orders", "VACUUM ANALYZE audit_logs",
	} {
		if err := db.Exec(q).Error; err != nil {
			t.Fatalf("seeding the big shop: %v", err)
		}
	}
}

// sqlCatcher is a GORM logger that keeps every statement run through it, with its values in place.
type sqlCatcher struct {
	logger.Interface
	mu  sync.Mutex
	sql []string
}

func (c *sqlCatcher) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	s, _ := fc()
	c.mu.Lock()
	c.sql = append(c.sql, s)
	c.mu.Unlock()
}

func (c *sqlCatcher) LogMode(logger.LogLevel) logger.Interface { return c }

// orderSearches are every combination of the orders' filters: by number or by part of the buyer's name
// (or neither), status, sale and dates; and a late page.
func orderSearches() map[string]models.OrderSearch {
	out := map[string]models.OrderSearch{}
	for _, q := range []string{"", "number", "buyer"} {
		for mask := 0; mask < 8; mask++ {
			s, name := models.OrderSearch{Page: 1}, []string{}
			switch q {
			case "number":
				s.OrderNo, name = "SK1000050000", append(name, "number")
			case "buyer":
				s.Buyer, name = "alice_1", append(name, "buyer")
			}
			if mask&1 != 0 {
				s.Status, name = models.OrderShipped, append(name, "status")
			}
			if mask&2 != 0 {
				s.ActivityID, name = 7, append(name, "sale")
			}
			if mask&4 != 0 {
				s.From, s.To, name = bigEpoch.AddDate(0, 0, 30), bigEpoch.AddDate(0, 0, 40), append(name, "dates")
			}
			if len(name) == 0 {
				name = append(name, "everything")
			}
			out[strings.Join(name, "+")] = s
		}
	}
	out["everything, page 200"] = models.OrderSearch{Page: models.SearchMaxPage}
	out["status, page 200"] = models.OrderSearch{Status: models.OrderPaid, Page: models.SearchMaxPage}
	return out
}

// auditSearches are every combination of the audit log's filters: who, what, on what and when.
func auditSearches() map[string]models.AuditSearch {
	out := map[string]models.AuditSearch{}
	staff := int64(3)
	for mask := 0; mask < 16; mask++ {
		s, name := models.AuditSearch{Page: 1}, []string{}
		if mask&1 != 0 {
			s.ActorID, name = &staff, append(name, "who")
		}
		if mask&2 != 0 {
			s.Action, name = "activity.pause", append(name, "what")
		}
		if mask&4 != 0 {
			s.Target, name = "activity:7", append(name, "on")
		}
		if mask&8 != 0 {
			s.From, s.To, name = bigEpoch.AddDate(0, 0, 30), bigEpoch.AddDate(0, 0, 40), append(name, "when")
		}
		if len(name) == 0 {
			name = append(name, "everything")
		}
		out[strings.Join(name, "+")] = s
	}
	out["everything, page 200"] = models.AuditSearch{Page: models.SearchMaxPage}
	return out
}

// TestEveryFilterOfTheSearchesHasItsIndex: with 100,000 orders and 100,000 audit rows, every statement
// of every combination of the admins' filters (the page, its capped count, the buyers named) is served
// by an index: the plan PostgreSQL chooses reads no big table from start to end.
func TestEveryFilterOfTheSearchesHasItsIndex(t *testing.T) {
	testenv.Long(t)
	db := testenv.Postgres(t)
	seedBigShop(t, db)
	ctx := context.Background()
	explain := func(t *testing.T, run func(db *gorm.DB) error) {
		t.Helper()
		catch := &sqlCatcher{Interface: logger.Discard}
		if err := run(db.Session(&gorm.Session{Logger: catch})); err != nil {
			t.Fatal(err)
		}
		if len(catch.sql) == 0 {
			t.Fatal("the search ran no statement")
		}
		for _, q := range catch.sql {
			var plan []string
			if err := db.Raw("EXPLAIN " + q).Scan(&plan).Error; err != nil {
				t.Fatalf("EXPLAIN %s: %v", q, err)
			}
			all := strings.Join(plan, "\n")
			for _, big := range []string{"orders", "audit_logs", "users"} {
				if strings.Contains(all, "Seq Scan on "+big) {
					t.Errorf("%s\nreads %s from start to end:\n%s", q, big, all)
				}
			}
		}
	}
	for name, s := range orderSearches() {
		t.Run("orders "+name, func(t *testing.T) {
			explain(t, func(db *gorm.DB) error { _, err := models.SearchOrders(ctx, db, s); return err })
		})
	}
	for name, s := range auditSearches() {
		t.Run("audit "+name, func(t *testing.T) {
			explain(t, func(db *gorm.DB) error { _, err := models.SearchAudit(ctx, db, s); return err })
		})
	}

	// What the pages say of it: a total past 10,000 is said as "more", an exact one below.
	all, err := models.SearchOrders(ctx, db, models.OrderSearch{Page: 1})
	if err != nil || all.Total != models.SearchCap || !all.Capped || len(all.Rows) != models.SearchPerPage || all.Rows[0].OrderNo != "SK1000100000" {
		t.Errorf("every order: total %d capped %v, %d rows, first %v, %v", all.Total, all.Capped, len(all.Rows), all.Rows[0].OrderNo, err)
	}
	sale, err := models.SearchOrders(ctx, db, models.OrderSearch{ActivityID: 7, Status: models.OrderShipped, Page: 1})
	var want int64
	db.Model(&models.Order{}).Where("activity_id = 7 AND status = 'shipped'").Count(&want)
	if err != nil || sale.Total != want || sale.Capped || want == 0 {
		t.Errorf("a sale's shipped orders: total %d capped %v, want %d exactly, %v", sale.Total, sale.Capped, want, err)
	}
}

// TestSearchesFindWhatAPersonAsksFor, on both databases: part of a buyer's name in any case (with LIKE's
// own characters meaning themselves), an order's number, a status, a sale and a day, newest first; the
// audit log by who, what, on what and when; pages of 50.
func TestSearchesFindWhatAPersonAsksFor(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{"postgres": testenv.Postgres, "sqlite": testenv.SQLite} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			ctx := context.Background()
			users := testenv.Users(t, db, "shopper", 3)
			alice, err := models.CreateUser(ctx, db, "Alice_Wong", "x", models.RoleShopper)
			if err != nil {
				t.Fatal(err)
			}
			aliX, err := models.CreateUser(ctx, db, "alixwong", "x", models.RoleShopper)
			if err != nil {
				t.Fatal(err)
			}
			day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			order := func(no string, u int64, act int64, status string, at time.Time) {
				t.Helper()
				o := models.Order{OrderNo: no, UserID: u, ItemID: 1, ActivityID: act, PriceCents: 990, Status: status,
					PayDeadline: at.Add(time.Minute), CreatedAt: at, UpdatedAt: at}
				if err := db.Create(&o).Error; err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 60; i++ {
				order(fmt.Sprintf("SK9%05d", i), users[i%3].ID, 2, models.OrderPaid, day.Add(time.Duration(i)*time.Minute))
			}
			order("SK100", alice.ID, 1, models.OrderShipped, day.Add(-48*time.Hour))
			order("SK101", alice.ID, 2, models.OrderPaid, day.Add(-24*time.Hour))
			order("SK102", aliX.ID, 1, models.OrderShipped, day.Add(-24*time.Hour))

			nos := func(p *models.Paged[models.Order]) string {
				var out []string
				for _, o := range p.Rows {
					out = append(out, o.OrderNo)
				}
				return strings.Join(out, ",")
			}
			for _, c := range []struct {
				name string
				s    models.OrderSearch
				want string
			}{
				{"part of a name, another case", models.OrderSearch{Buyer: "ALICE", Page: 1}, "SK101,SK100"},
				{"the underscore is a letter", models.OrderSearch{Buyer: "e_w", Page: 1}, "SK101,SK100"},
				{"part of two names", models.OrderSearch{Buyer: "wong", Page: 1}, "SK102,SK101,SK100"},
				{"a name and a status", models.OrderSearch{Buyer: "wong", Status: models.OrderShipped, Page: 1}, "SK102,SK100"},
				{"a name and a sale", models.OrderSearch{Buyer: "wong", ActivityID: 1, Page: 1}, "SK102,SK100"},
				{"a name and a day", models.OrderSearch{Buyer: "wong", From: day.Add(-36 * time.Hour), To: day.Add(-12 * time.Hour), Page: 1}, "SK102,SK101"},
				{"a number", models.OrderSearch{OrderNo: "SK101", Page: 1}, "SK101"},
				{"no one", models.OrderSearch{Buyer: "nobody", Page: 1}, ""},
			} {
				p, err := models.SearchOrders(ctx, db, c.s)
				if err != nil || nos(p) != c.want {
					t.Errorf("%s: %s, %v; want %s", c.name, nos(p), err, c.want)
				}
			}
			p1, err := models.SearchOrders(ctx, db, models.OrderSearch{Page: 1})
			p2, err2 := models.SearchOrders(ctx, db, models.OrderSearch{Page: 2})
			if err != nil || err2 != nil || len(p1.Rows) != 50 || len(p2.Rows) != 13 || p1.Total != 63 || p2.Total != 63 || p1.Capped ||
				p1.Rows[0].OrderNo != "SK900059" || p2.Rows[12].OrderNo != "SK100" {
				t.Errorf("pages: %d and %d rows of %d (%v, %v)", len(p1.Rows), len(p2.Rows), p1.Total, err, err2)
			}

			// Too many buyers match: the admin is asked for more of the name.
			for i := 0; i < models.BuyersMost+1; i++ {
				db.Exec("INSERT INTO users (username, password_hash, role, created_at, updated_at) VALUES (?, 'x', 'shopper', ?, ?)",
					fmt.Sprintf("many_%d", i), day, day)
			}
			if _, err := models.SearchOrders(ctx, db, models.OrderSearch{Buyer: "many", Page: 1}); errs.Code(err) != errs.BadRequest {
				t.Errorf("a part of 1,001 names: %v, want bad_request", err)
			}

			// The audit log.
			admin := models.Actor{ID: alice.ID, Username: alice.Username}
			for i, a := range []struct{ action, target string }{
				{"activity.approve", "activity:1"}, {"activity.pause", "activity:1"}, {"order.refund", "order:SK100"}, {"user.block", "user:3"},
			} {
				if err := models.Audit(db, admin, a.action, a.target, nil, map[string]string{"status": "x"}, day.Add(time.Duration(i)*time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			if err := models.Audit(db, models.System, "refund.done", "order:SK100", nil, nil, day.Add(10*time.Hour)); err != nil {
				t.Fatal(err)
			}
			acts := func(s models.AuditSearch) string {
				s.Page = 1
				p, err := models.SearchAudit(ctx, db, s)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, r := range p.Rows {
					out = append(out, r.Action)
				}
				return strings.Join(out, ",")
			}
			system := int64(0)
			for _, c := range []struct {
				name string
				s    models.AuditSearch
				want string
			}{
				{"everything, newest first", models.AuditSearch{}, "refund.done,user.block,order.refund,activity.pause,activity.approve"},
				{"who", models.AuditSearch{ActorID: &alice.ID}, "user.block,order.refund,activity.pause,activity.approve"},
				{"the shop itself", models.AuditSearch{ActorID: &system}, "refund.done"},
				{"what", models.AuditSearch{Action: "activity.pause"}, "activity.pause"},
				{"on what", models.AuditSearch{Target: "order:SK100"}, "refund.done,order.refund"},
				{"when", models.AuditSearch{From: day.Add(time.Hour), To: day.Add(3 * time.Hour)}, "order.refund,activity.pause"},
				{"who and on what", models.AuditSearch{ActorID: &alice.ID, Target: "activity:1"}, "activity.pause,activity.approve"},
			} {
				if got := acts(c.s); got != c.want {
					t.Errorf("audit %s: %s, want %s", c.name, got, c.want)
				}
			}
		})
	}
}

// BenchmarkSearchPages gives each page of the admins' search its median time with 100,000 orders and
// 100,000 audit rows (every combination of filters, as TestEveryFilterOfTheSearchesHasItsIndex): one
// sub-benchmark a page, its median in ms/median beside Go's mean.
//
//	go test -run '^$' -bench BenchmarkSearchPages -benchtime 20x ./models
func BenchmarkSearchPages(b *testing.B) {
	db := testenv.Postgres(b)
	seedBigShop(b, db)
	ctx := context.Background()
	median := func(b *testing.B, run func() error) {
		took := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if err := run(); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(start))
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms/median")
	}
	names := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	orders, audit := orderSearches(), auditSearches()
	on, an := map[string]bool{}, map[string]bool{}
	for k := range orders {
		on[k] = true
	}
	for k := range audit {
		an[k] = true
	}
	for _, name := range names(on) {
		s := orders[name]
		b.Run("orders/"+strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			median(b, func() error { _, err := models.SearchOrders(ctx, db, s); return err })
		})
	}
	for _, name := range names(an) {
		s := audit[name]
		b.Run("audit/"+strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			median(b, func() error { _, err := models.SearchAudit(ctx, db, s); return err })
		})
	}
}
