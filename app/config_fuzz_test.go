package app

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fzConfigVars are the variables FuzzLoadConfig varies, in the order of its arguments.
var fzConfigVars = []string{"PORT", "BASE_URL", "REDIS_URL", "DATABASE_URL", "TRUSTED_PROXIES", "LISTEN_HOST", "PAY_TIMEOUT", "BODY_LIMIT"}

// FuzzLoadConfig: whatever the environment holds, LoadConfig either refuses it with an error whose every
// line names a variable that was given a fuzzed value (the others are good), or gives a Config inside the
// documented ranges, which loading its own values again gives back unchanged.
func FuzzLoadConfig(f *testing.F) {
	f.Add("", "", "", "", "", "", "", "")
	f.Add("9000", "https://shop.example.com/", "redis://cache:6379/2", "postgres://app@db:5432/seckill", "127.0.0.1, 10.0.0.0/8", "127.0.0.1", "30m", "1048576")
	f.Add("+80", "http://localhost:8080//", "127.0.0.1:7001, 127.0.0.1:7002", "postgresql://db/seckill", "::1,fd00::/8", "::", "1m", "1024")
	f.Add("0", "//evil.example", "redis://", "mysql://db", "nginx", "localhost", "59s", "1023")
	f.Add("65536", "javascript:alert(1)", "a:7001,b", "postgres://db/x\r\n", "127.0.0.1:80", "fe80::1%eth0", "-1m", "67108865")
	f.Add("99999999999999999999", "http://[::1", ",", "postgres://%zz", "10.0.0.0/33", " 127.0.0.1 ", "1e3s", "0x400")
	f.Add(" 8080\t", " https://shop.example/ ", "rediss://cache:6380/0", " postgres://db/x ", ",,", "0.0.0.0", "9223372036854775807ns", " 2048 ")
	f.Add("08080", "http://user:pass@shop.example:99999/base/", ":1", "postgres://db/x?sslmode=disable", "1.2.3.4/24", "::ffff:1.2.3.4", "2562047h", "64MiB")
	f.Add("80", "HTTP://SHOP.EXAMPLE", "redis://cache:6379/0,redis://cache:6380/0", "", "", "", "15m", "")
	f.Add("8080", "http://shop.example\u2028", "", "postgres://db/x", "1.2.3.4,", "１２７.0.0.1", "1h0m0s", "-1")
	f.Fuzz(func(t *testing.T, port, baseURL, redisURL, databaseURL, proxies, listenHost, payTimeout, bodyLimit string) {
		env := map[string]string{"SESSION_SECRET": goodSecret}
		for i, v := range []string{port, baseURL, redisURL, databaseURL, proxies, listenHost, payTimeout, bodyLimit} {
			env[fzConfigVars[i]] = v
		}
		c, err := LoadConfig(envOf(env))
		if err != nil {
			fzCheckConfigError(t, env, err.Error())
			return
		}
		fzCheckConfig(t, env, c)

		// The configuration it gives is one it takes, and gives back unchanged.
		again := map[string]string{"SESSION_SECRET": goodSecret, "PORT": strconv.Itoa(c.Port), "BASE_URL": c.BaseURL,
			"REDIS_URL": c.RedisURL, "DATABASE_URL": c.DatabaseURL, "TRUSTED_PROXIES": c.TrustedProxies, "LISTEN_HOST": c.ListenHost,
			"PAY_TIMEOUT": c.PayTimeout.String(), "BODY_LIMIT": strconv.Itoa(c.BodyLimit)}
		c2, err := LoadConfig(envOf(again))
		if err != nil {
			t.Fatalf("the configuration from %q is refused when given again as %q: %v", env, again, err)
		}
		if c2 != c {
			t.Fatalf("the configuration from %q changes when given again:\n got %+v\nwant %+v", env, c2, c)
		}
	})
}

