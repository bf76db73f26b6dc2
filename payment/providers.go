package payment

import (
	"slices"
	"strings"
)

// The providers' names, as PAY_PROVIDERS, the pay request and the payments table write them.
const (
	NameSandbox = "sandbox" // the built-in stand-in, which moves no money (demo, trials)
	NameHTTP    = "http"    // a provider that speaks this project's own protocol at PAY_PROVIDER_URL
	NameWeChat  = "wechat"  // WeChat Pay API v3, Native payment
	NameAlipay  = "alipay"  // Alipay, face-to-face precreate
)

// Names are the providers the shop knows, in the order a shopper is offered them.
var Names = []string{NameWeChat, NameAlipay, NameHTTP, NameSandbox}

// Providers are the providers a shop offers, by name, in the order it offers them. The payments made
// before providers had names (provider "") are at the one http-protocol provider (the sandbox or
// PAY_PROVIDER_URL).
type Providers struct {
	names  []string
	byName map[string]Provider
}

// NewProviders makes an empty set.
func NewProviders() *Providers { return &Providers{byName: map[string]Provider{}} }

// Add offers p under name, after those added before.
func (s *Providers) Add(name string, p Provider) *Providers {
	if _, ok := s.byName[name]; !ok {
		s.names = append(s.names, name)
	}
	s.byName[name] = p
	return s
}

// Names are the offered providers' names, in order.
func (s *Providers) Names() []string { return slices.Clone(s.names) }

// Of is the provider a payment of that name is at, or nil for none the shop has (any more).
func (s *Providers) Of(name string) Provider {
	if name == "" {
		if p := s.byName[NameSandbox]; p != nil {
			return p
		}
		return s.byName[NameHTTP]
	}
	return s.byName[name]
}

// NameOf is the name of the provider a payment of that name is at: name, or for a payment made before
// providers had names, the http-protocol provider it was made at (the sandbox, if the shop mounts it).
func (s *Providers) NameOf(name string) string {
	if name != "" {
		return name
	}
	if _, ok := s.byName[NameSandbox]; ok {
		return NameSandbox
	}
	return NameHTTP
}

// Choose answers the provider a shopper asked for: name, or the only one when name is "" and there is
// one. ok is false for a name the shop does not offer, or none among several.
func (s *Providers) Choose(name string) (string, Provider, bool) {
	name = strings.TrimSpace(name)
	if name == "" && len(s.names) == 1 {
		name = s.names[0]
	}
	p, ok := s.byName[name]
	return name, p, ok
}

// Notifier is the named provider's callback reader, or nil when it has none (the http protocol's
// callbacks come to /api/payments/notify, checked with PAY_SECRET).
func (s *Providers) Notifier(name string) Notifier {
	n, _ := s.byName[name].(Notifier)
	return n
}
