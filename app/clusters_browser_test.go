package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/models"
)

// TestClustersPageInABrowser: a scalper's accounts share one browser and most are refused by the address
// rule; one of its entrants appeals. From the admin's dashboard the item links to its flagged clusters;
// the page says the cluster's evidence in words, shows the appeal that comes from its accounts, and
// clears the cluster with a reason, audited. In English and in Chinese.
func TestClustersPageInABrowser(t *testing.T) {
	testenv.Long(t)
	words := map[string][4]string{
		"en": {"Flagged clusters", "Browsers shared by several of these accounts", "Accounts refused from the same browsers: 4", "Cleared"},
		"zh": {"可疑账号群", "这些账号中有多个共用同一浏览器", "同一浏览器被拒绝的账号：4 个", "已解除"},
	}
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			s := startLive(t, liveOpts{only: []string{"preheat"}})
			act, item := waitingRoom(t, s, 2, 10*time.Minute)
			if err := s.DB.Model(&act).Update("rule_one_per_address", true).Error; err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 5*time.Second, "the catalog to show the rule", func() bool {
				return newBrowser(t, s.URL).call("GET", "/api/activities/"+itoa(act.ID), nil).json(t)["rules"].(map[string]any)["one_per_address"] == true
			})
			person := newBrowser(t, s.URL)
			person.register("a_person_"+lang, passwordOf("a_person"))
			id, answer := person.captcha()
			expect(t, "a person joins", person.joinFrom(item.ID, person.addAddress("+86 138 0013 8000", "Zhejiang", "Hangzhou", "No. 10, Wensan Road"), id, answer), 200, "")
			// The scalper: six accounts in one browser, two delivery addresses between them.
			device, appealer := "", ""
			for i := range 6 {
				b := newBrowser(t, s.URL)
				if device != "" {
					b.setCookie(handlers.DeviceCookie, device)
				}
				name := fmt.Sprintf("bulk_%s_%d", lang, i)
				b.register(name, passwordOf(name))
				device = b.cookie(handlers.DeviceCookie)
				addr := b.addAddress(fmt.Sprintf("+86 139 0000 000%d", i%2), "Guangdong", "Shenzhen", fmt.Sprintf("Warehouse %d", i%2))
				id, answer := b.captcha()
				if r := b.joinFrom(item.ID, addr, id, answer); i == 0 {
					expect(t, "the scalper's first account joins", r, 200, "")
					expect(t, "and appeals", b.call("POST", "/api/items/"+itoa(item.ID)+"/appeal", map[string]string{"message": "I am one person, truly"}), 201, "")
					appealer = name
				}
			}
			withRole(t, s, "cluster_boss_"+lang, models.RoleAdmin)

			boss := chrome(t)
			signIn(t, boss, s.URL, "cluster_boss_"+lang)
			if lang == "zh" {
				run(t, boss, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
			}
			w := words[lang]
			var page string
			run(t, boss, "from the dashboard to the item's clusters",
				chromedp.Navigate(s.URL+"/admin"),
				chromedp.WaitVisible(`a.clusters-link[href="/admin/items/`+itoa(item.ID)+`/clusters"]`, chromedp.ByQuery),
				chromedp.Click(`a.clusters-link[href="/admin/items/`+itoa(item.ID)+`/clusters"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`article.cluster`, chromedp.ByQuery),
				chromedp.Text("main", &page, chromedp.ByQuery),
			)
			for _, want := range []string{w[0], w[1], w[2], "I am one person, truly", appealer} {
				if !strings.Contains(page, want) {
					t.Errorf("the clusters' page lacks %q:\n%s", want, page)
				}
			}
			if lang == "en" {
				shot(t, boss, "admin-clusters-en")
			}
			var after string
			run(t, boss, "clear the cluster",
				chromedp.Click(`article.cluster button[data-action="clear"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`//article[contains(@class, "cluster")]//span[@data-error-for="reason"][string-length(normalize-space(.)) > 0]`),
				chromedp.SendKeys(`article.cluster input[name="reason"]`, "Two flatmates: the appeal was heard", chromedp.ByQuery),
				chromedp.Click(`article.cluster button[data-action="clear"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`article.cluster .decision.ok`, chromedp.ByQuery),
				chromedp.Text(`article.cluster .decision`, &after, chromedp.ByQuery),
			)
			if !strings.Contains(after, w[3]) {
				t.Errorf("after Clear the page says %q; want %q", after, w[3])
			}
			var audit models.AuditLog
			if err := s.DB.Where("action = ?", "cluster.cleared").Take(&audit).Error; err != nil || audit.Target != "item:"+itoa(item.ID) ||
				!strings.Contains(audit.After, "Two flatmates") {
				t.Errorf("the clear's audit row: %+v, %v", audit, err)
			}
		})
	}
}
