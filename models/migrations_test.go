package models_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"

	"seckill/internal/testenv"
	"seckill/models"
)

// dialects opens, for each dialect, a migrated database and an empty one of the test's own.
var dialects = []struct {
	name            string
	migrated, empty func(testing.TB) *gorm.DB
	describe        func(testing.TB, *gorm.DB) []string
}{
	{"postgres", testenv.Postgres, emptyPostgres, describePostgres},
	{"sqlite", testenv.SQLite, emptySQLite, describeSQLite},
}

func emptyPostgres(t testing.TB) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(postgresOpen(testenv.PostgresSchema(t)), testenv.GormConfig())
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, db)
	return db
}

func emptySQLite(t testing.TB) *gorm.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := gorm.Open(sqlite.Open(path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"), testenv.GormConfig())
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, db)
	return db
}

func closeOnCleanup(t testing.TB, db *gorm.DB) {
	t.Cleanup(func() {
		if d, err := db.DB(); err == nil {
			d.Close()
		}
	})
}

// autoMigrated is the schema the way it was made before migrations were versioned, and the way GORM reads
// the models today: AutoMigrate of models.All(), and the unique index on lower(username) that no tag can say.
func autoMigrated(t testing.TB, db *gorm.DB) {
	t.Helper()
	if err := db.AutoMigrate(models.All()...); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("CREATE UNIQUE INDEX " + models.UsernameIndex + " ON users (lower(username))").Error; err != nil {
		t.Fatal(err)
	}
	// The trigram index that finds part of a buyer's name (PostgreSQL only): no tag can say it either.
	if db.Dialector.Name() == "postgres" {
		db.Exec("CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public") // a migrated schema may have made it meanwhile
		if err := db.Exec("CREATE INDEX idx_users_username_trgm ON users USING gin (username public.gin_trgm_ops)").Error; err != nil {
			t.Fatal(err)
		}
	}
}

// oldDatabase is a database made by the AutoMigrate of before versioned migrations: its schema dump in
// testdata, made by that code.
func oldDatabase(t testing.TB, dialect string, db *gorm.DB) {
	t.Helper()
	dump, err := os.ReadFile("testdata/automigrate_" + dialect + ".sql")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(string(dump)).Error; err != nil {
		t.Fatalf("the old schema: %v", err)
	}
}

// describePostgres lists what makes the schema of db's connection: columns (type, length, nullability,
// default, position), indexes, constraints and sequences, one line each, goose's own table left out.
func describePostgres(t testing.TB, db *gorm.DB) []string {
	t.Helper()
	var schema string
	if err := db.Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, q := range []string{
		`SELECT 'column ' || table_name || '.' || column_name || ' #' || ordinal_position || ' ' || data_type ||
			coalesce('(' || character_maximum_length || ')', '') || ' nullable=' || is_nullable || ' default=' || coalesce(column_default, '-')
		 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name <> 'goose_db_version'`,
		`SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename <> 'goose_db_version'`,
		`SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
		 FROM pg_constraint WHERE connamespace = current_schema()::regnamespace AND conrelid::regclass::text <> 'goose_db_version'`,
		`SELECT 'sequence ' || sequence_name || ' ' || data_type || ' start=' || start_value || ' by=' || increment
		 FROM information_schema.sequences WHERE sequence_schema = current_schema() AND sequence_name NOT LIKE 'goose%'`,
	} {
		var got []string
		if err := db.Raw(q).Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		for _, l := range got {
			lines = append(lines, strings.ReplaceAll(l, schema+".", ""))
		}
	}
	slices.Sort(lines)
	return lines
}

var sqliteNoise = regexp.MustCompile("[`\"\\s]")

