package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ClusterDecision is what the audit keeps of an admin's decision on a flagged cluster of a line: which,
// how many entrants, what was decided and why.
type ClusterDecision struct {
	Item     int64   `json:"item_id"`
	Cluster  string  `json:"cluster"`
	Users    []int64 `json:"users"` // its entrants
	Decision string  `json:"decision"`
	Reason   string  `json:"reason"`
}

// DecideCluster checks the reason of an admin's decision on a flagged cluster, and runs decide with the
// decision audited: the audit row is written first, and kept only if decide succeeds.
func DecideCluster(ctx context.Context, db *gorm.DB, who Actor, d ClusterDecision, now time.Time, decide func() error) error {
	reason, err := checkReason(d.Reason, true)
	if err != nil {
		return err
	}
	d.Reason = reason
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := Audit(tx, who, "cluster."+d.Decision, fmt.Sprintf("item:%d", d.Item), nil, d, now); err != nil {
			return err
		}
		return decide()
	})
}
