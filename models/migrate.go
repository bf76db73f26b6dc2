package models

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
	"gorm.io/gorm"
)

// migrations holds the versioned schema changes, one folder per dialect; migrations/README.md says how to
// add one.
//
//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// VersionTable is where goose records which migrations ran (in the connection's schema).
const VersionTable = "goose_db_version"

// LockTimeout bounds every wait for a table's lock while migrating (PostgreSQL's lock_timeout): a
// migration that would queue behind a shop's long transaction, and hold every query behind itself
// meanwhile, fails instead, to be run again at a quieter moment.
const LockTimeout = 5 * time.Second

// migrateLockID is the PostgreSQL advisory lock that makes instances starting together migrate one at a
// time; the schema's name is folded into it, so that databases in other schemas do not wait for each other.
const migrateLockID = 0x5ec1c111

// Migrate brings the schema up to the newest version. A database made before migrations were versioned
// (by GORM's AutoMigrate: its tables, no version table) is first marked at version 1, which is its schema,
// without running it. Running Migrate twice, or on every start of every instance, does no harm: on
// PostgreSQL instances take turns under an advisory lock, and each migration runs in one transaction
// unless it says otherwise (migrations/README.md).
func Migrate(ctx context.Context, db *gorm.DB) error {
	if err := migrateUp(ctx, db, nil, LockTimeout); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

type loggerKey struct{}

// WithLogger returns ctx carrying log, which the migrations (Migrate, Migrations, MigrateDown) write to,
// so that their lines read as the server's; without it they write to slog's default logger.
func WithLogger(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, log)
}

func loggerOf(ctx context.Context) *slog.Logger {
	if log, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && log != nil {
		return log
	}
	return slog.Default()
}

// migrateUp is Migrate with the migrations of fsys (nil: the embedded ones of db's dialect) and a lock
// timeout of its own.
func migrateUp(ctx context.Context, db *gorm.DB, fsys fs.FS, lockTimeout time.Duration) error {
	m, err := newMigrator(ctx, db, fsys)
	if err != nil {
		return err
	}
	m.lockTimeout = lockTimeout
	if err := m.baseline(ctx); err != nil {
		return err
	}
	p, err := m.provider()
	if err != nil {
		return err
	}
	results, err := p.Up(ctx)
	for _, r := range results {
		loggerOf(ctx).InfoContext(ctx, "migrated", "migration", r.Source.Path, "took", r.Duration.Round(time.Millisecond))
	}
	if err != nil {
		return plainError(err)
	}
	return m.usernameRule(ctx)
}

// Migration is one versioned migration and whether the database has run it.
type Migration struct {
	Version   int64
	Name      string    // its file, such as 00001_initial.sql
	Applied   bool      // the database is at this version or past it
	AppliedAt time.Time // when it ran, or was marked as run (zero when not applied)
	// Unrecorded: the database is this version's schema, made before migrations were versioned, and has no
	// record of it yet (`seckill migrate` writes one).
	Unrecorded bool
}

// Migrations lists every migration, oldest first, and whether the database has run it. It writes nothing:
// a database made before migrations were versioned is said to be at version 1, unrecorded.
func Migrations(ctx context.Context, db *gorm.DB) ([]Migration, error) {
	m, err := newMigrator(ctx, db, nil)
	if err != nil {
		return nil, err
	}
	state, err := m.look(ctx, true)
	if err != nil {
		return nil, err
	}
	p, err := m.provider()
	if err != nil {
		return nil, err
	}
	if state != versioned {
		// Asking goose would make its table: a look changes nothing. An unrecorded database is at version 1.
		var out []Migration
		for _, src := range p.ListSources() {
			out = append(out, Migration{Version: src.Version, Name: src.Path,
				Applied: state == unrecorded && src.Version == 1, Unrecorded: state == unrecorded && src.Version == 1})
		}
		return out, nil
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration status: %w", err)
	}
	out := make([]Migration, len(st))
	for i, s := range st {
		out[i] = Migration{Version: s.Source.Version, Name: s.Source.Path, Applied: s.State == goose.StateApplied, AppliedAt: s.AppliedAt}
	}
	return out, nil
}

