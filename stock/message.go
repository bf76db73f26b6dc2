package stock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/redis/go-redis/v9"
)

// An order travels as a message: take.lua queues it on the shard's order stream when it takes the unit,
// the order consumer reads it (parseOrder) and, once the order is in the database or refused, settles
// it (Ack, settle.lua), which tells the buyer the result. Every name the message, the consumer group and
// the results hash use is spelled here once: the scripts that use them (take.lua, settle.lua) get them filled in when they load (lua).

// Group is the consumer group every instance's order consumer joins.
const Group = "orders"

// The order message's fields.
const (
	fieldOrderNo    = "order_no"
	fieldUserID     = "user_id"
	fieldPrice      = "price" // cents
	fieldActivityID = "activity_id"
	fieldAt         = "at" // when the unit was taken, ms since the epoch
)

// luaNames are the names above as the scripts write them: '{{.Group}}', '{{.OrderNo}}' and so on.
var luaNames = map[string]string{
	"Group": Group, "OrderNo": fieldOrderNo, "UserID": fieldUserID, "Price": fieldPrice,
	"ActivityID": fieldActivityID, "At": fieldAt,
}

// lua makes a script of src with the names it uses filled in. A name it does not know fails at start-up.
func lua(src string) *redis.Script {
	t := template.Must(template.New("").Option("missingkey=error").Parse(src))
	var b strings.Builder
	if err := t.Execute(&b, luaNames); err != nil {
		panic(fmt.Sprintf("stock: script: %v", err))
	}
	return redis.NewScript(b.String())
}

// OrderMessage is one queued order, as the take script wrote it.
type OrderMessage struct {
	ID         string // the stream entry id
	ItemID     int64
	Shard      int // the stream's shard: the buyer's home shard
	OrderNo    string
	UserID     int64
	ActivityID int64
	PriceCents int64
	At         time.Time
	Bad        error // set when the entry cannot be read as an order: it can never succeed
}

// Fields are the message's fields as take.lua writes them (tests queue messages of their own with it).
func (m OrderMessage) Fields() map[string]any {
	return map[string]any{fieldOrderNo: m.OrderNo, fieldUserID: m.UserID, fieldPrice: m.PriceCents,
		fieldActivityID: m.ActivityID, fieldAt: m.At.UnixMilli()}
}

func parseOrder(st Stream, m redis.XMessage) OrderMessage {
	o := OrderMessage{ID: m.ID, ItemID: st.ItemID, Shard: st.Shard}
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	num := func(k string) int64 {
		n, err := strconv.ParseInt(str(k), 10, 64)
		if err != nil && o.Bad == nil {
			o.Bad = fmt.Errorf("field %s: %q is not a number", k, str(k))
		}
		return n
	}
	o.OrderNo = str(fieldOrderNo)
	o.UserID = num(fieldUserID)
	o.ActivityID = num(fieldActivityID)
	o.PriceCents = num(fieldPrice)
	o.At = time.UnixMilli(num(fieldAt)).UTC()
	if o.Bad == nil && (o.OrderNo == "" || o.UserID <= 0) {
		o.Bad = errors.New("no order number or user")
	}
	return o
}

// Results a buyer can have for an item.
const (
	ResultNone    = "none"
	ResultQueued  = "queued"
	ResultSuccess = "success"
	ResultSoldOut = "sold_out"
	ResultFailed  = "failed"
)

// Result is a buyer's result for an item.
type Result struct {
	Status  string `json:"status"`
	OrderNo string `json:"order_no,omitempty"`
	Message string `json:"message,omitempty"`
	// Reason of a failed result that is not the order's: ResultLost, a take lost with a Redis master.
	Reason string `json:"reason,omitempty"`
}

// A settled buyer's result, as the results hash keeps it: the status, a colon, and the order number or
// the message.
const (
	successPrefix = ResultSuccess + ":"
	failedPrefix  = ResultFailed + ":"
)

// SuccessValue is the result of a buyer who holds an order.
func SuccessValue(orderNo string) string { return successPrefix + orderNo }

// FailedValue is the result of a buyer whose order could not be made.
func FailedValue(message string) string { return failedPrefix + message }

// decodeResult reads a value of the results hash; anything else (none) has an empty Status.
func decodeResult(v string) Result {
	if no, ok := strings.CutPrefix(v, successPrefix); ok {
		return Result{Status: ResultSuccess, OrderNo: no}
	}
	if msg, ok := strings.CutPrefix(v, failedPrefix); ok {
		return Result{Status: ResultFailed, Message: msg}
	}
	if strings.HasPrefix(v, lostPrefix) {
		return Result{Status: ResultFailed, Message: lostMessage, Reason: ResultLost}
	}
	return Result{}
}
