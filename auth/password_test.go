package auth

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill/internal/gate"
)

// TestValidatePassword: the passwords an attacker tries first are refused, each with its reason, and
// ordinary passphrases are taken.
func TestValidatePassword(t *testing.T) {
	for _, tt := range []struct {
		username, password, want string // want: the reason's key, "" when taken
	}{
		{"ming", "12345678", "password_common"},
		{"ming", "aaaaaaaa", "password_common"},
		{"ming", "password", "password_common"},
		{"ming", "P@ssw0rd", "password_common"},
		{"ming", "password1", "password_common"},
		{"ming", "qwertyui", "password_common"},
		{"ming", "1q2w3e4r", "password_common"},
		{"ming", "iloveyou1", "password_common"},
		{"ming", "seckill2026", "password_common"}, // the shop's own name counts as a common word
		{"adm2", "adm2", "password_length"},
		{"adm2", "adm2adm2", "password_username"},
		{"adm2", "my ADM2 password", "password_username"},
		{"Adm", "adm is me 1984!", "password_username"},
		{"ming", "7 chars", "password_length"},
		{"ming", strings.Repeat("p", 73), "password_length"},
		{"ming", "the real password", ""},
		{"ming", "correct horse battery", ""},
		{"ming", "lantern 1a2b3c4d harbour", ""},
		{"ming", "Tr0ub4dor&3", ""},
	} {
		t.Run(tt.username+"/"+tt.password, func(t *testing.T) {
			got := ""
			if why := ValidatePassword("password", tt.username, tt.password); len(why) > 0 {
				got = why[0].Key
				if why[0].Field != "password" {
					t.Errorf("the reason names the field %q, want password", why[0].Field)
				}
			}
			if got != tt.want {
				t.Errorf("ValidatePassword(%q, %q) = %q, want %q", tt.username, tt.password, got, tt.want)
			}
		})
	}
	if why := ValidatePassword("new_password", "ming", "12345678"); len(why) != 1 || why[0].Field != "new_password" {
		t.Errorf("the field is the caller's: %v", why)
	}
}

// TestVetIsBounded: judging a password runs in turns of its own, as many as the hashing's, so that long
// passwords of look-alike characters (a tenth of a core-second each) sent by anyone cannot take more
// cores than bcrypt may, nor wait for the logins' hashes.
func TestVetIsBounded(t *testing.T) {
	p, err := NewPasswords(4, gate.New(1, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if why, err := p.Vet(ctx, "password", "ming", "12345678"); err != nil || len(why) != 1 || why[0].Key != "password_common" {
		t.Fatalf("Vet = %v, %v; want password_common", why, err)
	}
	// With the only turn taken, a vet is told to come back.
	held := make(chan struct{})
	release := make(chan struct{})
	go func() { _ = p.vet.Do(ctx, func() { close(held); <-release }) }()
	<-held
	defer close(release)
	if _, err := p.Vet(ctx, "password", "ming", "4@8({[<3!1|0$5+7%2~4@8({[<3!1|0$5+7%2~"); err == nil {
		t.Error("a vet with no turn free ran anyway")
	}
}
