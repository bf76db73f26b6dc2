package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill/payment/alipay/alipayfake"
	"seckill/payment/wechatpay/wechatfake"
	"seckill/pow"
	"seckill/sift"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

const goodSecret = "0123456789abcdef0123456789abcdef"

func TestLoadConfigDefaultsAreDemoMode(t *testing.T) {
	cfg, err := LoadConfig(envOf(nil))
	if err != nil {
		t.Fatalf("LoadConfig with no variables: %v", err)
	}
	if !cfg.Demo {
		t.Error("with neither DATABASE_URL nor REDIS_URL the configuration must be demo mode")
	}
	want := Config{Port: 8080, ListenHost: "127.0.0.1", PaySandbox: true, PayProviders: "sandbox", PayCurrency: "CNY", MetricsListen: "127.0.0.1:9090", CaptchaPool: 10000, QueueOpens: 10 * time.Minute, QueueOverbook: 1.5, QueueRate: 500, QueueTurn: time.Minute, QueueTurnSeen: 90 * time.Second, PhoneRegion: "CN", MaxConnsPerAddr: 512, HeaderTimeout: 5 * time.Second, BodyTimeout: 30 * time.Second, IdleTimeout: time.Minute, PowMaxNumber: pow.DefaultMaxNumber, ShadowLine: true, Shadow: sift.Defaults(), BaseURL: "http://localhost:8080", SessionTTL: 7 * 24 * time.Hour, SessionMax: 20, RateLimitIP: true,
		GroupCommit: true, RedisWaitReplicas: RedisWaitAuto, RedisWaitTimeout: 100 * time.Millisecond, BcryptCost: 12, PayTimeout: 15 * time.Minute,
		PreheatWindow: 10 * time.Minute, QRTTL: 120 * time.Second, NodeID: -1, DataDir: "./data", LogLevel: "info",
		LogFormat: "text", BodyLimit: 64 << 10, ShutdownTimeout: 10 * time.Second, PayPollInterval: 2 * time.Second, ClaimIdle: 30 * time.Second, SaleKeep: 24 * time.Hour, Demo: true,
		Mail: MailConfig{Port: 587, TLS: "starttls", From: "Seckill <noreply@localhost>", Rate: 100}}
	want.RemindBefore = 10 * time.Minute
	if cfg != want {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestLoadConfigGoodValues(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, c Config)
	}{
		{"shop contact", map[string]string{"SHOP_CONTACT": "  客服 help@shop.example, 400-800-1234  "}, func(t *testing.T, c Config) {
			if c.ShopContact != "客服 help@shop.example, 400-800-1234" {
				t.Errorf("SHOP_CONTACT read as %q", c.ShopContact)
			}
		}},
		{"production", map[string]string{
			"DATABASE_URL": "postgres://app@db:5432/seckill", "REDIS_URL": "redis://cache:6379/2",
			"SESSION_SECRET": goodSecret, "PORT": "9000", "BCRYPT_COST": "4", "PAY_TIMEOUT": "30m",
			"PREHEAT_WINDOW": "1h", "QR_TTL": "90s", "NODE_ID": "1023", "BASE_URL": "https://shop.example.com/",
			"RATE_LIMIT_IP": "off", "SESSION_TTL": "24h", "ORDER_CLAIM_IDLE": "5s",
		}, func(t *testing.T, c Config) {
			if c.RateLimitIP || c.SessionTTL != 24*time.Hour || !c.SecureCookies() {
				t.Errorf("RATE_LIMIT_IP=off, SESSION_TTL=24h, https BASE_URL: got %+v", c)
			}
			if c.Demo || c.Port != 9000 || c.BcryptCost != 4 || c.PayTimeout != 30*time.Minute ||
				c.PreheatWindow != time.Hour || c.QRTTL != 90*time.Second || c.NodeID != 1023 || c.ClaimIdle != 5*time.Second {
				t.Errorf("got %+v", c)
			}
			if c.BaseURL != "https://shop.example.com" {
				t.Errorf("BaseURL = %q, want the trailing slash trimmed", c.BaseURL)
			}
			if c.redisAddrs() != nil {
				t.Errorf("a redis:// URL is one server, got cluster addresses %v", c.redisAddrs())
			}
		}},
		{"sentinel", map[string]string{
			"DATABASE_URL": "postgresql://db/seckill", "SESSION_SECRET": goodSecret,
			"REDIS_URL": "redis://s1:26379/0?master_name=seckill&addr=s2:26379&addr=s3:26379",
		}, func(t *testing.T, c Config) {
			if !c.redisSentinel() || c.redisAddrs() != nil {
				t.Errorf("a URL with master_name is Redis Sentinel, got sentinel %v, cluster %v", c.redisSentinel(), c.redisAddrs())
			}
		}},
		{"cluster", map[string]string{
			"DATABASE_URL": "postgresql://db/seckill", "REDIS_URL": "127.0.0.1:7001, 127.0.0.1:7002,127.0.0.1:7003",
			"SESSION_SECRET": goodSecret,
		}, func(t *testing.T, c Config) {
			got := strings.Join(c.redisAddrs(), " ")
			if got != "127.0.0.1:7001 127.0.0.1:7002 127.0.0.1:7003" {
				t.Errorf("redisAddrs = %q", got)
			}
		}},
		{"trusted proxies", map[string]string{"TRUSTED_PROXIES": " 127.0.0.1, 10.1.2.3/16 ,::1,, 0:0:0:0:0:ffff:c000:0201"},
			func(t *testing.T, c Config) {
				// Canonical forms: Fiber compares them with the connection's address as text.
				got := strings.Join(c.proxies(), " ")
				if got != "127.0.0.1 10.1.0.0/16 ::1 192.0.2.1" {
					t.Errorf("Proxies = %q", got)
				}
			}},
		{"listen host", map[string]string{"LISTEN_HOST": "127.0.0.1", "PORT": "8081"}, func(t *testing.T, c Config) {
			if c.listenAddr() != "127.0.0.1:8081" {
				t.Errorf("listenAddr = %q", c.listenAddr())
			}
		}},
		{"listen host ipv6", map[string]string{"LISTEN_HOST": "::1"}, func(t *testing.T, c Config) {
			if c.listenAddr() != "[::1]:8080" {
				t.Errorf("listenAddr = %q", c.listenAddr())
			}
		}},
		{"no trusted proxies", map[string]string{"TRUSTED_PROXIES": " "}, func(t *testing.T, c Config) {
			if c.proxies() != nil {
				t.Errorf("Proxies = %q, want none", c.proxies())
			}
		}},
		{"base url follows port", map[string]string{"PORT": "8181"}, func(t *testing.T, c Config) {
			if c.BaseURL != "http://localhost:8181" {
				t.Errorf("BaseURL = %q", c.BaseURL)
			}
			if c.listenAddr() != "127.0.0.1:8181" {
				t.Errorf("listenAddr = %q, want this machine only (demo mode)", c.listenAddr())
			}
		}},
		{"a demo answers the network only when told", map[string]string{"LISTEN_HOST": "0.0.0.0"}, func(t *testing.T, c Config) {
			if c.listenAddr() != "0.0.0.0:8080" {
				t.Errorf("listenAddr = %q, want every interface", c.listenAddr())
			}
		}},
		{"outside demo mode the sandbox is off and the listener is every interface", map[string]string{
			"DATABASE_URL": "postgres://app@db:5432/seckill", "REDIS_URL": "redis://cache:6379/2", "SESSION_SECRET": goodSecret,
		}, func(t *testing.T, c Config) {
			if c.PaySandbox || c.listenAddr() != ":8080" || c.MetricsListen != "127.0.0.1:9090" {
				t.Errorf("PaySandbox = %v, listenAddr = %q, MetricsListen = %q", c.PaySandbox, c.listenAddr(), c.MetricsListen)
			}
			if err := c.checkPayment(); err == nil || !strings.Contains(err.Error(), "PAY_PROVIDERS") {
				t.Errorf("serving with no payment provider and no sandbox: %v, want an error naming PAY_PROVIDERS", err)
			}
		}},
		{"payment settings that cannot work are refused at serve", map[string]string{}, func(t *testing.T, _ Config) {
			keys := providerKeyFiles(t)
			// docs/payments.md's table of the settings' combinations, each as an operator sets it.
			for _, tt := range []struct {
				env  string // space-separated NAME=value
				want string // "" for a good combination, else what the refusal names
			}{
				{"PAY_SANDBOX=on PAY_SANDBOX_ANYONE_CAN_PAY=yes", ""},
				{"PAY_PROVIDERS=sandbox PAY_SANDBOX_ANYONE_CAN_PAY=yes", ""},
				{"PAY_SANDBOX=on PAY_SANDBOX_ANYONE_CAN_PAY=yes PAY_PROVIDER_URL=http://10.0.0.5:8080/sandbox", ""},
				{"PAY_SANDBOX=on", "PAY_SANDBOX_ANYONE_CAN_PAY"}, // beside real services, only by the second switch
				{"PAY_PROVIDERS=sandbox", "PAY_SANDBOX_ANYONE_CAN_PAY"},
				{"PAY_PROVIDER_URL=https://pay.example/v1 PAY_SECRET=a-real-providers-secret", ""},
				{"PAY_PROVIDERS=http PAY_PROVIDER_URL=https://pay.example/v1 PAY_SECRET=a-real-providers-secret", ""},
				{"PAY_SANDBOX=on PAY_SANDBOX_ANYONE_CAN_PAY=yes PAY_SECRET=a-real-providers-secret", "PAY_SECRET"},
				{"PAY_SANDBOX=on PAY_SANDBOX_ANYONE_CAN_PAY=yes PAY_PROVIDER_URL=https://pay.example/v1", "PAY_PROVIDER_URL"},
				{"PAY_PROVIDER_URL=https://pay.example/v1", "PAY_SECRET"},
				{"PAY_PROVIDERS=http", "PAY_PROVIDER_URL"},
				{"", "PAY_PROVIDERS"},
				{"PAY_PROVIDERS=http PAY_PROVIDER_URL=https://pay.example/sandbox PAY_SECRET=a-real-providers-secret", "PAY_SANDBOX_ANYONE_CAN_PAY"}, // seckill sandbox-pay
				{"PAY_PROVIDERS=http PAY_PROVIDER_URL=https://pay.example/sandbox PAY_SECRET=a-real-providers-secret PAY_SANDBOX_ANYONE_CAN_PAY=yes", ""},
				{"PAY_PROVIDER_URL=https://pay.example/v1 PAY_SECRET_FILE={secret}", ""},
				{"PAY_PROVIDERS=sandbox,http PAY_SANDBOX_ANYONE_CAN_PAY=yes PAY_PROVIDER_URL=https://pay.example/v1 PAY_SECRET=a-real-providers-secret", "sandbox beside http"},
				{"PAY_PROVIDERS=paypal", "PAY_PROVIDERS"},
				{"PAY_PROVIDERS=http,http PAY_PROVIDER_URL=https://pay.example/v1 PAY_SECRET=a-real-providers-secret", "twice"},
				{"PAY_PROVIDERS=http PAY_SANDBOX=on PAY_PROVIDER_URL=https://pay.example/v1 PAY_SECRET=a-real-providers-secret", "PAY_SANDBOX"},
				{"PAY_PROVIDERS=sandbox PAY_SANDBOX=off PAY_SANDBOX_ANYONE_CAN_PAY=yes", "PAY_SANDBOX"},
				{"PAY_PROVIDERS=sandbox PAY_SANDBOX=on PAY_SANDBOX_ANYONE_CAN_PAY=yes", ""},
				{"PAY_PROVIDERS=sandbox PAY_PROVIDER_URL=https://pay.example/v1 PAY_SECRET=a-real-providers-secret PAY_SANDBOX_ANYONE_CAN_PAY=yes", "PAY_"},
				// WeChat Pay and Alipay: their keys from files, the shop's callbacks at an https BASE_URL, CNY.
				{"PAY_PROVIDERS=wechat BASE_URL=https://shop.example {wechat}", ""},
				{"PAY_PROVIDERS=alipay BASE_URL=https://shop.example {alipay}", ""},
				{"PAY_PROVIDERS=wechat,alipay BASE_URL=https://shop.example {wechat} {alipay} ALIPAY_SANDBOX=off", ""},
				{"PAY_PROVIDERS=wechat,alipay BASE_URL=https://shop.example PAY_CURRENCY=CNY {wechat} {alipay}", ""},
				{"PAY_PROVIDERS=wechat {wechat}", "BASE_URL"}, // its callbacks at http://localhost:8080
				{"PAY_PROVIDERS=alipay {alipay}", "BASE_URL"},
				{"PAY_PROVIDERS=wechat BASE_URL=https://shop.example PAY_CURRENCY=USD {wechat}", "PAY_CURRENCY"},
				{"PAY_PROVIDERS=wechat,sandbox BASE_URL=https://shop.example PAY_SANDBOX_ANYONE_CAN_PAY=yes {wechat}", "sandbox beside wechat"},
				{"PAY_PROVIDERS=wechat BASE_URL=https://shop.example WECHAT_PAY_MCH_ID=1900000001 WECHAT_PAY_APP_ID=wxd930ea5d5a258f4f WECHAT_PAY_MCH_SERIAL=5157F09EFDC096DE15EBE81A47057A72 WECHAT_PAY_API_V3_KEY_FILE={v3key}", "WECHAT_PAY_MCH_KEY"},
				{"PAY_PROVIDERS=wechat BASE_URL=https://shop.example {wechat} WECHAT_PAY_MCH_KEY_FILE={junk}", "WECHAT_PAY_MCH_KEY"},
				{"PAY_PROVIDERS=wechat BASE_URL=https://shop.example {wechat} WECHAT_PAY_MCH_KEY=inline", "WECHAT_PAY_MCH_KEY_FILE"}, // both
				{"PAY_PROVIDERS=wechat BASE_URL=https://shop.example {wechat} WECHAT_PAY_API_V3_KEY_FILE={missing}", "WECHAT_PAY_API_V3_KEY_FILE"},
				{"PAY_PROVIDERS=alipay BASE_URL=https://shop.example ALIPAY_APP_ID=2021000000000001 ALIPAY_PRIVATE_KEY_FILE={alikey}", "ALIPAY_PUBLIC_KEY"},
				{"PAY_PROVIDERS=alipay BASE_URL=https://shop.example {alipay} ALIPAY_PUBLIC_KEY_FILE={junk}", "ALIPAY_PUBLIC_KEY"},
				{"PAY_PROVIDERS=alipay BASE_URL=https://shop.example {alipay} ALIPAY_SANDBOX=maybe", "ALIPAY_SANDBOX"},
				{"PAY_PROVIDERS=alipay BASE_URL=https://shop.example {alipay} ALIPAY_SANDBOX=on", "PAY_SANDBOX_ANYONE_CAN_PAY"}, // play money for real orders
				{"PAY_PROVIDERS=alipay BASE_URL=https://shop.example {alipay} ALIPAY_SANDBOX=on PAY_SANDBOX_ANYONE_CAN_PAY=yes", ""},
			} {
				env := map[string]string{"DATABASE_URL": "postgres://app@db:5432/seckill", "REDIS_URL": "redis://cache:6379/2", "SESSION_SECRET": goodSecret}
				for _, kv := range strings.Fields(keys.Replace(tt.env)) {
					k, v, _ := strings.Cut(kv, "=")
					env[k] = v
				}
				c, err := LoadConfig(envOf(env))
				if err == nil {
					err = c.checkPayment()
				}
				if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
					t.Errorf("%s: %v, want an error naming %q", tt.env, err, tt.want)
				}
			}
		}},
		{"image hosts", map[string]string{"IMAGE_HOSTS": " IMG.example.com , cdn.example.net:8443,"}, func(t *testing.T, c Config) {
			if got := c.imageHostList(); len(got) != 2 || got[0] != "img.example.com" || got[1] != "cdn.example.net:8443" {
				t.Errorf("imageHostList() = %q", got)
			}
		}},
		{"metrics off", map[string]string{"METRICS_LISTEN": "off"}, func(t *testing.T, c Config) {
			if c.MetricsListen != "" {
				t.Errorf("MetricsListen = %q, want none", c.MetricsListen)
			}
		}},
		{"the sandbox signs with a secret of its own", map[string]string{"PAY_SANDBOX": "on", "SESSION_SECRET": goodSecret}, func(t *testing.T, c Config) {
			real := c
			real.PaySandbox, real.PaySecret = false, "a real provider's secret"
			if c.callbackSecret() == real.callbackSecret() || c.callbackSecret() == "" {
				t.Error("the sandbox signs with the real provider's secret")
			}
			real.PaySecret = ""
			if c.callbackSecret() == real.callbackSecret() {
				t.Error("the sandbox's secret is the default provider secret")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(envOf(tt.env))
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestLoadConfigBadValues(t *testing.T) {
	prod := func(kv ...string) map[string]string {
		m := map[string]string{"DATABASE_URL": "postgres://db/x", "REDIS_URL": "redis://r:6379/0", "SESSION_SECRET": goodSecret}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name string
		env  map[string]string
		want string // the variable the error must name
	}{
		{"port not a number", map[string]string{"PORT": "eighty"}, "PORT"},
		{"a contact of two lines", map[string]string{"SHOP_CONTACT": "help@shop.example\nBcc: all"}, "SHOP_CONTACT"},
		{"a contact too long", map[string]string{"SHOP_CONTACT": strings.Repeat("客", 201)}, "SHOP_CONTACT"},
		{"port out of range", map[string]string{"PORT": "70000"}, "PORT"},
		{"bcrypt cost too low", map[string]string{"BCRYPT_COST": "3"}, "BCRYPT_COST"},
		{"bcrypt cost too high", map[string]string{"BCRYPT_COST": "32"}, "BCRYPT_COST"},
		{"overbook below one", map[string]string{"QUEUE_OVERBOOK": "0.5"}, "QUEUE_OVERBOOK"},
		{"overbook not a number", map[string]string{"QUEUE_OVERBOOK": "NaN"}, "QUEUE_OVERBOOK"},
		{"no queue rate", map[string]string{"QUEUE_RATE": "0"}, "QUEUE_RATE"},
		{"a turn seen within less than a minute", map[string]string{"QUEUE_TURN_SEEN_WITHIN": "30s"}, "QUEUE_TURN_SEEN_WITHIN"},
		{"captcha pool too big", map[string]string{"CAPTCHA_POOL": "2000000"}, "CAPTCHA_POOL"},
		{"pay timeout not a duration", map[string]string{"PAY_TIMEOUT": "15"}, "PAY_TIMEOUT"},
		{"pay timeout too short", map[string]string{"PAY_TIMEOUT": "10s"}, "PAY_TIMEOUT"},
		{"negative preheat window", map[string]string{"PREHEAT_WINDOW": "-5m"}, "PREHEAT_WINDOW"},
		{"qr ttl too short", map[string]string{"QR_TTL": "1s"}, "QR_TTL"},
		{"session ttl too short", map[string]string{"SESSION_TTL": "1m"}, "SESSION_TTL"},
		{"no session at all", map[string]string{"SESSION_MAX": "0"}, "SESSION_MAX"},
		{"rate limit neither on nor off", map[string]string{"RATE_LIMIT_IP": "maybe"}, "RATE_LIMIT_IP"},
		{"node id too large", map[string]string{"NODE_ID": "1024"}, "NODE_ID"},
		{"base url relative", map[string]string{"BASE_URL": "/shop"}, "BASE_URL"},
		{"base url with a space", map[string]string{"BASE_URL": "https://shop.example/ /"}, "BASE_URL"}, // found by fuzzing
		{"log level unknown", map[string]string{"LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{"provider url relative", map[string]string{"PAY_PROVIDER_URL": "pay.example"}, "PAY_PROVIDER_URL"},
		{"short pay secret", map[string]string{"PAY_SECRET": "short"}, "PAY_SECRET"},
		{"poll interval not a duration", map[string]string{"PAY_POLL_INTERVAL": "often"}, "PAY_POLL_INTERVAL"},
		{"claim idle zero", map[string]string{"ORDER_CLAIM_IDLE": "0s"}, "ORDER_CLAIM_IDLE"},
		{"listen host a name", map[string]string{"LISTEN_HOST": "localhost"}, "LISTEN_HOST"},
		{"sandbox neither on nor off", map[string]string{"PAY_SANDBOX": "yes"}, "PAY_SANDBOX"},
		{"the sandbox's second switch neither yes nor no", map[string]string{"PAY_SANDBOX_ANYONE_CAN_PAY": "on"}, "PAY_SANDBOX_ANYONE_CAN_PAY"},
		{"an image host with a scheme", map[string]string{"IMAGE_HOSTS": "https://img.example.com"}, "IMAGE_HOSTS"},
		{"an image host with a path", map[string]string{"IMAGE_HOSTS": "img.example.com/pics"}, "IMAGE_HOSTS"},
		{"an image host wildcard", map[string]string{"IMAGE_HOSTS": "*.example.com"}, "IMAGE_HOSTS"},
		{"metrics listener no port", map[string]string{"METRICS_LISTEN": "127.0.0.1"}, "METRICS_LISTEN"},
		{"notify url relative", map[string]string{"PAY_NOTIFY_URL": "/api/payments/notify"}, "PAY_NOTIFY_URL"},
		{"trusted proxy a name", map[string]string{"TRUSTED_PROXIES": "127.0.0.1,nginx"}, "TRUSTED_PROXIES"},
		{"trusted proxy range too wide", map[string]string{"TRUSTED_PROXIES": "10.0.0.0/33"}, "TRUSTED_PROXIES"},
		{"trusted proxy with a port", map[string]string{"TRUSTED_PROXIES": "127.0.0.1:80"}, "TRUSTED_PROXIES"},
		{"database without redis", map[string]string{"DATABASE_URL": "postgres://db/x"}, "REDIS_URL"},
		{"redis without database", map[string]string{"REDIS_URL": "redis://r:6379"}, "DATABASE_URL"},
		{"database not postgres", prod("DATABASE_URL", "mysql://db/x"), "DATABASE_URL"},
		{"redis not a url", prod("REDIS_URL", "cache"), "REDIS_URL"},
		{"cluster address without port", prod("REDIS_URL", "a:7001,b"), "REDIS_URL"},
		{"sentinel url with an unknown option", prod("REDIS_URL", "redis://s1:26379/0?master_name=seckill&pool=9"), "REDIS_URL"},
		{"redis url with an unknown option", prod("REDIS_URL", "redis://r:6379/0?pool=9"), "REDIS_URL"},
		{"no session secret outside demo", prod("SESSION_SECRET", ""), "SESSION_SECRET"},
		{"short session secret", prod("SESSION_SECRET", "short"), "SESSION_SECRET"},
		{"proof of work below the floor outside demo", prod("POW_MAXNUMBER", "99999"), "POW_MAXNUMBER"},
		{"proof of work off outside demo", prod("POW_MAXNUMBER", "0"), "POW_MAXNUMBER"},
		{"proof of work off in demo mode too", map[string]string{"POW_MAXNUMBER": "0"}, "POW_MAXNUMBER"},
		{"proof of work not a number", map[string]string{"POW_MAXNUMBER": "easy"}, "POW_MAXNUMBER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfig(envOf(tt.env))
			if err == nil {
				t.Fatalf("LoadConfig accepted %v", tt.env)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name %s", err, tt.want)
			}
		})
	}
}

// Demo mode may make the proof of work quick; a real shop may only raise it above the floor.
func TestProofOfWorkFloor(t *testing.T) {
	if cfg, err := LoadConfig(envOf(map[string]string{"POW_MAXNUMBER": "1000"})); err != nil || cfg.PowMaxNumber != 1000 {
		t.Errorf("demo mode's quick proof: %+v, %v", cfg.PowMaxNumber, err)
	}
	prod := map[string]string{"DATABASE_URL": "postgres://db/x", "REDIS_URL": "redis://r:6379/0", "SESSION_SECRET": goodSecret,
		"PAY_SANDBOX": "on", "PAY_SANDBOX_ANYONE_CAN_PAY": "yes", "POW_MAXNUMBER": "100000"}
	if cfg, err := LoadConfig(envOf(prod)); err != nil || cfg.PowMaxNumber != pow.Floor {
		t.Errorf("the floor itself outside demo: %+v, %v", cfg.PowMaxNumber, err)
	}
	prod["POW_MAXNUMBER"] = "1000"
	if _, err := LoadConfig(envOf(prod)); err == nil || !strings.Contains(err.Error(), "at least 100000 outside demo mode") {
		t.Errorf("below the floor outside demo: %v, want it refused saying the floor", err)
	}
}

func TestLoadConfigReportsEveryBadVariable(t *testing.T) {
	_, err := LoadConfig(envOf(map[string]string{"PORT": "x", "NODE_ID": "-1", "QR_TTL": "soon"}))
	if err == nil {
		t.Fatal("LoadConfig accepted three bad values")
	}
	for _, name := range []string{"PORT", "NODE_ID", "QR_TTL"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

// providerKeyFiles writes a WeChat Pay merchant's and an Alipay app's keys, made for the test, to files,
// and answers a replacer of {wechat} and {alipay} (each provider's whole configuration, its secrets as
// *_FILE), {v3key}, {alikey}, {junk} (a file that holds no key) and {missing} (no file).
func providerKeyFiles(t *testing.T) *strings.Replacer {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	wx, err := wechatfake.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	aliKey, _, err := alipayfake.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	_, aliPublic, err := alipayfake.NewKey() // Alipay's own key pair: the shop holds its public half
	if err != nil {
		t.Fatal(err)
	}
	mch, v3 := write("apiclient_key.pem", wechatfake.PrivateKeyPEM(wx.MchKey)), write("apiv3.key", wx.APIv3Key)
	ali, aliPub := write("app_private_key.pem", aliKey), write("alipay_public_key.pem", aliPublic)
	return strings.NewReplacer(
		"{wechat}", "WECHAT_PAY_MCH_ID=1900000001 WECHAT_PAY_APP_ID=wxd930ea5d5a258f4f WECHAT_PAY_MCH_SERIAL="+wx.MchSerial+
			" WECHAT_PAY_MCH_KEY_FILE="+mch+" WECHAT_PAY_API_V3_KEY_FILE="+v3,
		"{alipay}", "ALIPAY_APP_ID=2021000000000001 ALIPAY_PRIVATE_KEY_FILE="+ali+" ALIPAY_PUBLIC_KEY_FILE="+aliPub,
		"{v3key}", v3, "{alikey}", ali, "{secret}", write("pay_secret", "a-real-providers-secret"), "{junk}", write("junk.pem", "not a key"), "{missing}", filepath.Join(dir, "missing.pem"))
}

// In demo mode the sandbox is the default provider; a provider named gives it way, and PAY_SANDBOX=off
// with none named is refused in words that fit.
func TestDemoModePaymentSettings(t *testing.T) {
	for _, tt := range []struct {
		env       map[string]string
		providers string
		want      string // "" for a good combination, else what the refusal names
	}{
		{map[string]string{}, "sandbox", ""},
		{map[string]string{"PAY_PROVIDER_URL": "http://127.0.0.1:9000/sandbox", "PAY_SECRET": "a-real-providers-secret"}, "http", ""},
		{map[string]string{"PAY_SANDBOX": "on", "PAY_PROVIDER_URL": "http://127.0.0.1:9000/sandbox"}, "sandbox", ""},
		{map[string]string{"PAY_SANDBOX": "off"}, "", "no payment provider"},
	} {
		c, err := LoadConfig(envOf(tt.env))
		if err == nil {
			err = c.checkPayment()
		}
		if !c.Demo || c.PayProviders != tt.providers || (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%v: demo %v, providers %q, %v; want %q and an error naming %q", tt.env, c.Demo, c.PayProviders, err, tt.providers, tt.want)
		}
	}
}
