package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"seckill/auth"
	"seckill/handlers"
	"seckill/payment"
	"seckill/payment/alipay"
	"seckill/payment/wechatpay"
	"seckill/pow"
	"seckill/sift"
	"seckill/stock"
)

// Config is the whole configuration, read once from the environment at start. Every variable is listed,
// with its default and meaning, in the README's configuration table and in .env.example.
type Config struct {
	Port            int              // PORT
	ListenHost      string           // LISTEN_HOST: the IP address to listen on; empty listens on every interface
	BaseURL         string           // BASE_URL: the public address, used in QR codes and payment links
	DatabaseURL     string           // DATABASE_URL: PostgreSQL; empty (with REDIS_URL empty) means demo mode
	RedisURL        string           // REDIS_URL: redis://host:port/db, or host:port,host:port,... for a cluster
	SessionSecret   string           // SESSION_SECRET: signs session cookies; required outside demo mode
	SessionTTL      time.Duration    // SESSION_TTL: how long a login lasts
	SessionMax      int              // SESSION_MAX: the live sessions (devices) an account may have; a login past it ends the oldest
	RateLimitIP     bool             // RATE_LIMIT_IP: per-IP limits on (off for a load test from one address)
	GroupCommit     bool             // GROUP_COMMIT: concurrent takes of one stock shard share one script call
	BcryptCost      int              // BCRYPT_COST
	PayTimeout      time.Duration    // PAY_TIMEOUT: how long an order waits for payment
	PreheatWindow   time.Duration    // PREHEAT_WINDOW: how long before its start a sale is loaded into Redis
	QRTTL           time.Duration    // QR_TTL: how long a login QR code lives
	GeoIPDB         string           // GEOIP_DB: a MaxMind-format city database (.mmdb); the phone approving a QR login is shown the computer's city; empty shows none
	NodeID          int64            // NODE_ID: this instance's snowflake node, unique per instance; -1 (unset) leases one from Redis
	DataDir         string           // DATA_DIR: where demo mode keeps its SQLite file
	LogLevel        string           // LOG_LEVEL: debug, info, warn, error
	LogFormat       string           // LOG_FORMAT: text or json
	BodyLimit       int              // BODY_LIMIT: the largest request body in bytes
	ShutdownTimeout time.Duration    // SHUTDOWN_TIMEOUT: how long in-flight requests get at a stop
	PayProviderURL  string           // PAY_PROVIDER_URL: the payment provider's API; default the built-in sandbox, {BASE_URL}/sandbox
	PaySecret       string           // PAY_SECRET: checks the provider's signed callbacks; default derived from SESSION_SECRET
	LineSeedKey     string           // LINE_SEED_KEY(_FILE): seals the waiting rooms' draw seeds kept in the database (hex or base64); empty: derived from SESSION_SECRET (seedkey.go)
	PayPollInterval time.Duration    // PAY_POLL_INTERVAL: how often open payments are checked with the provider
	ClaimIdle       time.Duration    // ORDER_CLAIM_IDLE: how long a queued order waits on a silent instance before another takes it
	SaleKeep        time.Duration    // SALE_KEEP: how long a sale's keys stay in Redis once it is over and drained
	TrustedProxies  string           // TRUSTED_PROXIES: comma-separated IPs and CIDR ranges whose X-Real-IP is the client's address; empty trusts none
	PaySandbox      bool             // "sandbox" in PAY_PROVIDERS (or the deprecated PAY_SANDBOX=on): mount the built-in payment sandbox and pay through it; on in demo mode, else off
	PayProviders    string           // PAY_PROVIDERS: the providers a shopper may pay with, in the order offered: wechat, alipay, http, sandbox
	WeChatPay       wechatpay.Config // WECHAT_PAY_*, with wechat in PAY_PROVIDERS (docs/payments.md)
	Alipay          alipay.Config    // ALIPAY_*, with alipay in PAY_PROVIDERS (docs/payments.md)
	PayCurrency     string           // PAY_CURRENCY: the currency of the shop's prices (its cents are its hundredths); CNY, the only one WeChat Pay and Alipay take here
	PayNotifyURL    string           // PAY_NOTIFY_URL: seckill sandbox-pay only: the shop's callback address
	MetricsListen   string           // METRICS_LISTEN: the operators' listener for /metrics (host:port), or off
	NginxStatusURL  string           // NGINX_STATUS_URL: nginx's stub_status page, whose counts /metrics shows as seckill_nginx_*; empty for none
	NginxEdgeLog    string           // NGINX_EDGE_LOG: nginx's edge log (a line a request it answered without an instance), counted in /metrics; empty for none
	CaptchaPool     int              // CAPTCHA_POOL: how many captchas each instance may keep drawn ahead of need (about 2.5 kB each)
	QueueOpens      time.Duration    // QUEUE_OPENS: how long before its start a queue sale's waiting room opens
	QueueOverbook   float64          // QUEUE_OVERBOOK: shoppers let in at a time, per unit of stock left
	QueueRate       int              // QUEUE_RATE: the most shoppers let in per second per item
	QueueTurn       time.Duration    // QUEUE_TURN: how long a shopper let in has to buy
	// QUEUE_TURN_SEEN_WITHIN: how long a turn waits, from its start, for the shopper's page to see it (at
	// least a minute: a browser slows a background tab's timers to about once a minute); seen within it, the
	// turn runs its full QUEUE_TURN from then (docs/api.md, "Your turn, announced").
	QueueTurnSeen   time.Duration
	PhoneRegion     string        // PHONE_REGION: the country of phone numbers written without a country code
	ShopContact     string        // SHOP_CONTACT: where a person writes to the shop (an address, a page): told to a blocked account
	MaxConns        int           // MAX_CONNS: the most connections open at once; 0 (unset) derives it from the open-file limit
	MaxConnsPerAddr int           // MAX_CONNS_PER_ADDR: the most from one client address (IPv6: one /64); trusted proxies exempt
	HeaderTimeout   time.Duration // HEADER_TIMEOUT: how long a request's line and headers may take to arrive
	BodyTimeout     time.Duration // BODY_TIMEOUT: how long a request's body may take to arrive once its headers have
	IdleTimeout     time.Duration // IDLE_TIMEOUT: how long a keep-alive connection may wait for its next request
	PowMaxNumber    int64         // POW_MAXNUMBER: the proof of work's difficulty at rest (ALTCHA's maxnumber); rises with pressure
	ShadowLine      bool          // SHADOW_LINE: on (the default) puts the draw's flagged entrants in the shadow line; off only measures
	Shadow          sift.Thresholds
	ServeRole       string        // SERVE_ROLE: web or worker, or empty for all (the default): what seckill serve runs (roles.go)
	RemindBefore    time.Duration // REMIND_BEFORE: how long before a sale's start its reminder arrives
	Mail            MailConfig    // SMTP_URL or SMTP_HOST, SMTP_PORT, SMTP_USERNAME, SMTP_PASSWORD(_FILE), SMTP_TLS, MAIL_FROM (mailconfig.go)

	// Demo is true when neither DATABASE_URL nor REDIS_URL is set: SQLite and an in-process Redis.
	Demo bool

	// REDIS_WAIT_REPLICAS: the Redis replicas that must have a buy's batch (WAIT) before its buyers are told
	// queued; RedisWaitAuto (auto, the default) asks Redis at start: 1 where every master has a replica, else 0.
	RedisWaitReplicas int
	// REDIS_WAIT_TIMEOUT: how long a buy's batch waits for them; not acknowledged, its buyers are told unconfirmed.
	RedisWaitTimeout time.Duration

	// PAY_SANDBOX_ANYONE_CAN_PAY: yes to serve the sandbox beside real PostgreSQL and Redis on purpose (a
	// trial, a load test): anyone can then pay any order for nothing, so it is never the default.
	PaySandboxAnyone bool
	// IMAGE_HOSTS: the hosts (host or host:port, comma-separated, lowercase) whose https:// addresses an
	// item's image_url may name, and the pages' Content-Security-Policy loads images from; empty: uploads
	// and this site's paths only. A string, as TrustedProxies, so that a Config compares.
	ImageHosts string
}