// fzCheckConfigError checks that every line of a refusal names a variable that was given a fuzzed value,
// and that the documented rules of the simple variables are what it refuses.
func fzCheckConfigError(t *testing.T, env map[string]string, msg string) {
	t.Helper()
	msg, ok := strings.CutPrefix(msg, "configuration: ")
	if !ok {
		t.Fatalf("error %q does not start with \"configuration: \"", msg)
	}
	named := map[string]bool{}
	for _, line := range strings.Split(msg, "\n") {
		name, _, _ := strings.Cut(line, " ")
		if !slices.Contains(fzConfigVars, name) {
			t.Fatalf("for %q, the error line %q names none of %v", env, line, fzConfigVars)
		}
		named[name] = true
	}
	// The variables whose rule is one check on their own value are named exactly when they break it.
	bad := map[string]bool{}
	if v := strings.TrimSpace(env["PORT"]); v != "" {
		n, err := strconv.Atoi(v)
		bad["PORT"] = err != nil || n < 1 || n > 65535
	}
	if v := strings.TrimSpace(env["BODY_LIMIT"]); v != "" {
		n, err := strconv.Atoi(v)
		bad["BODY_LIMIT"] = err != nil || n < 1024 || n > 64<<20
	}
	if v := strings.TrimSpace(env["PAY_TIMEOUT"]); v != "" {
		d, err := time.ParseDuration(v)
		bad["PAY_TIMEOUT"] = err != nil || d < time.Minute
	}
	if v := strings.TrimSpace(env["LISTEN_HOST"]); v != "" {
		bad["LISTEN_HOST"] = net.ParseIP(v) == nil
	}
	for _, name := range []string{"PORT", "BODY_LIMIT", "PAY_TIMEOUT", "LISTEN_HOST"} {
		if named[name] != bad[name] {
			t.Fatalf("for %q, the error %q names %s: %v, but its value breaks its rule: %v", env, msg, name, named[name], bad[name])
		}
	}
}

// fzCheckConfig checks a Config against the documented ranges.
func fzCheckConfig(t *testing.T, env map[string]string, c Config) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("for %q: "+format+"\nconfig %+v", append(append([]any{env}, args...), c)...)
	}
	if c.Port < 1 || c.Port > 65535 {
		fail("port %d outside 1-65535", c.Port)
	}
	if p := strings.TrimSpace(env["PORT"]); p == "" && c.Port != 8080 {
		fail("no PORT, port %d, want 8080", c.Port)
	} else if n, err := strconv.Atoi(p); p != "" && (err != nil || n != c.Port) {
		fail("PORT %q taken as %d", p, c.Port)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fail("BaseURL %q is not an absolute http(s) URL (%v)", c.BaseURL, err)
	}
	if strings.HasSuffix(c.BaseURL, "/") {
		fail("BaseURL %q ends with a slash", c.BaseURL)
	}
	if strings.TrimSpace(c.BaseURL) != c.BaseURL {
		fail("BaseURL %q has surrounding space", c.BaseURL)
	}
	if strings.TrimSpace(env["BASE_URL"]) == "" && c.BaseURL != "http://localhost:"+strconv.Itoa(c.Port) {
		fail("no BASE_URL, BaseURL %q", c.BaseURL)
	}
	if c.ListenHost != "" && net.ParseIP(c.ListenHost) == nil {
		fail("ListenHost %q is not an IP address", c.ListenHost)
	}
	if host, p, err := net.SplitHostPort(c.listenAddr()); err != nil || host != c.ListenHost || p != strconv.Itoa(c.Port) {
		fail("listenAddr %q does not split into %q and %d (%v)", c.listenAddr(), c.ListenHost, c.Port, err)
	}
	if c.BodyLimit < 1024 || c.BodyLimit > 64<<20 {
		fail("BodyLimit %d outside 1 KiB-64 MiB", c.BodyLimit)
	}
	if c.PayTimeout < time.Minute {
		fail("PayTimeout %v under 1m", c.PayTimeout)
	}
	if c.Demo != (c.DatabaseURL == "" && c.RedisURL == "") || !c.Demo && (c.DatabaseURL == "" || c.RedisURL == "") {
		fail("demo %v with DATABASE_URL %q and REDIS_URL %q", c.Demo, c.DatabaseURL, c.RedisURL)
	}
	if c.DatabaseURL != "" {
		if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			fail("DatabaseURL %q is not a postgres URL", c.DatabaseURL)
		}
	}
	if c.RedisURL != "" {
		if addrs := c.redisAddrs(); addrs != nil {
			for _, a := range addrs {
				if _, p, err := net.SplitHostPort(a); err != nil || p == "" {
					fail("cluster address %q is not host:port", a)
				}
			}
		} else if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			fail("RedisURL %q is not a redis URL", c.RedisURL)
		}
	}
	for _, p := range c.proxies() {
		canonical := ""
		if strings.Contains(p, "/") {
			if _, n, err := net.ParseCIDR(p); err == nil {
				canonical = n.String()
			}
		} else if ip := net.ParseIP(p); ip != nil {
			canonical = ip.String()
		}
		if canonical != p {
			fail("trusted proxy %q is not an IP address or CIDR range in canonical form", p)
		}
	}
}
