package auth_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/models"
)

// An address changed through one instance is forgotten by another that had it, over Redis, so its
// next answer is the new one; until then each answers from memory.
func TestEmailsAreForgottenOnEveryInstance(t *testing.T) {
	db, rdb := testenv.Postgres(t), testenv.Redis(t)
	u := testenv.Users(t, db, "em", 1)[0]
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, b := auth.NewEmails(db, rdb, 10, log), auth.NewEmails(db, rdb, 10, log)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Run(ctx)

	if st, err := b.Of(ctx, u.ID); err != nil || st.Email != "" {
		t.Fatalf("b.Of = %+v, %v; want no address", st, err)
	}
	n := 0
	testenv.EventuallySaw(t, 5*time.Second, "b forgets the address a changed", func() (bool, string) {
		n++
		addr := fmt.Sprintf("em%d@example.com", n)
		if _, err := models.SetEmail(ctx, db, u.ID, addr, time.Now()); err != nil {
			t.Fatal(err)
		}
		a.Changed(ctx, u.ID) // b subscribes in the background: change until it hears
		time.Sleep(20 * time.Millisecond)
		st, err := b.Of(ctx, u.ID)
		return err == nil && st.Email == addr, st.Email
	})
}