// imageHostList returns the hosts of IMAGE_HOSTS, or nil for none.
func (c Config) imageHostList() []string {
	if c.ImageHosts == "" {
		return nil
	}
	return strings.Split(c.ImageHosts, ",")
}

// providerURL is the payment provider's API: PAY_PROVIDER_URL, or the sandbox this server mounts.
func (c Config) providerURL() string {
	if c.PayProviderURL != "" {
		return c.PayProviderURL
	}
	return c.BaseURL + "/sandbox"
}

// callbackSecret checks the provider's callbacks (and makes the provider's API key): PAY_SECRET for a
// real provider; the mounted sandbox has one of its own, derived from SESSION_SECRET, so that a sandbox
// anyone can pay in never signs with a real provider's secret.
func (c Config) callbackSecret() string {
	if c.PaySecret != "" && !c.PaySandbox {
		return c.PaySecret
	}
	label := "payment callbacks"
	if c.PaySandbox {
		label = "payment sandbox"
	}
	m := hmac.New(sha256.New, []byte(c.SessionSecret))
	m.Write([]byte(label))
	return hex.EncodeToString(m.Sum(nil))
}

// payProviders reads PAY_PROVIDERS and PAY_CURRENCY. Without PAY_PROVIDERS the older settings say it:
// the sandbox with PAY_SANDBOX=on (demo mode's default), else the http protocol's PAY_PROVIDER_URL.
// PAY_SANDBOX is deprecated beside it: set, it must agree ("sandbox" in the list or not).
func (c *Config) payProviders(p *parser, getenv func(string) string) {
	c.PayCurrency = strings.ToUpper(p.str("PAY_CURRENCY", "CNY"))
	list := strings.TrimSpace(getenv("PAY_PROVIDERS"))
	if list == "" {
		// PAY_PROVIDER_URL names the http provider unless the sandbox is asked for by name (PAY_SANDBOX=on):
		// demo mode's default sandbox gives way to it.
		explicit := strings.TrimSpace(getenv("PAY_SANDBOX")) != ""
		switch {
		case c.PaySandbox && (explicit || c.PayProviderURL == ""):
			c.PayProviders = payment.NameSandbox
		case c.PayProviderURL != "":
			c.PayProviders, c.PaySandbox = payment.NameHTTP, false
		}
		return
	}
	var names []string
	for _, name := range strings.Split(list, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		switch {
		case !slices.Contains(payment.Names, name):
			p.fail("PAY_PROVIDERS", fmt.Sprintf("names %q: must be a comma-separated list of %s", name, strings.Join(payment.Names, ", ")))
		case slices.Contains(names, name):
			p.fail("PAY_PROVIDERS", fmt.Sprintf("names %q twice", name))
		default:
			names = append(names, name)
		}
	}
	c.PayProviders = strings.Join(names, ",")
	withSandbox := slices.Contains(names, payment.NameSandbox)
	if v := strings.TrimSpace(getenv("PAY_SANDBOX")); v != "" && (v == "on") != withSandbox {
		p.fail("PAY_SANDBOX", "is deprecated and disagrees with PAY_PROVIDERS: leave it unset, and name sandbox in PAY_PROVIDERS to mount the sandbox")
	}
	c.PaySandbox = withSandbox
	if slices.Contains(names, payment.NameWeChat) {
		c.WeChatPay = wechatpay.Config{MchID: p.str("WECHAT_PAY_MCH_ID", ""), AppID: p.str("WECHAT_PAY_APP_ID", ""),
			MchSerial: p.str("WECHAT_PAY_MCH_SERIAL", ""), MchKeyPEM: p.secret("WECHAT_PAY_MCH_KEY"), APIv3Key: p.secret("WECHAT_PAY_API_V3_KEY"),
			PublicKeyPEM: p.secret("WECHAT_PAY_PUBLIC_KEY"), PublicKeyID: p.str("WECHAT_PAY_PUBLIC_KEY_ID", ""),
			NotifyURL: c.BaseURL + handlers.NotifyPath + "/" + payment.NameWeChat}
	}
	if slices.Contains(names, payment.NameAlipay) {
		c.Alipay = alipay.Config{AppID: p.str("ALIPAY_APP_ID", ""), PrivateKeyPEM: p.secret("ALIPAY_PRIVATE_KEY"),
			AlipayPublicKey: p.secret("ALIPAY_PUBLIC_KEY"), AppCertPEM: p.secret("ALIPAY_APP_CERT"), RootCertPEM: p.secret("ALIPAY_ROOT_CERT"),
			AlipayCertPEM: p.secret("ALIPAY_PUBLIC_CERT"), NotifyURL: c.BaseURL + handlers.NotifyPath + "/" + payment.NameAlipay}
		sandbox, err := alipay.ParseSandbox(strings.TrimSpace(getenv("ALIPAY_SANDBOX")))
		if err != nil {
			p.fail("ALIPAY_SANDBOX", "must be on or off")
		}
		c.Alipay.Sandbox = sandbox
	}
}

