package app

import (
	"context"
	"fmt"
	"strings"

	"seckill/models"
)

// warnAtStart tells the operator, at every start, of data that an older build let in and this one's
// rules refuse, by id, so that it can be put right by hand: nothing is changed here. Only logged: a
// failure to look is said, and the server starts all the same.
func warnAtStart(ctx context.Context, cfg Config, d Deps) {
	items, err := models.ItemsWithImageURLs(ctx, d.DB)
	if err != nil {
		d.Log.WarnContext(ctx, "could not check the items' image addresses", "err", err)
	}
	var bad []string
	for _, it := range items {
		if !models.ValidImageURL(it.ImageURL, cfg.imageHostList()) {
			bad = append(bad, fmt.Sprintf("%d:%s", it.ID, it.ImageURL))
		}
	}
	if len(bad) > 0 {
		d.Log.WarnContext(ctx, "items whose image_url is neither a path on this site nor an https:// address on IMAGE_HOSTS: "+
			"the pages' Content-Security-Policy does not load them; give them an upload, or list their host in IMAGE_HOSTS",
			"items", strings.Join(bad, " "), "image_hosts", cfg.ImageHosts)
	}

	clashes, err := models.UsernameClashes(ctx, d.DB)
	if err != nil {
		d.Log.WarnContext(ctx, "could not check for usernames that differ only by case", "err", err)
	}
	if len(clashes) > 0 {
		names := make([]string, len(clashes))
		for i, u := range clashes {
			names[i] = fmt.Sprintf("%d:%s", u.ID, u.Username)
		}
		d.Log.WarnContext(ctx, "usernames that differ only by case (id:name): rename or merge them by hand, then run seckill migrate to add the unique index",
			"accounts", strings.Join(names, " "))
	}
}
