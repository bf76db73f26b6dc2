// Package jobreport holds what the background jobs report and the consoles show: a job's last round and
// an item whose books do not add up. A package of its own, so that the pages read the jobs' reports
// without importing the jobs.
package jobreport

import "time"

// Run is what one round of a job did.
type Run struct {
	Job       string           `json:"job"`
	Instance  string           `json:"instance"`
	At        time.Time        `json:"at"`
	Duration  time.Duration    `json:"duration"`
	Counts    map[string]int64 `json:"counts"`
	Error     string           `json:"error,omitempty"`
	LastError string           `json:"last_error,omitempty"` // the latest error, kept after good rounds
	ErrorAt   *time.Time       `json:"error_at,omitempty"`
}

// Mismatch is an item whose books do not add up.
type Mismatch struct {
	ItemID     int64 `json:"item_id"`
	StockTotal int64 `json:"stock_total"`
	RedisLeft  int64 `json:"redis_left"`
	Queued     int64 `json:"queued"`
	InTransit  int64 `json:"in_transit"`
	LiveOrders int64 `json:"live_orders"`
	Difference int64 `json:"difference"` // stock_total − (left + queued + in transit + live orders): > 0 units lost to sale, < 0 oversold
}
