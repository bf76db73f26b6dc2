package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
)

// The admins' search of orders and of the audit log: filters that each lead an index (migration 00008),
// newest first, a page at a time read by the database (LIMIT and OFFSET), and totals counted up to
// SearchCap: past it a page says "more than 10,000" rather than count a whole table on every search.
const (
	SearchCap     = 10000
	SearchPerPage = 50
	// SearchMaxPage is the last page a search shows: offsets stay below SearchCap.
	SearchMaxPage = SearchCap / SearchPerPage
	// BuyersMost is how many buyers a part of a name may match; more, and the admin types more of it.
	BuyersMost = 1000
	// BuyerPartLeast is the shortest part of a name searched for: a trigram index needs three letters.
	BuyerPartLeast = 3
)

// Paged is one page of a search: its rows, the total (at most SearchCap; Capped when there are more),
// the page and its size.
type Paged[T any] struct {
	Rows    []T
	Total   int64
	Capped  bool
	Page    int
	PerPage int
}

// OrderSearch is what an admin looks for among orders; zero fields are not filters.
type OrderSearch struct {
	OrderNo    string // exactly this order
	Buyer      string // part of the buyer's name, any case
	Status     string
	ActivityID int64
	From, To   time.Time // created at or after From, before To
	Page       int       // from 1
}

// likePattern is part as a LIKE pattern that finds it anywhere, with LIKE's own characters escaped by !.
func likePattern(part string) string {
	return "%" + strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(part) + "%"
}

// BuyersNamed answers the ids of the users whose name contains part (any case), at most BuyersMost; more
// answers bad_request on q. PostgreSQL finds them through the trigram index; the demo's SQLite reads them.
func BuyersNamed(ctx context.Context, db *gorm.DB, part string) ([]int64, error) {
	op := "ILIKE"
	if db.Dialector.Name() != "postgres" {
		op = "LIKE" // SQLite's LIKE ignores the case of ASCII, which is every username's alphabet
	}
	var ids []int64
	if err := db.WithContext(ctx).Model(&User{}).Where("username "+op+" ? ESCAPE '!'", likePattern(part)).
		Order("id").Limit(BuyersMost+1).Pluck("id", &ids).Error; err != nil {
		return nil, fmt.Errorf("buyers named %q: %w", part, err)
	}
	if len(ids) > BuyersMost {
		return nil, errs.Bad(errs.W("q", "too_many_buyers"))
	}
	return ids, nil
}

// SearchOrders answers a page of the orders s finds, newest first.
func SearchOrders(ctx context.Context, db *gorm.DB, s OrderSearch) (*Paged[Order], error) {
	q := db.WithContext(ctx).Model(&Order{})
	if s.OrderNo != "" {
		q = q.Where("order_no = ?", s.OrderNo)
	}
	if s.Buyer != "" {
		ids, err := BuyersNamed(ctx, db, s.Buyer)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return &Paged[Order]{Rows: []Order{}, Page: s.Page, PerPage: SearchPerPage}, nil
		}
		q = q.Where("user_id IN ?", ids)
	}
	if s.Status != "" {
		q = q.Where("status = ?", s.Status)
	}
	if s.ActivityID != 0 {
		q = q.Where("activity_id = ?", s.ActivityID)
	}
	q = during(q, s.From, s.To)
	var rows []Order
	if err := q.Session(&gorm.Session{}).Order("created_at DESC, id DESC").Limit(SearchPerPage).Offset((s.Page - 1) * SearchPerPage).
		Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("search orders: %w", err)
	}
	total, capped, err := cappedCount(db.WithContext(ctx), q)
	if err != nil {
		return nil, fmt.Errorf("count orders: %w", err)
	}
	return &Paged[Order]{Rows: rows, Total: total, Capped: capped, Page: s.Page, PerPage: SearchPerPage}, nil
}

// AuditSearch is what an admin looks for in the audit log; zero fields are not filters.
type AuditSearch struct {
	ActorID  *int64 // who (0 is the shop itself)
	Action   string
	Target   string // on what: "order:SK…", "activity:2", "user:5", "item:3", "appeal:4"
	From, To time.Time
	Page     int
}

// SearchAudit answers a page of the audit rows s finds, newest first.
func SearchAudit(ctx context.Context, db *gorm.DB, s AuditSearch) (*Paged[AuditLog], error) {
	q := db.WithContext(ctx).Model(&AuditLog{})
	if s.ActorID != nil {
		q = q.Where("actor_id = ?", *s.ActorID)
	}
	if s.Action != "" {
		q = q.Where("action = ?", s.Action)
	}
	if s.Target != "" {
		q = q.Where("target = ?", s.Target)
	}
	q = during(q, s.From, s.To)
	var rows []AuditLog
	if err := q.Session(&gorm.Session{}).Order("created_at DESC, id DESC").Limit(SearchPerPage).Offset((s.Page - 1) * SearchPerPage).
		Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("search audit: %w", err)
	}
	total, capped, err := cappedCount(db.WithContext(ctx), q)
	if err != nil {
		return nil, fmt.Errorf("count audit: %w", err)
	}
	return &Paged[AuditLog]{Rows: rows, Total: total, Capped: capped, Page: s.Page, PerPage: SearchPerPage}, nil
}

func during(q *gorm.DB, from, to time.Time) *gorm.DB {
	if !from.IsZero() {
		q = q.Where("created_at >= ?", from.UTC())
	}
	if !to.IsZero() {
		q = q.Where("created_at < ?", to.UTC())
	}
	return q
}

// cappedCount counts the rows of q up to SearchCap: the database stops reading at the first row past it.
// They are read in the pages' order, so that the index that serves the page serves the count (a plain
// LIMIT would let the planner read the table from its start).
func cappedCount(db, q *gorm.DB) (int64, bool, error) {
	var n int64
	sub := q.Session(&gorm.Session{}).Select("1").Order("created_at DESC").Limit(SearchCap + 1)
	if err := db.Raw("SELECT count(*) FROM (?) AS found", sub).Scan(&n).Error; err != nil {
		return 0, false, err
	}
	if n > SearchCap {
		return SearchCap, true, nil
	}
	return n, false, nil
}

// ActivityNames maps activity ids to their names.
func ActivityNames(ctx context.Context, db *gorm.DB, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	err := inChunks(unique(ids), func(chunk []int64) error {
		var rows []Activity
		if err := db.WithContext(ctx).Select("id", "name").Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return err
		}
		for _, a := range rows {
			out[a.ID] = a.Name
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("activity names: %w", err)
	}
	return out, nil
}

// OrderStory is what the audit log says about one order, oldest first (at most 200 rows).
func OrderStory(ctx context.Context, db *gorm.DB, orderNo string) ([]AuditLog, error) {
	var rows []AuditLog
	if err := db.WithContext(ctx).Where("target = ?", "order:"+orderNo).Order("created_at, id").Limit(200).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("story of order %s: %w", orderNo, err)
	}
	return rows, nil
}

// SaleName is a sale as a search's filter offers it.
type SaleName struct {
	ID   int64
	Name string
}

// RecentActivities lists the newest sales that went to review or further, at most limit, newest first.
func RecentActivities(ctx context.Context, db *gorm.DB, limit int) ([]SaleName, error) {
	var out []SaleName
	if err := db.WithContext(ctx).Model(&Activity{}).Select("id", "name").Where("state <> ?", ActivityDraft).
		Order("id DESC").Limit(limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("recent activities: %w", err)
	}
	return out, nil
}
