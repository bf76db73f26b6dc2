package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/captcha"
	"seckill/internal/testenv"
	"seckill/models"
)

// TestFormErrorsAtOnceInABrowser: a form with several mistakes shows every one of them at once, each
// beside its field, in the page's language: registering in Chinese, an item in English.
func TestFormErrorsAtOnceInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	withRole(t, s, "form_shop", models.RoleMerchant)
	ctx := chrome(t)

	var captchaID string
	run(t, ctx, "the Chinese register page",
		chromedp.Navigate(s.URL+"/lang/zh"),
		chromedp.Navigate(s.URL+"/register"),
		chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
		chromedp.AttributeValue("#captcha-img", "data-captcha-id", &captchaID, nil, chromedp.ByID),
	)
	answer, err := s.Redis.Get(context.Background(), captcha.Key(captchaID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var nameErr, passErr string
	run(t, ctx, "register with a bad name and a short password",
		chromedp.SendKeys("#username", "a b", chromedp.ByID),
		chromedp.SendKeys("#password", "短", chromedp.ByID),
		chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`//span[@data-error-for="password"][normalize-space(.) != ""]`),
		chromedp.Text(`[data-error-for="username"]`, &nameErr, chromedp.ByQuery),
		chromedp.Text(`[data-error-for="password"]`, &passErr, chromedp.ByQuery),
	)
	if !strings.Contains(nameErr, "字母、数字或下划线") || !strings.Contains(passErr, "8 到 72 字节") {
		t.Errorf("the Chinese register page says %q and %q", nameErr, passErr)
	}
	shot(t, ctx, "form-errors-zh")

	run(t, ctx, "English", chromedp.Navigate(s.URL+"/lang/en"))
	loginInBrowser(t, ctx, s.URL, "form_shop", passwordOf("form_shop"))
	now := s.Clock.Now()
	var errs3 [3]string
	run(t, ctx, "an item with three mistakes",
		chromedp.Navigate(s.URL+"/merchant"),
		chromedp.WaitVisible("#a-name", chromedp.ByID),
		chromedp.SendKeys("#a-name", "Winter Sale", chromedp.ByID),
		chromedp.SetValue("#a-starts", now.Add(time.Hour).Local().Format("2006-01-02T15:04"), chromedp.ByID),
		chromedp.SetValue("#a-ends", now.Add(3*time.Hour).Local().Format("2006-01-02T15:04"), chromedp.ByID),
		chromedp.Click(`form[data-api] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#item-form", chromedp.ByID),
		chromedp.SendKeys("#i-original", "10.00", chromedp.ByID),
		chromedp.SendKeys("#i-flash", "20.00", chromedp.ByID),
		chromedp.SendKeys("#i-stock", "-1", chromedp.ByID),
		chromedp.Click(`#item-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`//span[@data-error-for="stock"][normalize-space(.) != ""]`),
		chromedp.Text(`#item-form [data-error-for="name"]`, &errs3[0], chromedp.ByQuery),
		chromedp.Text(`#item-form [data-error-for="seckill_price_cents"]`, &errs3[1], chromedp.ByQuery),
		chromedp.Text(`#item-form [data-error-for="stock"]`, &errs3[2], chromedp.ByQuery),
	)
	if errs3[0] != "must not be empty" || errs3[1] != "must not be above the original price" || !strings.Contains(errs3[2], "between 1 and") {
		t.Errorf("the item form's errors: %q", errs3)
	}
	shot(t, ctx, "form-errors-en")
}