// payProviderNames are the providers the shop offers, in order.
func (c Config) payProviderNames() []string {
	if c.PayProviders == "" {
		return nil
	}
	return strings.Split(c.PayProviders, ",")
}

// offers reports whether the shop offers the named provider.
func (c Config) offers(name string) bool { return slices.Contains(c.payProviderNames(), name) }

// checkPayment checks what serving needs of the payment settings (seckill sandbox-pay and migrate do not).
func (c Config) checkPayment() error {
	var errs []error
	if c.PaySandbox && !c.Demo && !c.PaySandboxAnyone {
		errs = append(errs, errors.New("the sandbox (PAY_PROVIDERS=sandbox, or PAY_SANDBOX=on) with real PostgreSQL and Redis lets anyone pay any order for nothing (the sandbox's Pay button moves no money): "+
			"set PAY_SANDBOX_ANYONE_CAN_PAY=yes as well to run it so on purpose (a trial, a load test), or offer real providers in PAY_PROVIDERS (wechat, alipay, http)"))
	}
	// Play money paying real orders, through another door: a sandbox served apart (seckill sandbox-pay)
	// as the http provider, or Alipay's sandbox.
	if !c.Demo && !c.PaySandboxAnyone && !c.PaySandbox && c.offers(payment.NameHTTP) && strings.HasSuffix(c.PayProviderURL, "/sandbox") {
		errs = append(errs, errors.New("PAY_PROVIDER_URL names a sandbox (it ends in /sandbox), whose Pay button moves no money, for real PostgreSQL and Redis: "+
			"set PAY_SANDBOX_ANYONE_CAN_PAY=yes as well to run it so on purpose (a trial, a load test), or name a real provider's API"))
	}
	if !c.Demo && !c.PaySandboxAnyone && c.offers(payment.NameAlipay) && c.Alipay.Sandbox {
		errs = append(errs, errors.New("ALIPAY_SANDBOX=on pays real orders with Alipay's sandbox money: "+
			"set PAY_SANDBOX_ANYONE_CAN_PAY=yes as well to run it so on purpose (a trial), or ALIPAY_SANDBOX=off for real money"))
	}
	real := slices.DeleteFunc(c.payProviderNames(), func(n string) bool { return n == payment.NameSandbox })
	switch {
	case len(c.PayProviders) == 0:
		errs = append(errs, errors.New("no payment provider: set PAY_PROVIDERS to the providers shoppers pay with (wechat, alipay, http), or to sandbox to try the product"))
	case c.PaySandbox && len(real) > 0:
		errs = append(errs, fmt.Errorf("PAY_PROVIDERS offers the sandbox beside %s: a shopper could choose the sandbox and take the goods for nothing; never both", strings.Join(real, ", ")))
	}
	if c.offers(payment.NameWeChat) {
		errs = append(errs, c.WeChatPay.Check()...)
	}
	if c.offers(payment.NameAlipay) {
		errs = append(errs, c.Alipay.Check()...)
	}
	if (c.offers(payment.NameWeChat) || c.offers(payment.NameAlipay)) && c.PayCurrency != "CNY" {
		errs = append(errs, fmt.Errorf("PAY_CURRENCY is %s, but WeChat Pay and Alipay take CNY here (the shop's cents are fen): set PAY_CURRENCY=CNY, or offer other providers", c.PayCurrency))
	}
	switch {
	case !c.offers(payment.NameHTTP) && !c.PaySandbox:
		// No http-protocol provider: PAY_PROVIDER_URL and PAY_SECRET have nothing to do.
		if c.PayProviderURL != "" || c.PaySecret != "" {
			errs = append(errs, errors.New("PAY_PROVIDER_URL and PAY_SECRET are for the http provider, which PAY_PROVIDERS does not name: add http to PAY_PROVIDERS or unset them"))
		}
	case c.PaySandbox && c.PaySecret != "":
		errs = append(errs, errors.New("PAY_SECRET is a real provider's secret: the built-in sandbox signs with one of its own; set one or the other"))
	case c.PaySandbox && c.PayProviderURL != "" && !strings.HasSuffix(c.PayProviderURL, "/sandbox"):
		errs = append(errs, errors.New("PAY_PROVIDER_URL names a real provider, but the sandbox is mounted (PAY_PROVIDERS=sandbox, or PAY_SANDBOX=on): never both (with the sandbox, PAY_PROVIDER_URL may only name its address, ending in /sandbox)"))
	case !c.PaySandbox && c.PayProviderURL == "":
		errs = append(errs, errors.New("PAY_PROVIDER_URL is required with the http provider (PAY_PROVIDERS=http): the API of the provider that speaks this project's protocol"))
	case !c.PaySandbox && c.PaySecret == "":
		errs = append(errs, errors.New("PAY_SECRET is required with PAY_PROVIDER_URL: the provider's secret, which checks its callbacks"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("configuration: %w", errors.Join(errs...))
	}
	return nil
}

// role is what seckill serve runs: SERVE_ROLE, all when it is empty.
func (c Config) role() string {
	if c.ServeRole == "" {
		return RoleAll
	}
	return c.ServeRole
}

// SecureCookies reports whether cookies must be marked Secure: the site is served over TLS.
func (c Config) SecureCookies() bool { return strings.HasPrefix(c.BaseURL, "https://") }

// redisAddrs returns the cluster addresses when RedisURL names several nodes, else nil.
func (c Config) redisAddrs() []string {
	if !strings.Contains(c.RedisURL, ",") {
		return nil
	}
	var addrs []string
	for _, a := range strings.Split(c.RedisURL, ",") {
		addrs = append(addrs, strings.TrimPrefix(strings.TrimSpace(a), "redis://"))
	}
	return addrs
}

// redisSentinel is true when REDIS_URL names Redis Sentinels and a master
// (redis://sentinel:26379/0?master_name=seckill&addr=sentinel2:26379&addr=sentinel3:26379).
func (c Config) redisSentinel() bool {
	u, err := url.Parse(c.RedisURL)
	return err == nil && !strings.Contains(c.RedisURL, ",") && u.Query().Get("master_name") != ""
}

// listenAddr is the address the server listens on: LISTEN_HOST and PORT.
func (c Config) listenAddr() string { return net.JoinHostPort(c.ListenHost, strconv.Itoa(c.Port)) }

// proxies returns the trusted proxies' addresses and ranges, or nil when TRUSTED_PROXIES is empty.
func (c Config) proxies() []string {
	if c.TrustedProxies == "" {
		return nil
	}
	return strings.Split(c.TrustedProxies, ",")
}

// connReserve is how many of the open-file limit's descriptors are left to everything but the
// public port's connections when MAX_CONNS is unset: PostgreSQL's pool (20), Redis's (256, or 64 a
// node of a cluster), the operators' listener, files, and a margin. A tenth of the limit, at least
// 512, at most half of it.
func connReserve(nofile uint64) int {
	n := int(min(nofile, 100_000_000))
	return min(max(n/10, 512), n/2)
}

// connCap is the most connections the public port holds at once: MAX_CONNS, or the open-file limit
// nofile less connReserve.
func (c Config) connCap(nofile uint64) int {
	if c.MaxConns > 0 {
		return c.MaxConns
	}
	return max(int(min(nofile, 100_000_000))-connReserve(nofile), 1)
}

// proxyPrefixes are the trusted proxies as address ranges (a single address is a range of one).
func (c Config) proxyPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, v := range c.proxies() {
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(v); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out
}

// LoadConfig reads the configuration through getenv (os.Getenv in production) and validates it. The error
// names every bad variable.
func LoadConfig(getenv func(string) string) (Config, error) {
	p := parser{getenv: getenv}
	c := Config{
		Port:            p.int("PORT", 8080, 1, 65535),
		DatabaseURL:     strings.TrimSpace(getenv("DATABASE_URL")),
		RedisURL:        strings.TrimSpace(getenv("REDIS_URL")),
		SessionSecret:   getenv("SESSION_SECRET"),
		SessionTTL:      p.duration("SESSION_TTL", 7*24*time.Hour),
		SessionMax:      p.int("SESSION_MAX", auth.DefaultMaxSessions, 1, 1000),
		RateLimitIP:     p.oneOf("RATE_LIMIT_IP", "on", "on", "off") == "on",
		GroupCommit:     p.oneOf("GROUP_COMMIT", "on", "on", "off") == "on",
		BcryptCost:      p.int("BCRYPT_COST", 12, bcrypt.MinCost, bcrypt.MaxCost),
		PayTimeout:      p.duration("PAY_TIMEOUT", 15*time.Minute),
		PreheatWindow:   p.duration("PREHEAT_WINDOW", 10*time.Minute),
		QRTTL:           p.duration("QR_TTL", 120*time.Second),
		GeoIPDB:         p.str("GEOIP_DB", ""),
		NodeID:          int64(p.int("NODE_ID", -1, 0, 1023)),
		DataDir:         p.str("DATA_DIR", "./data"),
		LogLevel:        p.oneOf("LOG_LEVEL", "info", "debug", "info", "warn", "error"),
		LogFormat:       p.oneOf("LOG_FORMAT", "text", "text", "json"),
		BodyLimit:       p.int("BODY_LIMIT", 64<<10, 1024, 64<<20),
		ShutdownTimeout: p.duration("SHUTDOWN_TIMEOUT", 10*time.Second),
		PayProviderURL:  strings.TrimRight(strings.TrimSpace(getenv("PAY_PROVIDER_URL")), "/"),
		PaySecret:       p.secret("PAY_SECRET"),
		PayPollInterval: p.duration("PAY_POLL_INTERVAL", 2*time.Second),
		ClaimIdle:       p.duration("ORDER_CLAIM_IDLE", 30*time.Second),
		SaleKeep:        p.duration("SALE_KEEP", 24*time.Hour),
		MetricsListen:   p.str("METRICS_LISTEN", "127.0.0.1:9090"),
		CaptchaPool:     p.int("CAPTCHA_POOL", 10000, 0, 1_000_000),
		QueueOpens:      p.duration("QUEUE_OPENS", 10*time.Minute),
		QueueOverbook:   p.float("QUEUE_OVERBOOK", 1.5, 1, 100),
		QueueRate:       p.int("QUEUE_RATE", 500, 1, 1_000_000),
		QueueTurn:       p.duration("QUEUE_TURN", time.Minute),
		QueueTurnSeen:   p.atLeast("QUEUE_TURN_SEEN_WITHIN", 90*time.Second, time.Minute),
		RemindBefore:    p.duration("REMIND_BEFORE", 10*time.Minute),
		PhoneRegion:     p.region("PHONE_REGION", "CN"),
		MaxConns:        p.int("MAX_CONNS", 0, 0, 10_000_000),
		MaxConnsPerAddr: p.int("MAX_CONNS_PER_ADDR", 512, 0, 10_000_000),
		HeaderTimeout:   p.duration("HEADER_TIMEOUT", 5*time.Second),
		BodyTimeout:     p.duration("BODY_TIMEOUT", 30*time.Second),
		IdleTimeout:     p.duration("IDLE_TIMEOUT", 60*time.Second),
		PowMaxNumber:    int64(p.int("POW_MAXNUMBER", pow.DefaultMaxNumber, pow.DemoFloor, 1_000_000_000)),
		ShadowLine:      p.oneOf("SHADOW_LINE", "on", "on", "off") == "on",
		// The thresholds at which a trace of bulk counts as a signal; two signals flag (docs/security.md).
		Shadow: sift.Thresholds{
			PrefixMin:      p.int("SHADOW_PREFIX_MIN", sift.Defaults().PrefixMin, 2, 1_000_000),
			PrefixFactor:   p.float("SHADOW_PREFIX_FACTOR", sift.Defaults().PrefixFactor, 1, 1_000_000),
			Burst:          p.int("SHADOW_BURST", sift.Defaults().Burst, 2, 1_000_000),
			BurstWindow:    p.duration("SHADOW_BURST_WINDOW", sift.Defaults().BurstWindow),
			DeviceAccounts: p.int("SHADOW_DEVICE_ACCOUNTS", sift.Defaults().DeviceAccounts, 2, 1_000_000),
			DeviceRefused:  p.int("SHADOW_DEVICE_REFUSED", sift.Defaults().DeviceRefused, 1, 1_000_000),
		},
		// Kept empty for all, so that the default Config has no role set: the whole shop, as before roles.
		ServeRole: strings.TrimPrefix(p.oneOf("SERVE_ROLE", RoleAll, RoleAll, RoleWeb, RoleWorker), RoleAll),
	}
	c.TrustedProxies = p.proxies("TRUSTED_PROXIES")
	c.RedisWaitReplicas = p.waitReplicas("REDIS_WAIT_REPLICAS")
	if c.RedisWaitTimeout = p.duration("REDIS_WAIT_TIMEOUT", 100*time.Millisecond); c.RedisWaitTimeout > stock.MaxWaitTimeout {
		p.fail("REDIS_WAIT_TIMEOUT", fmt.Sprintf("must be at most %v (a buyer waits for it), got %v", stock.MaxWaitTimeout, c.RedisWaitTimeout))
	}
	c.ShopContact = p.contact("SHOP_CONTACT")
	if c.ListenHost = strings.TrimSpace(getenv("LISTEN_HOST")); c.ListenHost != "" && net.ParseIP(c.ListenHost) == nil {
		p.fail("LISTEN_HOST", fmt.Sprintf("must be an IP address such as 127.0.0.1 (empty: every interface), got %q", c.ListenHost))
	}
	c.BaseURL = strings.TrimRight(p.str("BASE_URL", fmt.Sprintf("http://localhost:%d", c.Port)), "/")
	p.httpURL("BASE_URL", c.BaseURL)
	c.Mail = p.mailConfig(c.BaseURL)

	switch {
	case c.DatabaseURL == "" && c.RedisURL == "":
		c.Demo = true
		// A demo's passwords are published: it answers this machine only, unless told otherwise.
		if c.ListenHost == "" {
			c.ListenHost = "127.0.0.1"
		}
	case c.DatabaseURL == "":
		p.fail("DATABASE_URL", "is required when REDIS_URL is set (leave both empty for demo mode)")
	case c.RedisURL == "":
		p.fail("REDIS_URL", "is required when DATABASE_URL is set (leave both empty for demo mode)")
	}
	if c.Demo && c.ServeRole != "" {
		// The demo's Redis lives in its process: no other process could take the orders a web-only demo
		// queues, nor feed a worker-only one.
		p.fail("SERVE_ROLE", fmt.Sprintf("must be all in demo mode (its Redis is inside the process, so no other process can run the other half), got %q", c.ServeRole))
	}
	if c.DatabaseURL != "" {
		if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			p.fail("DATABASE_URL", "must be a postgres:// URL")
		}
	}
	if c.RedisURL != "" {
		if addrs := c.redisAddrs(); addrs != nil {
			for _, a := range addrs {
				if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
					p.fail("REDIS_URL", fmt.Sprintf("cluster address %q is not host:port", a))
				}
			}
		} else if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			p.fail("REDIS_URL", "must be redis://host:port/db, redis://sentinel:port/db?master_name=NAME&addr=sentinel2:port for Redis Sentinel, or comma-separated host:port addresses of a cluster")
		} else if c.redisSentinel() {
			if _, err := redis.ParseFailoverURL(c.RedisURL); err != nil {
				p.fail("REDIS_URL", fmt.Sprintf("is not a Sentinel URL go-redis reads (redis://sentinel:port/db?master_name=NAME&addr=sentinel2:port): %v", err))
			}
		} else if _, err := redis.ParseURL(c.RedisURL); err != nil {
			p.fail("REDIS_URL", fmt.Sprintf("must be redis://host:port/db: %v", err))
		}
	}
	if !c.Demo && len(c.SessionSecret) < 32 {
		p.fail("SESSION_SECRET", "must be at least 32 characters outside demo mode (for example: openssl rand -hex 32)")
	}
	if c.LineSeedKey = p.secret("LINE_SEED_KEY"); c.LineSeedKey != "" {
		if _, err := parseSeedKey(c.LineSeedKey); err != nil {
			p.fail("LINE_SEED_KEY", err.Error())
		}
	}
	if c.PayProviderURL != "" {
		p.httpURL("PAY_PROVIDER_URL", c.PayProviderURL)
	}
	if c.PaySecret != "" && len(c.PaySecret) < 16 {
		p.fail("PAY_SECRET", "must be at least 16 characters")
	}
	c.PaySandbox = p.oneOf("PAY_SANDBOX", map[bool]string{true: "on", false: "off"}[c.Demo], "on", "off") == "on"
	c.payProviders(&p, getenv)
	c.PaySandboxAnyone = p.oneOf("PAY_SANDBOX_ANYONE_CAN_PAY", "no", "yes", "no") == "yes"
	c.ImageHosts = p.hosts("IMAGE_HOSTS")
	if c.PayNotifyURL = strings.TrimSpace(getenv("PAY_NOTIFY_URL")); c.PayNotifyURL != "" {
		p.httpURL("PAY_NOTIFY_URL", c.PayNotifyURL)
	}
	if c.NginxStatusURL = strings.TrimSpace(getenv("NGINX_STATUS_URL")); c.NginxStatusURL != "" {
		p.httpURL("NGINX_STATUS_URL", c.NginxStatusURL)
	}
	c.NginxEdgeLog = strings.TrimSpace(getenv("NGINX_EDGE_LOG"))
	if c.MetricsListen == "off" {
		c.MetricsListen = ""
	} else if _, port, err := net.SplitHostPort(c.MetricsListen); err != nil || port == "" {
		p.fail("METRICS_LISTEN", fmt.Sprintf("must be host:port such as 127.0.0.1:9090, or off, got %q", c.MetricsListen))
	}
	if !c.Demo && c.PowMaxNumber < pow.Floor {
		// No "off" switch in production: a proof that costs nothing lets a scalper register and join for nothing.
		p.fail("POW_MAXNUMBER", fmt.Sprintf("must be at least %d outside demo mode (the proof of work's floor: below it a scalper's accounts cost nothing), got %d", pow.Floor, c.PowMaxNumber))
	}
	if c.PayTimeout < time.Minute {
		p.fail("PAY_TIMEOUT", "must be at least 1m")
	}
	if c.SessionTTL < 5*time.Minute {
		p.fail("SESSION_TTL", "must be at least 5m")
	}
	if c.QRTTL < 10*time.Second {
		p.fail("QR_TTL", "must be at least 10s")
	}
	if c.HeaderTimeout > c.BodyTimeout {
		p.fail("HEADER_TIMEOUT", "must not be longer than BODY_TIMEOUT")
	}
	if c.ShutdownTimeout <= 0 {
		p.fail("SHUTDOWN_TIMEOUT", "must be positive")
	}
	if len(p.errs) > 0 {
		return Config{}, fmt.Errorf("configuration: %w", errors.Join(p.errs...))
	}
	return c, nil
}

