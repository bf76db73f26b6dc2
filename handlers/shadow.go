package handlers

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/catalog"
	"seckill/errs"
	"seckill/models"
	"seckill/sift"
	"seckill/stock"
)

// Shadow serves the admins' view of a queue sale's flagged clusters (one person's many accounts, as the
// joins' traces show them) and their decisions: clear a cluster (its entrants return to their drawn
// places) or confirm it (they stay in the shadow line). Every decision is audited with its reason.
type Shadow struct {
	Catalog *catalog.Catalog
	Sifter  *stock.Sifter
	Line    *stock.Line
	DB      *gorm.DB
	Now     func() time.Time
}

// clustersJSON is GET /api/admin/items/{id}/clusters.
type clustersJSON struct {
	ItemID     int64          `json:"item_id"`
	Room       string         `json:"room"`        // the waiting room's state: open, drawing, drawn ("" before it opens)
	ShadowLine bool           `json:"shadow_line"` // whether the draw puts the flagged in the shadow line (SHADOW_LINE)
	Thresholds thresholdsJSON `json:"thresholds"`
	Clusters   []clusterJSON  `json:"clusters"`
}

type thresholdsJSON struct {
	PrefixMin          int     `json:"prefix_min"`
	PrefixFactor       float64 `json:"prefix_factor"`
	Burst              int     `json:"burst"`
	BurstWindowSeconds int64   `json:"burst_window_seconds"`
	DeviceAccounts     int     `json:"device_accounts"`
	DeviceRefused      int     `json:"device_refused"`
}

type clusterJSON struct {
	Key              string             `json:"key"`
	Entrants         int                `json:"entrants"`
	Users            []int64            `json:"users"`
	Shadowed         int                `json:"shadowed"` // waiting in the shadow line now
	Signals          []string           `json:"signals"`
	Prefixes         []sift.PrefixCount `json:"prefixes"`
	Devices          int                `json:"devices"`
	Refused          int                `json:"refused"`
	AccountsMadeFrom *time.Time         `json:"accounts_made_from"`
	AccountsMadeTo   *time.Time         `json:"accounts_made_to"`
	Decision         *string            `json:"decision"`
}

func clusterOf(f stock.Flagged) clusterJSON {
	out := clusterJSON{Key: f.Key, Entrants: len(f.Users), Users: f.Users, Shadowed: f.Shadowed, Signals: f.Signals,
		Prefixes: f.Prefixes, Devices: f.Devices, Refused: f.Refused}
	if !f.MadeFrom.IsZero() {
		from, to := f.MadeFrom.UTC(), f.MadeTo.UTC()
		out.AccountsMadeFrom, out.AccountsMadeTo = &from, &to
	}
	if f.Decision != stock.Undecided {
		d := string(f.Decision)
		out.Decision = &d
	}
	return out
}

// queueItem answers the item's activity when the item sells through a waiting room (else 404).
func (h *Shadow) queueItem(c *fiber.Ctx) (int64, *models.Activity, error) {
	id, err := pathID(c, "id", "item")
	if err != nil {
		return 0, nil, err
	}
	_, a, err := h.Catalog.Item(c.UserContext(), id)
	if err != nil {
		return 0, nil, err
	}
	if a.SaleMode != models.SaleQueue {
		return 0, nil, errNoRoom
	}
	return id, a, nil
}

// Clusters answers the item's flagged clusters as its joins' traces show them now, with their evidence
// and decisions.
func (h *Shadow) Clusters(c *fiber.Ctx) error {
	id, _, err := h.queueItem(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	fs, err := h.Sifter.Flagged(ctx, id)
	if err != nil {
		return err
	}
	room, err := h.Line.RoomOf(ctx, id)
	if err != nil {
		return err
	}
	th := h.Sifter.Thresholds()
	out := clustersJSON{ItemID: id, Room: room.State, ShadowLine: h.Sifter.On(), Clusters: make([]clusterJSON, 0, len(fs)),
		Thresholds: thresholdsJSON{PrefixMin: th.PrefixMin, PrefixFactor: th.PrefixFactor, Burst: th.Burst,
			BurstWindowSeconds: int64(th.BurstWindow.Seconds()), DeviceAccounts: th.DeviceAccounts, DeviceRefused: th.DeviceRefused}}
	for _, f := range fs {
		out.Clusters = append(out.Clusters, clusterOf(f))
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

// Clear clears a cluster: its entrants return to their drawn places.
func (h *Shadow) Clear(c *fiber.Ctx) error { return h.decide(c, stock.Cleared) }

// Confirm confirms a cluster: its entrants stay in the shadow line.
func (h *Shadow) Confirm(c *fiber.Ctx) error { return h.decide(c, stock.Confirmed) }

var (
	errNoCluster = errs.Say(errs.NotFound, "no_cluster")
	errCleared   = errs.Say(errs.Conflict, "cluster_decided")
	errConfirmed = errs.Say(errs.Conflict, "cluster_confirmed")
)

func (h *Shadow) decide(c *fiber.Ctx, d stock.Decision) error {
	id, a, err := h.queueItem(c)
	if err != nil {
		return err
	}
	key := c.Params("key")
	who, reason, err := reasoned(c, h.DB, false)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	f, found, err := h.Sifter.Cluster(ctx, id, key)
	if err != nil {
		return err
	}
	if !found {
		return errNoCluster
	}
	err = models.DecideCluster(ctx, h.DB, who, models.ClusterDecision{Item: id, Cluster: key, Users: f.Users, Decision: string(d), Reason: reason},
		h.Now(), func() error {
			f, err = h.Sifter.Decide(ctx, id, f, d, a.EndsAt)
			switch {
			case errors.Is(err, stock.ErrDecided) && f.Decision == stock.Confirmed:
				return errConfirmed
			case errors.Is(err, stock.ErrDecided):
				return errCleared
			}
			return err
		})
	if err != nil {
		return err
	}
	return c.JSON(clusterOf(f))
}
