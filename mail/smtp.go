package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"seckill/models"
)

// The ways to the relay (SMTP_TLS).
const (
	TLSStartTLS = "starttls" // plain connection upgraded by STARTTLS, which must succeed (port 587)
	TLSImplicit = "tls"      // TLS from the first byte (port 465, smtps://)
	TLSNone     = "none"     // no TLS: only for a relay on this machine or its private network
)

// SMTP sends through a relay with go-mail: one connection a batch, STARTTLS (or TLS), and AUTH when a
// username is set (PLAIN or LOGIN, as the relay offers, only over TLS).
type SMTP struct {
	Host      string
	Port      int
	Username  string
	Password  string
	From      string      // MAIL_FROM: "Shop <noreply@example.com>" or an address
	TLS       string      // TLSStartTLS (default), TLSImplicit or TLSNone
	TLSConfig *tls.Config // nil: the system's roots, ServerName from Host (tests give their own CA)
	Timeout   time.Duration
}

var _ Sender = (*SMTP)(nil)

func (s *SMTP) client() (*gomail.Client, error) {
	opts := []gomail.Option{gomail.WithPort(s.Port), gomail.WithTimeout(cmp(s.Timeout, 30*time.Second))}
	switch s.TLS {
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL())
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if s.TLSConfig != nil {
		opts = append(opts, gomail.WithTLSConfig(s.TLSConfig))
	} else {
		opts = append(opts, gomail.WithTLSConfig(&tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}))
	}
	if s.Username != "" {
		opts = append(opts, gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthPlain, gomail.SMTPAuthLogin),
			gomail.WithUsername(s.Username), gomail.WithPassword(s.Password))
	}
	return gomail.NewClient(s.Host, opts...)
}

// Send hands mails to the relay over one connection.
func (s *SMTP) Send(ctx context.Context, mails []models.Mail) []error {
	out := make([]error, len(mails))
	fail := func(err error) []error {
		for i := range out {
			if out[i] == nil {
				out[i] = err
			}
		}
		return out
	}
	c, err := s.client()
	if err != nil {
		return fail(fmt.Errorf("smtp client: %w", err))
	}
	if err := c.DialWithContext(ctx); err != nil {
		return fail(fmt.Errorf("smtp dial %s:%d: %w", s.Host, s.Port, err))
	}
	defer c.Close()
	for i := range mails {
		msg, err := s.message(&mails[i])
		if err != nil {
			out[i] = Permanent{err}
			continue
		}
		if err := c.Send(msg); err != nil {
			var se *gomail.SendError
			if errors.As(err, &se) && !se.IsTemp() && se.Reason == gomail.ErrSMTPRcptTo {
				out[i] = Permanent{err} // the relay refused the address for good: a bounce at once
			} else {
				out[i] = err
			}
		}
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
	}
	return out
}

// message is the MIME message of a queued mail: plain text and HTML alternatives, its Message-ID and
// date from the queue, marked as sent by a machine (no auto-replies).
func (s *SMTP) message(m *models.Mail) (*gomail.Msg, error) {
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := msg.From(s.From); err != nil {
		return nil, fmt.Errorf("MAIL_FROM: %w", err)
	}
	if err := msg.To(m.ToAddr); err != nil {
		return nil, fmt.Errorf("to %q: %w", m.ToAddr, err)
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(m.MessageID)
	msg.SetDateWithValue(m.CreatedAt)
	msg.SetGenHeader(gomail.HeaderContentLang, m.Lang)
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	if m.ListUnsubscribe != "" { // a mail client's one-click unsubscribe POSTs to the link (RFC 8058)
		msg.SetGenHeader("List-Unsubscribe", "<"+m.ListUnsubscribe+">")
		msg.SetGenHeader("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.TextBody)
	msg.AddAlternativeString(gomail.TypeTextHTML, m.HTMLBody)
	return msg, nil
}

// DomainOf is the domain of an address such as MAIL_FROM ("" when it has none).
func DomainOf(addr string) string {
	a, err := mail.ParseAddress(addr)
	if err != nil {
		return ""
	}
	_, domain, _ := strings.Cut(a.Address, "@")
	return domain
}
