package app

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"seckill/mail"
)

// MailConfig is the SMTP relay the mail worker sends through, and the sender's address.
type MailConfig struct {
	Host     string  // SMTP_HOST (or SMTP_URL's host); empty: no relay
	Port     int     // SMTP_PORT: 587 for STARTTLS, 465 for TLS
	Username string  // SMTP_USERNAME: AUTH (PLAIN or LOGIN, over TLS only) when set
	Password string  // SMTP_PASSWORD, or the contents of SMTP_PASSWORD_FILE
	TLS      string  // SMTP_TLS: starttls (default), tls (smtps://), or none (a relay on this machine only)
	From     string  // MAIL_FROM: the From of every mail, such as "Seckill <noreply@shop.example>"
	Rate     float64 // MAIL_RATE: the most mails a second the workers together hand the relay, and the rate reminders are spread at
}

// Relay reports whether a relay is configured.
func (m MailConfig) Relay() bool { return m.Host != "" }

// mailConfig reads SMTP_URL (smtp://user:pass@host:587, smtps://…:465) or SMTP_HOST and its fellows,
// and MAIL_FROM; a variable given beside SMTP_URL overrides its part.
func (p *parser) mailConfig(baseURL string) MailConfig {
	m := MailConfig{TLS: mail.TLSStartTLS}
	if raw := strings.TrimSpace(p.getenv("SMTP_URL")); raw != "" {
		u, err := url.Parse(raw)
		switch {
		case err != nil || u.Hostname() == "" || (u.Scheme != "smtp" && u.Scheme != "smtps"):
			p.fail("SMTP_URL", "must be smtp://user:password@host:587 (STARTTLS) or smtps://user:password@host:465 (TLS)")
		default:
			m.Host = u.Hostname()
			if u.Scheme == "smtps" {
				m.TLS, m.Port = mail.TLSImplicit, 465
			}
			if port := u.Port(); port != "" {
				m.Port, _ = strconv.Atoi(port)
			}
			if u.User != nil {
				m.Username = u.User.Username()
				m.Password, _ = u.User.Password()
			}
		}
	}
	m.Host = p.str("SMTP_HOST", m.Host)
	if m.Port == 0 {
		m.Port = 587
	}
	m.Port = p.int("SMTP_PORT", m.Port, 1, 65535)
	m.Username = p.str("SMTP_USERNAME", m.Username)
	if v := p.getenv("SMTP_PASSWORD"); v != "" {
		m.Password = v
	}
	if file := strings.TrimSpace(p.getenv("SMTP_PASSWORD_FILE")); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			p.fail("SMTP_PASSWORD_FILE", fmt.Sprintf("cannot be read: %v", err))
		}
		m.Password = strings.TrimRight(string(b), "\r\n")
	}
	m.Rate = p.float("MAIL_RATE", 100, 0.1, 100_000)
	m.TLS = p.oneOf("SMTP_TLS", m.TLS, mail.TLSStartTLS, mail.TLSImplicit, mail.TLSNone)
	host := "localhost"
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	from := "Seckill <noreply@" + host + ">"
	if mail.DomainOf(from) == "" {
		from = "Seckill <noreply@localhost>" // a BASE_URL no mail domain comes of is BASE_URL's error, said apart
	}
	m.From = p.str("MAIL_FROM", from)
	if mail.DomainOf(m.From) == "" {
		p.fail("MAIL_FROM", fmt.Sprintf("must be an address such as noreply@shop.example or \"Shop <noreply@shop.example>\", got %q", m.From))
	}
	if m.Relay() && m.Username != "" && m.TLS == mail.TLSNone {
		p.fail("SMTP_TLS", "none would send the relay's password in the clear: use starttls or tls, or no SMTP_USERNAME")
	}
	return m
}

// mailSender is the queue's way out: the relay when one is configured, else the demo's outbox, else
// none (the mails wait in the queue, and the worker says so in the log).
func (c Config) mailSender() mail.Sender {
	switch {
	case c.Mail.Relay():
		return &mail.SMTP{Host: c.Mail.Host, Port: c.Mail.Port, Username: c.Mail.Username, Password: c.Mail.Password,
			From: c.Mail.From, TLS: c.Mail.TLS}
	case c.Demo:
		return mail.Outbox{}
	}
	return nil
}
