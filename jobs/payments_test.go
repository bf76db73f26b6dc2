package jobs

import (
	"testing"

	"seckill/payment"
)

// At most pollRate queries a second go to each of WeChat Pay and Alipay, whatever the backlog: past a
// burst, a payment waits for a later round (a round never waits); the sandbox is not paced.
func TestThePollPacesItsQueriesToEachProvider(t *testing.T) {
	p := &PaymentPoll{}
	for i := 0; i < pollRate; i++ {
		if !p.pace(payment.NameAlipay) {
			t.Fatalf("query %d of a burst to Alipay was held back", i+1)
		}
	}
	if p.pace(payment.NameAlipay) {
		t.Error("a query past the burst to Alipay went out at once")
	}
	if !p.pace(payment.NameWeChat) {
		t.Error("WeChat Pay waited for Alipay's share")
	}
	for i := 0; i < 10*pollRate; i++ {
		if !p.pace(payment.NameSandbox) {
			t.Fatal("the sandbox's queries are paced")
		}
	}
}
