package auth

import (
	"strings"
	"sync"

	"github.com/medama-io/go-useragent"
	"github.com/medama-io/go-useragent/agents"
)

// Agents names a browser and its system from a User-Agent, for the list of a person's sessions. It uses
// medama-io/go-useragent (a trie built once, about 30 ms and 5 MiB, on the first login; no allocation a
// parse), and before it recognises the in-app browsers most of this shop's shoppers use, which that
// library reports as the Chrome or Safari they embed.
type Agents struct {
	parser func() *useragent.Parser
}

// NewAgents returns a namer; its parser is built at the first use.
func NewAgents() *Agents { return &Agents{parser: sync.OnceValue(useragent.NewParser)} }

// maxAgentLen bounds the User-Agent read: a real one is a few hundred bytes.
const maxAgentLen = 512

// inApp are browsers inside apps, by the token their User-Agent carries, in the order they are looked
// for (WeChat's carries QQ's token too, on some phones).
var inApp = []struct{ token, name string }{
	{"MicroMessenger", "WeChat"},
	{"AlipayClient", "Alipay"},
	{"DingTalk", "DingTalk"},
	{"MQQBrowser", "QQ Browser"},
	{"QQBrowser", "QQ Browser"},
	{"UCBrowser", "UC Browser"},
	{"Quark/", "Quark"},
}

var systemNames = map[agents.OS]string{agents.OSMacOS: "macOS", agents.OSIOS: "iOS"}

// Name answers the browser and the system a User-Agent names, each "" when it names none.
func (a *Agents) Name(ua string) (browser, system string) {
	if len(ua) > maxAgentLen {
		ua = ua[:maxAgentLen]
	}
	if ua == "" {
		return "", ""
	}
	r := a.parser().Parse(ua)
	browser, system = string(r.Browser()), string(r.OS())
	if n, ok := systemNames[r.OS()]; ok {
		system = n
	}
	for _, b := range inApp {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	return browser, system
}