// describeSQLite lists what makes the schema of a SQLite database: each table's columns (type, NOT NULL,
// default, primary key, position) and AUTOINCREMENT, its foreign keys, and its indexes (their SQL without
// quotes and spaces). A default written "x" (as GORM did) and 'x' are the same string to SQLite.
func describeSQLite(t testing.TB, db *gorm.DB) []string {
	t.Helper()
	type object struct {
		Type, Name, TblName string
		SQL                 *string
	}
	var objects []object
	if err := db.Raw("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_sequence' AND tbl_name <> 'goose_db_version'").
		Scan(&objects).Error; err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, o := range objects {
		switch {
		case o.Type == "index" && o.SQL == nil:
			lines = append(lines, "index "+o.Name) // made by SQLite for a PRIMARY KEY or UNIQUE
		case o.Type == "index":
			lines = append(lines, "index "+strings.ToLower(sqliteNoise.ReplaceAllString(*o.SQL, "")))
		case o.Type == "table":
			lines = append(lines, fmt.Sprintf("table %s autoincrement=%v", o.Name, strings.Contains(strings.ToUpper(*o.SQL), "AUTOINCREMENT")))
			var cols []struct {
				Cid        int
				Name, Type string
				Notnull    bool
				DfltValue  *string
				Pk         int
			}
			if err := db.Raw("SELECT cid, name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", o.Name).Scan(&cols).Error; err != nil {
				t.Fatal(err)
			}
			for _, c := range cols {
				dflt := "-"
				if c.DfltValue != nil {
					dflt = strings.Trim(*c.DfltValue, `'"`)
				}
				lines = append(lines, fmt.Sprintf("column %s.%s #%d %s notnull=%v default=%s pk=%d", o.Name, c.Name, c.Cid, strings.ToLower(c.Type), c.Notnull, dflt, c.Pk))
			}
			var fks []struct{ Table, From, To, OnUpdate, OnDelete string }
			if err := db.Raw(`SELECT "table", "from", "to", on_update, on_delete FROM pragma_foreign_key_list(?)`, o.Name).Scan(&fks).Error; err != nil {
				t.Fatal(err)
			}
			for _, f := range fks {
				lines = append(lines, fmt.Sprintf("foreign key %s.%s -> %s.%s on update %s on delete %s", o.Name, f.From, f.Table, f.To, f.OnUpdate, f.OnDelete))
			}
		default:
			lines = append(lines, o.Type+" "+o.Name)
		}
	}
	slices.Sort(lines)
	return lines
}

// sameSchema fails, naming each line, where two descriptions differ.
func sameSchema(t *testing.T, wantName string, want []string, gotName string, got []string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s describes no schema", wantName)
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			t.Errorf("only in %s: %s", wantName, l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			t.Errorf("only in %s: %s", gotName, l)
		}
	}
}

// TestMigrationsAgreeWithTheModels is the schema check of CI: the migrations, run on an empty database,
// make exactly what GORM reads in the models (AutoMigrate into another empty one). A field added to a
// model without a migration, or a migration that strays from the models, fails here by name.
func TestMigrationsAgreeWithTheModels(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			auto := d.empty(t)
			autoMigrated(t, auto)
			sameSchema(t, "the models (AutoMigrate)", d.describe(t, auto), "the migrations", d.describe(t, d.migrated(t)))
		})
	}
}

// TestUpgradeFromAutoMigratedDatabase: a database made by the AutoMigrate of before versioned migrations,
// with rows in it, is marked at version 1 without running it, ends up with the schema a new database
// gets, keeps its rows, and serves a sale with the books right.
func TestUpgradeFromAutoMigratedDatabase(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			db := d.empty(t)
			oldDatabase(t, d.name, db)
			before, err := models.CreateUser(ctx, db, "before", "hash", models.RoleShopper)
			if err != nil {
				t.Fatal(err)
			}
			if err := models.Migrate(ctx, db); err != nil {
				t.Fatalf("migrating the old database: %v", err)
			}
			var version int64
			if err := db.Raw("SELECT max(version_id) FROM " + models.VersionTable + " WHERE is_applied").Scan(&version).Error; err != nil || version != latestVersion {
				t.Fatalf("the version table says %d, %v; want %d (recorded at 1, the later ones run)", version, err, latestVersion)
			}
			ms, err := models.Migrations(ctx, db)
			if err != nil || len(ms) == 0 || ms[0].Version != 1 || !ms[0].Applied {
				t.Fatalf("Migrations = %+v, %v; want version 1 applied", ms, err)
			}
			sameSchema(t, "a new database", d.describe(t, d.migrated(t)), "the upgraded one", d.describe(t, db))

			if u, err := models.UserByUsername(ctx, db, "before"); err != nil || u.ID != before.ID {
				t.Errorf("the user from before: %+v, %v", u, err)
			}
			now := time.Now().UTC()
			a, item := testenv.Sale(t, db, 3, now.Add(-time.Minute), now.Add(time.Hour))
			placed, err := models.PlaceOrders(ctx, db, item.ID, []models.NewOrder{
				{OrderNo: "SKup1", UserID: before.ID, ActivityID: a.ID, PriceCents: 990, BoughtAt: now},
				{OrderNo: "SKup2", UserID: before.ID + 1, ActivityID: a.ID, PriceCents: 990, BoughtAt: now},
			}, now, 15*time.Minute)
			if err != nil || placed["SKup1"].Outcome != models.Placed || placed["SKup2"].Outcome != models.Placed {
				t.Fatalf("placing orders after the upgrade: %v, %v", placed, err)
			}
			var sold int64
			db.Model(&models.Item{}).Where("id = ?", item.ID).Select("stock_sold").Scan(&sold)
			var logs int64
			db.Model(&models.StockLog{}).Where("item_id = ? AND kind = ?", item.ID, models.StockSell).Count(&logs)
			if sold != 2 || logs != 2 {
				t.Errorf("after two orders: stock_sold %d, sell logs %d; want 2 and 2", sold, logs)
			}
			checkDefences(t, db)

			if err := models.Migrate(ctx, db); err != nil {
				t.Errorf("migrating the upgraded database again: %v", err)
			}
		})
	}
}