// ErrNothingToUndo is MigrateDown's answer for a database that has run no migration.
var ErrNothingToUndo = errors.New("nothing to undo: the database has run no migration")

// ErrDropsEverything is MigrateDown's refusal to undo version 1 without dropEverything: version 1 is the
// whole schema, so undoing it drops every table, data and all (an upgraded shop's too).
var ErrDropsEverything = errors.New("the newest migration the database has run is version 1, the whole schema: undoing it drops every table and all their data; say so with --drop-everything if that is meant")

// MigrateDown undoes the newest migration the database has run, by its Down section, and returns it.
// Undoing version 1 drops every table, data and all: it is refused (ErrDropsEverything) unless
// dropEverything says that is meant.
func MigrateDown(ctx context.Context, db *gorm.DB, dropEverything bool) (Migration, error) {
	m, err := newMigrator(ctx, db, nil)
	if err != nil {
		return Migration{}, err
	}
	if err := m.baseline(ctx); err != nil {
		return Migration{}, err
	}
	p, err := m.provider()
	if err != nil {
		return Migration{}, err
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return Migration{}, fmt.Errorf("migrate down: %w", err)
	}
	switch {
	case v == 0:
		return Migration{}, ErrNothingToUndo
	case v == 1 && !dropEverything:
		return Migration{}, ErrDropsEverything
	}
	r, err := p.Down(ctx)
	if err != nil {
		return Migration{}, fmt.Errorf("migrate down: %w", plainError(err))
	}
	return Migration{Version: r.Source.Version, Name: r.Source.Path}, nil
}

// plainError says goose's partial-migration error as what happened: the migration failed and, run in a
// transaction, was rolled back.
func plainError(err error) error {
	var pe *goose.PartialError
	if errors.As(err, &pe) && pe.Failed != nil {
		return fmt.Errorf("%s failed and nothing of it was kept: %w", pe.Failed.Source.Path, pe.Err)
	}
	if errors.Is(err, goose.ErrNoNextVersion) {
		return ErrNothingToUndo
	}
	return err
}

// migrator runs the migrations of one dialect on one database.
type migrator struct {
	db      *gorm.DB
	dialect goose.Dialect
	fsys    fs.FS // the dialect's migrations, files at its root
	lockID  int64 // PostgreSQL's advisory lock (0 on SQLite)
	// lockTimeout bounds each wait for a table's lock (PostgreSQL's lock_timeout).
	lockTimeout time.Duration
}

func newMigrator(ctx context.Context, db *gorm.DB, fsys fs.FS) (*migrator, error) {
	m := &migrator{db: db.WithContext(ctx), fsys: fsys, lockTimeout: LockTimeout}
	dir := ""
	switch name := db.Dialector.Name(); name {
	case "postgres":
		m.dialect, dir = goose.DialectPostgres, "migrations/postgres"
		var schema string
		if err := m.db.Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
			return nil, fmt.Errorf("current schema: %w", err)
		}
		m.lockID = migrateLockID<<32 | int64(crc32.ChecksumIEEE([]byte(schema)))
	case "sqlite":
		m.dialect, dir = goose.DialectSQLite3, "migrations/sqlite"
	default:
		return nil, fmt.Errorf("no migrations for the %s dialect", name)
	}
	if m.fsys == nil {
		sub, err := fs.Sub(migrations, dir)
		if err != nil {
			return nil, err
		}
		m.fsys = sub
	}
	return m, nil
}

// provider is goose's runner of m's migrations. On PostgreSQL it takes goose's session advisory lock,
// then sets the lock timeout on the connection the migrations run on.
func (m *migrator) provider() (*goose.Provider, error) {
	sqlDB, err := m.db.DB()
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if m.dialect == goose.DialectPostgres {
		// Tried every second for up to 5 minutes: the instance before migrates meanwhile.
		l, err := lock.NewPostgresSessionLocker(lock.WithLockID(m.lockID), lock.WithLockTimeout(1, 300))
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(timeoutLocker{l, m.lockTimeout}))
	}
	// Never Close the provider: it would close the application's pool.
	return goose.NewProvider(m.dialect, sqlDB, m.fsys, opts...)
}

