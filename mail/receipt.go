package mail

import (
	"context"

	"gorm.io/gorm"

	"seckill/models"
)

// Receipts queues a paid order's receipt to its buyer.
type Receipts struct {
	Queue   *Queue
	BaseURL string
}

// Paid queues order id's receipt in tx, the transaction that marks it paid, when its buyer has a verified
// address; the receipt speaks the language of the buyer's last mail (English for none).
func (r *Receipts) Paid(ctx context.Context, tx *gorm.DB, orderID int64) error {
	o, err := models.Receipt(ctx, tx, orderID)
	if err != nil || o.Email == "" {
		return err
	}
	lang, err := models.LastMailLang(ctx, tx, o.UserID)
	if err != nil {
		return err
	}
	paid := r.Queue.Now()
	if o.PaidAt != nil {
		paid = *o.PaidAt
	}
	return r.Queue.Enqueue(ctx, tx, Message{Kind: KindReceipt, To: o.Email, Lang: lang, UserID: o.UserID, Data: map[string]string{
		"Username": o.Username, "OrderNo": o.OrderNo, "Item": o.ItemName, "Amount": Money(o.PriceCents), "Time": When(lang, paid),
		"Link": r.BaseURL + "/orders/" + o.OrderNo,
	}})
}