// parser collects every bad variable, so that one start reports all of them.
type parser struct {
	getenv func(string) string
	errs   []error
}

// secret reads a secret from name's variable, or from the file name_FILE names (a mounted secret); not
// both. A file's last line break is not part of it.
func (p *parser) secret(name string) string {
	v, file := p.getenv(name), strings.TrimSpace(p.getenv(name+"_FILE"))
	if file == "" {
		return v
	}
	if v != "" {
		p.fail(name+"_FILE", "and "+name+" are both set: set one")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		p.fail(name+"_FILE", fmt.Sprintf("cannot be read: %v", err))
		return ""
	}
	return strings.TrimRight(string(b), "\r\n")
}

func (p *parser) fail(name, why string) { p.errs = append(p.errs, fmt.Errorf("%s %s", name, why)) }

// httpURL checks that v is an absolute http:// or https:// URL with nothing in it that is not part of
// one (spaces, control characters).
func (p *parser) httpURL(name, v string) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		p.fail(name, "must be an absolute http:// or https:// URL")
	}
}

// region reads an ISO 3166 country code that the phone number rules know (CN, US, GB, ...).
func (p *parser) region(name, def string) string {
	v := strings.ToUpper(p.str(name, def))
	if !phonenumbers.GetSupportedRegions()[v] {
		p.fail(name, fmt.Sprintf("must be a two-letter country code (ISO 3166) such as CN or US, got %q", v))
		return def
	}
	return v
}

