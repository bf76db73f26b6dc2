package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The relay is read from SMTP_URL or its parts, the parts overriding; a bad one is refused at start.
func TestMailConfig(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(secret, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want MailConfig
		err  string
	}{
		{"smtp url", map[string]string{"SMTP_URL": "smtp://shop:s3cret@mail.example.com:2525", "MAIL_FROM": "Shop <no@shop.example>"},
			MailConfig{Host: "mail.example.com", Port: 2525, Username: "shop", Password: "s3cret", TLS: "starttls", From: "Shop <no@shop.example>", Rate: 100}, ""},
		{"smtps url", map[string]string{"SMTP_URL": "smtps://shop:x@mail.example.com"},
			MailConfig{Host: "mail.example.com", Port: 465, Username: "shop", Password: "x", TLS: "tls", From: "Seckill <noreply@localhost>", Rate: 100}, ""},
		{"parts and a password file", map[string]string{"SMTP_HOST": "relay.internal", "SMTP_USERNAME": "u", "SMTP_PASSWORD_FILE": secret},
			MailConfig{Host: "relay.internal", Port: 587, Username: "u", Password: "from-a-file", TLS: "starttls", From: "Seckill <noreply@localhost>", Rate: 100}, ""},
		{"a bad url", map[string]string{"SMTP_URL": "http://mail.example.com"}, MailConfig{}, "SMTP_URL"},
		{"a bad from", map[string]string{"MAIL_FROM": "nobody"}, MailConfig{}, "MAIL_FROM"},
		{"a password in the clear", map[string]string{"SMTP_HOST": "r", "SMTP_USERNAME": "u", "SMTP_TLS": "none"}, MailConfig{}, "SMTP_TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(envOf(tc.env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v; want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Mail != tc.want {
				t.Errorf("Mail = %+v\nwant %+v", cfg.Mail, tc.want)
			}
		})
	}
}
