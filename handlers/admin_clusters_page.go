package handlers

import (
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/i18n"
	"seckill/models"
)

// ClustersPage renders an admin's page of an item's flagged clusters (/admin/items/{id}/clusters): the
// clusters, their evidence and the Clear and Confirm buttons come from the clusters' API
// (clusters.js); the page adds which open appeals come from each cluster's accounts.
type ClustersPage struct {
	DB  *gorm.DB
	Now func() time.Time
}

// clusterAppealJSON is an open appeal as the clusters' page matches it to a cluster's accounts.
type clusterAppealJSON struct {
	ID       int64     `json:"id"`
	UserID   int64     `json:"user_id"`
	Username string    `json:"username"`
	Message  string    `json:"message"`
	At       time.Time `json:"created_at"`
}

// Page renders the page of the item's clusters.
func (h *ClustersPage) Page(c *fiber.Ctx) error {
	if _, ok, err := pageRole(c, h.Now(), models.RoleAdmin); !ok {
		return err
	}
	id, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	it, a, err := models.ApprovedItem(ctx, h.DB, id)
	if err != nil {
		return err
	}
	open, err := models.OpenAppealsOfItem(ctx, h.DB, id)
	if err != nil {
		return err
	}
	appeals := make([]clusterAppealJSON, len(open))
	for i, ap := range open {
		appeals[i] = clusterAppealJSON{ap.ID, ap.UserID, ap.Username, ap.Message, ap.CreatedAt.UTC()}
	}
	appealsJSON, err := json.Marshal(appeals)
	if err != nil {
		return err
	}
	words, err := json.Marshal(i18n.Words(Lang(c), "clu."))
	if err != nil {
		return err
	}
	noStore(c)
	data := PageData(c, h.Now(), "clu.title", "Item", it, "Activity", a, "Appeals", string(appealsJSON), "Words", string(words))
	data["Title"] = data["Title"].(string) + ": " + it.Name
	return c.Render("admin_clusters", data, Layout)
}