// contact reads a contact shown to people as it is (an e-mail address, a page's address, a phone
// number): one line of at most 200 characters, or empty for none.
func (p *parser) contact(name string) string {
	v := strings.TrimSpace(p.getenv(name))
	if utf8.RuneCountInString(v) > 200 || strings.ContainsFunc(v, unicode.IsControl) || !utf8.ValidString(v) {
		p.fail(name, "must be one line of at most 200 characters, such as support@shop.example")
		return ""
	}
	return v
}

func (p *parser) str(name, def string) string {
	if v := strings.TrimSpace(p.getenv(name)); v != "" {
		return v
	}
	return def
}

func (p *parser) int(name string, def, min, max int) int {
	v := strings.TrimSpace(p.getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		p.fail(name, fmt.Sprintf("must be a whole number from %d to %d, got %q", min, max, v))
		return def
	}
	return n
}

// RedisWaitAuto is REDIS_WAIT_REPLICAS=auto: the count is asked of Redis at start (waitForReplicas in app.go).
const RedisWaitAuto = -1

// waitReplicas reads REDIS_WAIT_REPLICAS: auto (the default) or a count of replicas from 0 to 16.
func (p *parser) waitReplicas(name string) int {
	v := strings.ToLower(strings.TrimSpace(p.getenv(name)))
	if v == "" || v == "auto" {
		return RedisWaitAuto
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 16 {
		p.fail(name, fmt.Sprintf("must be auto or a whole number from 0 to 16, got %q", v))
		return RedisWaitAuto
	}
	return n
}

func (p *parser) float(name string, def, min, max float64) float64 {
	v := strings.TrimSpace(p.getenv(name))
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < min || f > max {
		p.fail(name, fmt.Sprintf("must be a number from %g to %g, got %q", min, max, v))
		return def
	}
	return f
}

func (p *parser) duration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(p.getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		p.fail(name, fmt.Sprintf("must be a positive duration such as 90s or 15m, got %q", v))
		return def
	}
	return d
}

