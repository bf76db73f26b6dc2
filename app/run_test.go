package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/models"
)

func TestGracefulShutdownFinishesRequestsInFlight(t *testing.T) {
	f, _ := newTestApp(t)
	started := make(chan struct{})
	f.Get("/test/slow", func(c *fiber.Ctx) error {
		close(started)
		time.Sleep(500 * time.Millisecond)
		return c.SendString("finished")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, f, ln, 5*time.Second) }()

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/test/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	<-started
	cancel() // SIGTERM arrives while the request is in flight

	r := <-got
	if r.err != nil || r.body != "finished" {
		t.Fatalf("the in-flight request got %q, %v; want it finished", r.body, r.err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve returned %v after a graceful stop", err)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("the server still takes connections after stopping")
	}
}

func runCLI(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = Run(context.Background(), args, Env{Getenv: envOf(env), Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), err
}

func TestUserCreate(t *testing.T) {
	rdb := testenv.Redis(t)
	env := map[string]string{
		"DATABASE_URL":   testenv.PostgresSchema(t),
		"REDIS_URL":      testenv.RedisURLFor(rdb),
		"SESSION_SECRET": goodSecret,
		"BCRYPT_COST":    "4",
	}
	out, _, err := runCLI(t, env, "user", "create", "--username", "alice", "--password", "correct horse", "--role", "merchant")
	if err != nil {
		t.Fatalf("user create: %v", err)
	}
	id, perr := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if perr != nil || id <= 0 {
		t.Fatalf("user create printed %q, want the new id", out)
	}

	db, err := openPostgres(context.Background(), env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	u, err := models.UserByUsername(context.Background(), db, "alice")
	if err != nil || u.ID != id || u.Role != models.RoleMerchant {
		t.Fatalf("stored user %+v, %v; want id %d, role merchant", u, err, id)
	}

	tests := []struct {
		name string
		args []string
		want string // what the error must say
	}{
		{"taken name", []string{"--username", "alice", "--password", "another pass", "--role", "shopper"}, "taken"},
		{"bad role", []string{"--username", "bob", "--password", "another pass", "--role", "root"}, "role"},
		{"short password", []string{"--username", "bob", "--password", "short", "--role", "shopper"}, "password"},
		{"bad username", []string{"--username", "b!", "--password", "long enough", "--role", "shopper"}, "username"},
		{"taken in another case", []string{"--username", "ALICE", "--password", "another pass", "--role", "shopper"}, "taken"},
		{"a common password", []string{"--username", "bob", "--password", "12345678", "--role", "admin"}, "too easy to guess"},
		{"the username in the password", []string{"--username", "bob", "--password", "Bob's very own", "--role", "admin"}, "must not contain the username"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runCLI(t, env, append([]string{"user", "create"}, tt.args...)...)
			if err == nil {
				t.Fatalf("user create %v succeeded, printed %q", tt.args, out)
			}
			if !strings.Contains(strings.ToLower(err.Error()), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
	var n int64
	db.Model(&models.User{}).Count(&n)
	if n != 1 {
		t.Errorf("%d users stored, want only alice", n)
	}
}

func TestUnknownCommand(t *testing.T) {
	_, stderr, err := runCLI(t, nil, "frobnicate")
	if !errors.Is(err, ErrUsage) || !strings.Contains(stderr, "usage") {
		t.Errorf("unknown command: err %v, stderr %q", err, stderr)
	}
}

// freePort finds a free port below Linux's ephemeral range (32768 and up), so that no other process's
// outgoing connection takes it between here and the server's listening on it.
func freePort(t *testing.T) string {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(7000) // the cluster test's ports are 17101-17182 and 27101-27103
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			ln.Close()
			return strconv.Itoa(port)
		}
	}
	t.Fatal("no free port from 20000 to 26999")
	return ""
}

// TestDemoMode runs the server as a newcomer does, with no services configured: it must come up on
// SQLite and an in-process Redis with the demo sale, and seed it only once.
func TestDemoMode(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	env := map[string]string{"DATA_DIR": dir, "PORT": port, "BCRYPT_COST": "4", "LOG_LEVEL": "warn"}

	for round := 1; round <= 2; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		var logs bytes.Buffer
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, []string{"serve"}, Env{Getenv: envOf(env), Stdout: io.Discard, Stderr: &safeWriter{w: &logs}})
		}()
		var acts []struct {
			Name     string
			StartsAt time.Time `json:"starts_at"`
			Items    []struct{ Name string }
		}
		defer cancel() // a round that fails waiting stops its server too
		testenv.EventuallySaw(t, 30*time.Second, fmt.Sprintf("round %d: the demo server to answer", round), func() (bool, string) {
			resp, err := http.Get("http://127.0.0.1:" + port + "/api/activities")
			if err == nil {
				err = json.NewDecoder(resp.Body).Decode(&acts)
				resp.Body.Close()
			}
			return err == nil, fmt.Sprint(err)
		})
		if len(acts) != 1 || len(acts[0].Items) != 3 {
			t.Errorf("round %d: want one demo activity with three items, got %+v", round, acts)
		}
		if round == 1 && (acts[0].StartsAt.Before(time.Now().Add(time.Minute)) || acts[0].StartsAt.After(time.Now().Add(2*time.Minute))) {
			t.Errorf("demo sale starts at %v, want about two minutes after the first start", acts[0].StartsAt)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("round %d: serve ended with %v", round, err)
		}
		if !strings.Contains(logs.String(), "demo mode") || !strings.Contains(logs.String(), "demo-buyer-pass") {
			t.Errorf("round %d: the log must say demo mode and print the accounts, got:\n%s", round, logs.String())
		}
	}
}

// TestDemoDataFromBeforeTakesThePublishedPasswords: a demo database made when the demo's passwords were
// weaker (they changed when weak passwords were refused) still logs in with the passwords the log prints.
func TestDemoDataFromBeforeTakesThePublishedPasswords(t *testing.T) {
	ctx := context.Background()
	db := testenv.SQLite(t)
	if err := models.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	old, err := auth.HashPassword("demo-shopper-pass", 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := models.CreateUser(ctx, db, "shopper", old, models.RoleShopper); err != nil {
		t.Fatal(err)
	}
	if seeded, err := seedDemo(ctx, db, time.Now(), 4); err != nil || seeded {
		t.Fatalf("seedDemo on old demo data = %v, %v; want false, nil (nothing new made)", seeded, err)
	}
	u, err := models.UserByUsername(ctx, db, "shopper")
	if err != nil {
		t.Fatal(err)
	}
	if !auth.CheckPassword(u.PasswordHash, "demo-buyer-pass") {
		t.Error("the old demo shopper does not log in with the published password demo-buyer-pass")
	}
}

// TestMigrateCommandUpgradesAnAutoMigratedDatabase: a database made by the AutoMigrate of before versioned
// migrations (its schema dump) is taken by `seckill migrate` as version 1, keeps its rows, and takes new
// ones; `migrate status` says so, `migrate down` refuses to undo version 1 (every table) unless told
// --drop-everything, and `migrate` makes it again.
func TestMigrateCommandUpgradesAnAutoMigratedDatabase(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.Redis(t)
	env := map[string]string{
		"DATABASE_URL":   testenv.PostgresSchema(t),
		"REDIS_URL":      testenv.RedisURLFor(rdb),
		"SESSION_SECRET": goodSecret,
		"BCRYPT_COST":    "4",
	}
	old, err := os.ReadFile("../models/testdata/automigrate_postgres.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := openPostgres(ctx, env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d, err := db.DB(); err == nil {
			d.Close()
		}
	})
	if err := db.Exec(string(old)).Error; err != nil {
		t.Fatalf("the old schema: %v", err)
	}
	before, err := models.CreateUser(ctx, db, "before", "hash", models.RoleShopper)
	if err != nil {
		t.Fatal(err)
	}

	status := func() string {
		t.Helper()
		out, _, err := runCLI(t, env, "migrate", "status")
		if err != nil {
			t.Fatalf("migrate status: %v", err)
		}
		return out
	}
	// A look first: status says version 1 is there, unrecorded, and writes nothing.
	if out := status(); !strings.Contains(out, "made before versioned migrations") {
		t.Errorf("migrate status before the upgrade:\n%s\nwant 00001_initial.sql applied, unrecorded", out)
	}
	if db.Migrator().HasTable(models.VersionTable) {
		t.Errorf("migrate status wrote %s", models.VersionTable)
	}
	if out, _, err := runCLI(t, env, "migrate"); err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate = %q, %v", out, err)
	}
	if out := status(); !strings.Contains(out, "00001_initial.sql") || !strings.Contains(out, "applied") || strings.Contains(out, "pending") {
		t.Errorf("migrate status after the upgrade:\n%s\nwant 00001_initial.sql applied, nothing pending", out)
	}
	if u, err := models.UserByUsername(ctx, db, "before"); err != nil || u.ID != before.ID {
		t.Errorf("the user from before the upgrade: %+v, %v", u, err)
	}
	if out, _, err := runCLI(t, env, "user", "create", "--username", "after", "--password", "correct horse", "--role", "shopper"); err != nil {
		t.Errorf("user create after the upgrade = %q, %v", out, err)
	}

	// The upgraded shop was version 1, the whole schema, and ran the later ones: a plain down undoes the
	// newest, and each before it, then is refused at version 1 and drops nothing.
	if out, _, err := runCLI(t, env, "migrate", "down"); err != nil || !strings.Contains(out, "00011_draw_seeds.sql") {
		t.Fatalf("migrate down of the newest version = %q, %v; want it to name 00011_draw_seeds.sql", out, err)
	}
	for i := 0; ; i++ {
		out, _, err := runCLI(t, env, "migrate", "down")
		if errors.Is(err, models.ErrDropsEverything) {
			break
		}
		if err != nil || i == 10 {
			t.Fatalf("migrate down = %q, %v; want the versions after 1 undone, then version 1 refused without --drop-everything", out, err)
		}
	}
	// Its own statement: the test's connection keeps the plan of "SELECT * FROM users" from before the
	// downs, which took columns from users (00005's e-mail), and PostgreSQL refuses to reuse it.
	var kept int64
	if err := db.Raw("SELECT id FROM users WHERE username = ?", "before").Scan(&kept).Error; err != nil || kept != before.ID {
		t.Fatalf("the user from before the upgrade after a refused down: %d, %v", kept, err)
	}
	if out, _, err := runCLI(t, env, "migrate", "down", "--drop-everything"); err != nil || !strings.Contains(out, "00001_initial.sql") {
		t.Fatalf("migrate down --drop-everything = %q, %v; want it to name 00001_initial.sql", out, err)
	}
	if out := status(); !strings.Contains(out, "pending") {
		t.Errorf("migrate status after down:\n%s\nwant 00001_initial.sql pending", out)
	}
	if db.Migrator().HasTable(&models.User{}) {
		t.Error("down from version 1 left the users table")
	}
	if out, _, err := runCLI(t, env, "migrate"); err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate after down = %q, %v", out, err)
	}
	if _, err := models.CreateUser(ctx, db, "again", "hash", models.RoleShopper); err != nil {
		t.Errorf("a user after migrating again: %v", err)
	}

	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"migrate", "sideways"}, `unknown migrate step "sideways"`},
		{[]string{"migrate", "down", "2"}, `migrate down takes no "2"`},
		{[]string{"migrate", "status", "extra"}, `migrate status takes no "extra"`},
	} {
		if _, stderr, err := runCLI(t, env, tt.args...); !errors.Is(err, ErrUsage) || !strings.Contains(stderr, tt.says) ||
			!strings.Contains(stderr, "migrate [status|down") {
			t.Errorf("%v = %v, stderr %q; want it to say %s, then the usage", tt.args, err, stderr, tt.says)
		}
	}
}