// TestUpgradeAddsTheUsernameIndexWhenMissing: a database from before the lower(username) rule is marked at
// version 1 all the same, and the index is added after (no names clash).
func TestUpgradeAddsTheUsernameIndexWhenMissing(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			db := d.empty(t)
			oldDatabase(t, d.name, db)
			if err := db.Exec("DROP INDEX " + models.UsernameIndex).Error; err != nil {
				t.Fatal(err)
			}
			if err := models.Migrate(context.Background(), db); err != nil {
				t.Fatal(err)
			}
			if !db.Migrator().HasIndex(&models.User{}, models.UsernameIndex) {
				t.Error("no unique index on lower(username) after the upgrade")
			}
		})
	}
}

// TestMigrateRefusesAPartOfTheSchema: tables without a record of migrations that are not the whole of
// version 1 (a build older than it, or a half-made database) are refused by name, never marked.
func TestMigrateRefusesAPartOfTheSchema(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			db := d.empty(t)
			oldDatabase(t, d.name, db)
			if err := db.Exec("DROP TABLE refunds").Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Migrator().DropColumn(&models.Item{}, "stock_shards"); err != nil {
				t.Fatal(err)
			}
			err := models.Migrate(context.Background(), db)
			if err == nil || !strings.Contains(err.Error(), "refunds") || !strings.Contains(err.Error(), "items.stock_shards") {
				t.Fatalf("Migrate = %v; want a refusal naming refunds and items.stock_shards", err)
			}
			if db.Migrator().HasTable(models.VersionTable) {
				t.Error("the refused database was given a version table")
			}
		})
	}
}

// TestMigrateDownAndStatus: down undoes version 1 (every table goes), status says which ran, and up makes
// it all again.
func TestMigrateDownAndStatus(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			db := d.migrated(t)
			ms, err := models.Migrations(ctx, db)
			if err != nil || len(ms) < 2 || ms[len(ms)-1].Version != latestVersion || ms[0].Name != "00001_initial.sql" || !ms[0].Applied ||
				ms[0].AppliedAt.IsZero() || !ms[len(ms)-1].Applied {
				t.Fatalf("status of a new database = %+v, %v; want 00001_initial.sql and the later ones applied, with their times", ms, err)
			}
			// The later versions come undone one by one, newest first, without the switch.
			for i := len(ms) - 1; i > 0; i-- {
				if undone, err := models.MigrateDown(ctx, db, false); err != nil || undone.Version != ms[i].Version {
					t.Fatalf("down from version %d = %+v, %v", ms[i].Version, undone, err)
				}
			}
			if db.Migrator().HasColumn(&models.Activity{}, "rule_one_per_address") {
				t.Error("down from version 2 left the rules' columns")
			}
			if _, err := models.MigrateDown(ctx, db, false); !errors.Is(err, models.ErrDropsEverything) {
				t.Fatalf("down from version 1 without --drop-everything: %v; want ErrDropsEverything", err)
			}
			if len(checkTablesLeft(t, db)) != len(models.All())-len(tablesSinceVersion1) {
				t.Fatalf("a refused down dropped tables")
			}
			undone, err := models.MigrateDown(ctx, db, true)
			if err != nil || undone.Version != 1 {
				t.Fatalf("down = %+v, %v; want version 1 undone", undone, err)
			}
			for _, m := range models.All() {
				if db.Migrator().HasTable(m) {
					t.Errorf("the table of %T is left after down from version 1", m)
				}
			}
			if ms, err := models.Migrations(ctx, db); err != nil || ms[0].Applied {
				t.Errorf("status after down = %+v, %v; want version 1 pending", ms, err)
			}
			if _, err := models.MigrateDown(ctx, db, true); !errors.Is(err, models.ErrNothingToUndo) {
				t.Errorf("down with nothing run: %v; want ErrNothingToUndo", err)
			}
			if err := models.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			checkDefences(t, db)
		})
	}
}

// latestVersion is the newest migration's version.
const latestVersion = 11