// timeoutLocker is goose's PostgreSQL session lock, with the lock timeout set on the locked session while
// it migrates, and reset before the connection goes back to the pool.
type timeoutLocker struct {
	lock.SessionLocker
	timeout time.Duration
}

var _ lock.SessionLocker = timeoutLocker{}

func (l timeoutLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	if err := l.SessionLocker.SessionLock(ctx, conn); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, setLockTimeout, lockTimeoutValue(l.timeout), false); err != nil {
		return errors.Join(fmt.Errorf("set lock_timeout: %w", err), l.SessionLocker.SessionUnlock(context.WithoutCancel(ctx), conn))
	}
	return nil
}

func (l timeoutLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, "RESET lock_timeout")
	return errors.Join(err, l.SessionLocker.SessionUnlock(ctx, conn))
}

// setLockTimeout sets the lock timeout ($1, lockTimeoutValue), for the transaction only when $2 is true
// (SET LOCAL), else for the session. A constant statement: no SQL is built at run time.
const setLockTimeout = "SELECT set_config('lock_timeout', $1, $2)"

func lockTimeoutValue(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// locked runs fn in a transaction that holds the migrations' advisory lock (on PostgreSQL, where it also
// sets the lock timeout for the transaction).
func (m *migrator) locked(fn func(tx *gorm.DB) error) error {
	return m.db.Transaction(func(tx *gorm.DB) error {
		if m.dialect == goose.DialectPostgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", m.lockID).Error; err != nil {
				return err
			}
			if err := tx.Exec(setLockTimeout, lockTimeoutValue(m.lockTimeout), true).Error; err != nil {
				return err
			}
		}
		return fn(tx)
	})
}

// baseline marks at version 1 a database made before migrations were versioned: every table of version 1
// is there (with every column the models have), and no migration is recorded. Its schema is version 1's
// (the first migration was written from what AutoMigrate made), so nothing runs; later versions then run
// as on any database. An empty database is left to the migrations; one that has only some of the tables,
// or lacks columns (made by a build older than version 1), is refused by name.
func (m *migrator) baseline(ctx context.Context) error {
	_, err := m.look(ctx, false)
	return err
}

// The states look finds a database in.
const (
	versioned  = iota // it has a record of its migrations
	empty             // no tables: version 1 makes it all
	unrecorded        // the schema of version 1 without a record of it (baseline marks it)
)

