package auth

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/internal/testenv"
	"seckill/models"
)

// twoInstances starts two session managers on one database and Redis, as two servers, each following
// the auth channel until the test ends; each takes at most maxLive live sessions a user.
func twoInstances(t *testing.T, db *gorm.DB, rdb redis.UniversalClient, maxLive int) (a, b *Sessions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	t.Cleanup(func() { cancel(); <-done; <-done })
	var out [2]*Sessions
	for i := range out {
		s := NewSessions("a secret of the session bound's test", 24*time.Hour, db, rdb, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
		s.LimitSessions(maxLive)
		if err := s.Load(ctx); err != nil {
			t.Fatal(err)
		}
		go func() { _ = s.Run(ctx); done <- struct{}{} }()
		out[i] = s
	}
	time.Sleep(100 * time.Millisecond) // both subscribed
	return out[0], out[1]
}

func start(t *testing.T, s *Sessions, u *models.User) (Session, string) {
	t.Helper()
	sess, cookie, err := s.Start(context.Background(), u, Client{UserAgent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return sess, cookie
}

// One account logging in and out in a loop, far past what the ended set keeps for one user, fills
// nothing that another user's logout depends on: the other user's logout ends that one device, on both
// instances, and the user's other device goes on. The looping account's ids stay within its own bound.
func TestOneAccountsLogoutLoopLeavesOtherAccountsAlone(t *testing.T) {
	db, rdb := testenv.Postgres(t), testenv.Redis(t)
	users := testenv.Users(t, db, "loop", 2)
	looper, victim := &users[0], &users[1]
	a, b := twoInstances(t, db, rdb, 3)
	ctx := context.Background()

	for range 50 {
		sess, _ := start(t, a, looper)
		if err := a.End(ctx, sess); err != nil {
			t.Fatal(err)
		}
		if u, err := models.UserByID(ctx, db, looper.ID); err == nil {
			looper = u // its version goes up when it passes its bound
		}
	}
	limit := a.maxEndedPerUser() + a.maxLive
	for name, s := range map[string]*Sessions{"a": a, "b": b} {
		testenv.EventuallySaw(t, 5*time.Second, "the looping account's ended ids within its bound on "+name, func() (bool, string) {
			n := s.ended.count(looper.ID)
			return n <= limit, "ids kept: " + strconv.Itoa(n)
		})
	}

	phone, phoneCookie := start(t, a, victim)
	_, pcCookie := start(t, a, victim)
	if err := a.End(ctx, phone); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Sessions{"a": a, "b": b} {
		testenv.Eventually(t, 5*time.Second, "the phone's logout reaches "+name, func() bool {
			_, ok := s.Check(phoneCookie)
			return !ok
		})
		if _, ok := s.Check(pcCookie); !ok {
			t.Errorf("on %s, the other user's PC was logged out by the phone's logout after one account's loop", name)
		}
	}
}

// A login past the live sessions a user may have ends the oldest on every instance; the others go on,
// and the account's list shows the bound.
func TestLoginPastTheBoundEndsTheOldestSession(t *testing.T) {
	db, rdb := testenv.Postgres(t), testenv.Redis(t)
	u := &testenv.Users(t, db, "bound", 1)[0]
	a, b := twoInstances(t, db, rdb, 2)
	_, first := start(t, a, u)
	time.Sleep(10 * time.Millisecond) // created_at orders them
	_, second := start(t, b, u)
	time.Sleep(10 * time.Millisecond)
	_, third := start(t, a, u)
	for name, s := range map[string]*Sessions{"a": a, "b": b} {
		testenv.Eventually(t, 5*time.Second, "the oldest session ended on "+name, func() bool {
			_, ok := s.Check(first)
			return !ok
		})
		for what, c := range map[string]string{"second": second, "third": third} {
			if _, ok := s.Check(c); !ok {
				t.Errorf("on %s, the %s session was ended by the third login (bound 2)", name, what)
			}
		}
	}
	live, err := models.LiveSessionsOf(context.Background(), db, u.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2 {
		t.Errorf("%d live sessions listed after three logins with a bound of 2", len(live))
	}
}

// However many ids other accounts have in the ended set (a quarter of a million here, the whole set's
// bound before it was kept per user), a user's logout ends that one session: the set has no global bound
// whose overflow would end all of a user's devices.
func TestManyEndedIDsOfOthersDoNotEndAUsersDevices(t *testing.T) {
	db, rdb := testenv.Postgres(t), testenv.Redis(t)
	victim := &testenv.Users(t, db, "many", 1)[0]
	s := NewSessions("a secret of the session bound's test", 24*time.Hour, db, rdb, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	exp := time.Now().Add(time.Hour)
	for i := range 1 << 18 {
		s.ended.add(1_000_000+int64(i%5000), [16]byte{byte(i), byte(i >> 8), byte(i >> 16), 1}, exp, 1)
	}
	ctx := context.Background()
	phone, _ := start(t, s, victim)
	_, pc := start(t, s, victim)
	if err := s.End(ctx, phone); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Check(pc); !ok {
		t.Error("the user's PC was logged out by the phone's logout once other accounts had many ids in the set")
	}
}