// atLeast reads a duration as duration does, refusing one shorter than least.
func (p *parser) atLeast(name string, def, least time.Duration) time.Duration {
	d := p.duration(name, def)
	if d < least {
		p.fail(name, fmt.Sprintf("must be at least %v, got %v", least, d))
		return def
	}
	return d
}

// proxies reads a comma-separated list of IP addresses and CIDR ranges and returns it in canonical form
// (the form Fiber compares a connection's address with), or "" for none.
func (p *parser) proxies(name string) string {
	var out []string
	for _, v := range strings.Split(p.getenv(name), ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if strings.Contains(v, "/") {
			if _, n, err := net.ParseCIDR(v); err == nil {
				out = append(out, n.String())
				continue
			}
		} else if ip := net.ParseIP(v); ip != nil {
			out = append(out, ip.String())
			continue
		}
		p.fail(name, fmt.Sprintf("must be comma-separated IP addresses or CIDR ranges, got %q", v))
	}
	return strings.Join(out, ",")
}

// hosts reads a comma-separated list of host names (with a port if need be), lowercased: each must be a
// host and nothing more (no scheme, path, user or wildcard), as a Content-Security-Policy source names it.
func (p *parser) hosts(name string) string {
	var out []string
	for _, v := range strings.Split(p.getenv(name), ",") {
		v = strings.ToLower(strings.TrimSpace(v))
		if v == "" {
			continue
		}
		u, err := url.Parse("https://" + v)
		if err != nil || u.Host != v || u.Hostname() == "" || strings.ContainsAny(v, "*;'\"") {
			p.fail(name, fmt.Sprintf("must be comma-separated host names such as img.example.com (no https://, no path), got %q", v))
			continue
		}
		out = append(out, v)
	}
	return strings.Join(out, ",")
}

func (p *parser) oneOf(name, def string, allowed ...string) string {
	v := strings.ToLower(strings.TrimSpace(p.getenv(name)))
	if v == "" {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.fail(name, fmt.Sprintf("must be one of %s, got %q", strings.Join(allowed, ", "), v))
	return def
}