// look says which state the database is in; unless dryRun it marks an unrecorded one at version 1.
func (m *migrator) look(ctx context.Context, dryRun bool) (int, error) {
	state := versioned
	err := m.locked(func(tx *gorm.DB) error {
		store, err := database.NewStore(m.dialect, VersionTable)
		if err != nil {
			return err
		}
		conn, ok := tx.Statement.ConnPool.(database.DBTxConn)
		if !ok {
			return fmt.Errorf("baseline: the transaction is a %T", tx.Statement.ConnPool)
		}
		tables, err := tx.Migrator().GetTables()
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		hasVersions := slices.Contains(tables, VersionTable)
		if hasVersions {
			v, err := store.GetLatestVersion(ctx, conn)
			if err != nil && !errors.Is(err, database.ErrVersionNotFound) {
				return fmt.Errorf("baseline: %w", err)
			}
			if v > 0 {
				return nil
			}
		}
		var missing []string
		found := 0
		for _, model := range All() {
			stmt := &gorm.Statement{DB: tx}
			if err := stmt.Parse(model); err != nil {
				return err
			}
			if tablesSinceVersion1[stmt.Schema.Table] {
				continue // a database of version 1 has none of them
			}
			if !slices.Contains(tables, stmt.Schema.Table) {
				missing = append(missing, stmt.Schema.Table)
				continue
			}
			found++
			for _, f := range stmt.Schema.Fields {
				if f.DBName != "" && !sinceVersion1[stmt.Schema.Table+"."+f.DBName] && !tx.Migrator().HasColumn(model, f.DBName) {
					missing = append(missing, stmt.Schema.Table+"."+f.DBName)
				}
			}
		}
		switch {
		case found == 0:
			state = empty // version 1 makes it all
			return nil
		case len(missing) > 0:
			return fmt.Errorf("the database has tables but no record of migrations, and is not the schema of version 1 (missing %s): "+
				"run `seckill migrate` of the build it came from first", strings.Join(missing, ", "))
		}
		state = unrecorded
		if dryRun {
			return nil
		}
		if !hasVersions {
			if err := store.CreateVersionTable(ctx, conn); err != nil {
				return fmt.Errorf("baseline: %w", err)
			}
			if err := store.Insert(ctx, conn, database.InsertRequest{Version: 0}); err != nil {
				return fmt.Errorf("baseline: %w", err)
			}
		}
		if err := store.Insert(ctx, conn, database.InsertRequest{Version: 1}); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		loggerOf(ctx).InfoContext(ctx, "a database made before versioned migrations is marked at version 1, its schema", "table", VersionTable)
		return nil
	})
	return state, err
}

// UsernameIndex is the unique index that makes usernames unique ignoring case (ADA is taken when ada is).
const UsernameIndex = "idx_users_username_lower"

// usernameRule adds UsernameIndex where it is missing: version 1 makes it on a new database, but one
// marked at version 1 may lack it. Accounts made before the rule whose names differ only by case are
// never merged or renamed here: they are logged, by id and name, and the index waits until an operator
// has resolved them (the next migrate adds it); meanwhile CreateUser refuses any new clash itself.
func (m *migrator) usernameRule(ctx context.Context) error {
	return m.locked(func(tx *gorm.DB) error {
		if !tx.Migrator().HasTable(&User{}) || tx.Migrator().HasIndex(&User{}, UsernameIndex) {
			return nil
		}
		clashes, err := UsernameClashes(ctx, tx)
		if err != nil {
			return err
		}
		if len(clashes) > 0 {
			names := make([]string, len(clashes))
			for i, u := range clashes {
				names[i] = fmt.Sprintf("%d:%s", u.ID, u.Username)
			}
			loggerOf(ctx).WarnContext(ctx, "usernames that differ only by case: rename or merge them by hand (id:name); "+
				"the unique index on lower(username) is added by the first migrate after, and new clashes are refused meanwhile",
				"accounts", strings.Join(names, " "), "index", UsernameIndex)
			return nil
		}
		return tx.Exec("CREATE UNIQUE INDEX " + UsernameIndex + " ON users (lower(username))").Error
	})
}

// sinceVersion1 are the models' columns that later migrations added: a database of version 1 (made by
// the AutoMigrate of before, unrecorded) has none of them. Each migration that adds a column names it here.
var sinceVersion1 = map[string]bool{
	"activities.rule_one_per_address": true, "activities.rule_accounts_before_approval": true, "activities.eligible_through": true, // 00002
	"users.email": true, "users.email_verified_at": true, // 00005
	"orders.cancel_reason":   true,                                     // 00006
	"mails.list_unsubscribe": true,                                     // 00007
	"activities.stopped_by":  true, "activities.decision_unseen": true, // 00009
	"payments.provider": true, "payments.pay_url": true, "payments.expires_at": true, // 00010
}

// tablesSinceVersion1 are the models' tables that later migrations made: a database of version 1 has none
// of them. Each migration that makes a table names it here.
var tablesSinceVersion1 = map[string]bool{
	"appeals":  true,                 // 00003
	"sessions": true,                 // 00004
	"mails":    true, "tokens": true, // 00005
	"reminders":  true, // 00007
	"draw_seeds": true, // 00011
}