// tablesSinceVersion1 are the tables of models.All() that migrations after version 1 made.
var tablesSinceVersion1 = []string{"appeals", "sessions", "mails", "tokens", "reminders", "draw_seeds"}

// initialPostgres is the real first migration, for migrations of the tests' own that come after it.
func initialPostgres(t *testing.T) *fstest.MapFile {
	t.Helper()
	b, err := os.ReadFile("migrations/postgres/00001_initial.sql")
	if err != nil {
		t.Fatal(err)
	}
	return &fstest.MapFile{Data: b}
}

// TestMigrationOutsideATransactionBuildsAnIndexConcurrently: the machinery runs a migration marked
// NO TRANSACTION as it is, so an index on a large table can be built CONCURRENTLY (which PostgreSQL
// refuses inside a transaction), and undone the same way.
func TestMigrationOutsideATransactionBuildsAnIndexConcurrently(t *testing.T) {
	ctx := context.Background()
	db := emptyPostgres(t)
	fsys := fstest.MapFS{
		"00001_initial.sql": initialPostgres(t),
		"00002_orders_paid_at.sql": {Data: []byte(`-- +goose NO TRANSACTION
-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_orders_paid_at ON orders (paid_at);
-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS idx_orders_paid_at;
`)},
	}
	if err := models.MigrateWith(ctx, db, fsys, time.Second); err != nil {
		t.Fatalf("a NO TRANSACTION migration: %v", err)
	}
	var valid bool
	if err := db.Raw("SELECT indisvalid FROM pg_index WHERE indexrelid = 'idx_orders_paid_at'::regclass").Scan(&valid).Error; err != nil || !valid {
		t.Fatalf("idx_orders_paid_at valid = %v, %v; want a valid index", valid, err)
	}
	var version int64
	db.Raw("SELECT max(version_id) FROM " + models.VersionTable + " WHERE is_applied").Scan(&version)
	if version != 2 {
		t.Errorf("version %d after the concurrent index, want 2", version)
	}
}

// TestMigrationGivesUpOnABusyTable: a migration that must wait for a lock a shop's transaction holds gives
// up after the lock timeout, instead of waiting and making every query of that table queue behind it; the
// version is not recorded, and it runs once the table is free.
func TestMigrationGivesUpOnABusyTable(t *testing.T) {
	ctx := context.Background()
	db := emptyPostgres(t)
	fsys := fstest.MapFS{
		"00001_initial.sql": initialPostgres(t),
		"00002_orders_note.sql": {Data: []byte(`-- +goose Up
ALTER TABLE orders ADD COLUMN note text;
-- +goose Down
ALTER TABLE orders DROP COLUMN note;
`)},
	}
	if err := models.MigrateWith(ctx, db, fstest.MapFS{"00001_initial.sql": fsys["00001_initial.sql"]}, time.Second); err != nil {
		t.Fatal(err)
	}
	shop := db.Begin() // a long read of orders, as a report would do
	if err := shop.Exec("SELECT count(*) FROM orders").Error; err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := models.MigrateWith(ctx, db, fsys, 200*time.Millisecond)
	took := time.Since(start)
	shop.Rollback()
	if err == nil || !strings.Contains(err.Error(), "lock timeout") {
		t.Fatalf("migrating past a busy table = %v; want a lock timeout", err)
	}
	if took > 3*time.Second {
		t.Errorf("the migration waited %v for the table, want about the lock timeout (200ms)", took)
	}
	if db.Migrator().HasColumn(&models.Order{}, "note") {
		t.Error("the migration that gave up left its column")
	}
	if err := models.MigrateWith(ctx, db, fsys, 200*time.Millisecond); err != nil {
		t.Fatalf("the same migration on a free table: %v", err)
	}
	if !db.Migrator().HasColumn(&models.Order{}, "note") {
		t.Error("no column after the migration ran")
	}
	// The lock timeout was the migration's own: the pool's connections are back to the server's default.
	sqlDB, _ := db.DB()
	sqlDB.SetMaxOpenConns(1)
	var setting string
	if err := db.Raw("SHOW lock_timeout").Scan(&setting).Error; err != nil || setting != "0" {
		t.Errorf("lock_timeout of the pool after migrating = %q, %v; want 0", setting, err)
	}
}

// checkTablesLeft names the models whose tables db has.
func checkTablesLeft(t testing.TB, db *gorm.DB) []string {
	t.Helper()
	var left []string
	for _, m := range models.All() {
		if db.Migrator().HasTable(m) {
			left = append(left, fmt.Sprintf("%T", m))
		}
	}
	return left
}
