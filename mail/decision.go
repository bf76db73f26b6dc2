package mail

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"seckill/models"
)

// The kinds of mail of a reviewer's decision on a merchant's sale.
const (
	// KindSaleApproved: a sale was approved (Sale, Time, Link, Username).
	KindSaleApproved = "sale_approved"
	// KindSaleRejected: a sale was rejected, with the reviewer's reason (Sale, Reason, Link, Username).
	KindSaleRejected = "sale_rejected"
)

func init() {
	renderers[KindSaleApproved] = richRender("decision.mail.approved.subject", []string{"decision.mail.approved.body"}, "decision.mail.action")
	renderers[KindSaleRejected] = richRender("decision.mail.rejected.subject", []string{"decision.mail.rejected.body", "decision.mail.rejected.reason"}, "decision.mail.action")
}

// Decisions queues a reviewer's decision to the sale's merchant.
type Decisions struct {
	Queue   *Queue
	BaseURL string
}

// Decided queues the decision on a in tx, the transaction that writes it, when its merchant has a
// verified address; the mail speaks the language of the merchant's last mail (English for none), as a
// receipt does.
func (d *Decisions) Decided(ctx context.Context, tx *gorm.DB, a *models.Activity) error {
	email, verified, err := models.EmailOf(ctx, tx, a.MerchantID)
	if err != nil || !verified {
		return err
	}
	u, err := models.UserByID(ctx, tx, a.MerchantID)
	if err != nil {
		return err
	}
	lang, err := models.LastMailLang(ctx, tx, a.MerchantID)
	if err != nil {
		return err
	}
	m := Message{To: email, Lang: lang, UserID: a.MerchantID, Data: map[string]string{
		"Username": u.Username, "Sale": a.Name, "Link": fmt.Sprintf("%s/merchant/activities/%d", d.BaseURL, a.ID)}}
	switch a.State {
	case models.ActivityApproved:
		m.Kind, m.Data["Time"] = KindSaleApproved, When(lang, a.StartsAt)
	case models.ActivityRejected:
		m.Kind, m.Data["Reason"] = KindSaleRejected, a.ReviewReason
	default:
		return nil
	}
	return d.Queue.Enqueue(ctx, tx, m)
}
