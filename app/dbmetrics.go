package app

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"
)

// dbMetrics counts what an instance asks of its database, from its own side: every statement by its main
// table and kind (read or write), and every transaction (a statement outside one is a transaction of its
// own, as PostgreSQL counts it). The crowd's budget of transactions a second is read from these.
type dbMetrics struct {
	statements   *prometheus.CounterVec
	transactions prometheus.Counter

	mu     sync.RWMutex
	series map[statementKind]prometheus.Counter // bounded by maxTableLabels tables
}

type statementKind struct{ table, kind string }

const (
	kindRead  = "read"
	kindWrite = "write"
	// otherTable is the label of a statement whose table is not known (a raw statement on no table, a
	// name past the bound).
	otherTable = "other"
	// maxTableLabels bounds the table label's values: the schema has a dozen tables.
	maxTableLabels = 64
)

func newDBMetrics(reg prometheus.Registerer) *dbMetrics {
	m := &dbMetrics{
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_db_statements_total",
			Help: "Database statements sent, by main table (other when unknown) and kind (read or write).",
		}, []string{"table", "kind"}),
		transactions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_db_transactions_total",
			Help: "Database transactions ended (committed or rolled back), a statement outside a transaction counting as one.",
		}),
		series: map[statementKind]prometheus.Counter{},
	}
	reg.MustRegister(m.statements, m.transactions)
	return m
}

// countStatements returns a session of db whose statements and transactions m counts. The counting
// callbacks are registered once on db's callbacks (every session of one gorm.Open shares them) and count
// only the statements sent through such a session's pool, each into its own server's metrics: two
// servers on one database (the tests') count apart, and the caller's own db is not counted.
func countStatements(db *gorm.DB, m *dbMetrics) (*gorm.DB, error) {
	if err := db.Use(countingPlugin{}); err != nil && !errors.Is(err, gorm.ErrRegistered) {
		return nil, err
	}
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	// A session with a context of its own has a statement of its own, so the pool set below is this
	// session's, not the caller's; the configuration is the session's copy.
	db = db.Session(&gorm.Session{Context: ctx})
	if _, ok := db.Statement.ConnPool.(*countingPool); !ok {
		pool := &countingPool{ConnPool: db.Statement.ConnPool, m: m}
		db.Statement.ConnPool = pool
		// After a builder's write, GORM puts the configuration's pool back in its statement.
		db.Config.ConnPool = pool
	}
	return db, nil
}

// countingPlugin registers the callbacks that count statements, after each kind's own step.
type countingPlugin struct{}

func (countingPlugin) Name() string { return "seckill:db_metrics" }

func (countingPlugin) Initialize(db *gorm.DB) error {
	const name, commit = "seckill:count", "gorm:commit_or_rollback_transaction"
	cb := db.Callback()
	// A builder's write is counted inside the transaction GORM wraps it in (its commit counts that).
	return errors.Join(
		cb.Create().Before(commit).After("gorm:create").Register(name, func(tx *gorm.DB) { count(tx, kindWrite) }),
		cb.Update().Before(commit).After("gorm:update").Register(name, func(tx *gorm.DB) { count(tx, kindWrite) }),
		cb.Delete().Before(commit).After("gorm:delete").Register(name, func(tx *gorm.DB) { count(tx, kindWrite) }),
		cb.Query().After("gorm:query").Register(name, func(tx *gorm.DB) { count(tx, kindRead) }),
		// Raw(...).Scan and Row go through Row; Exec through Raw: their kind is their SQL's.
		cb.Row().After("gorm:row").Register(name, func(tx *gorm.DB) { count(tx, "") }),
		cb.Raw().After("gorm:raw").Register(name, func(tx *gorm.DB) { count(tx, "") }),
	)
}

// count counts tx's statement, if one was sent, into the metrics of the pool it was sent through.
func count(tx *gorm.DB, kind string) {
	st := tx.Statement
	if tx.DryRun || st.SQL.Len() == 0 {
		return
	}
	var m *dbMetrics
	switch p := st.ConnPool.(type) {
	case *countingPool:
		m = p.m
		if _, wrapped := tx.InstanceGet("gorm:started_transaction"); !wrapped {
			m.transactions.Inc() // outside a transaction: one of its own
		}
	case *countingTx:
		m = p.m
	default:
		return
	}
	sql := st.SQL.String()
	if kind == "" {
		kind = sqlKind(sql)
	}
	// The SQL names the table first: a raw statement's Statement.Table is its destination's (a row
	// struct's name), not the table it reads.
	table := sqlTable(sql)
	if table == "" {
		table = st.Table
	}
	m.counter(table, kind).Inc()
}

// counter is the series of a table and kind; past maxTableLabels tables, a new name counts as other.
func (m *dbMetrics) counter(table, kind string) prometheus.Counter {
	if !tableName(table) {
		table = otherTable
	}
	k := statementKind{table, kind}
	m.mu.RLock()
	c, ok := m.series[k]
	m.mu.RUnlock()
	if ok {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.series[k]; ok {
		return c
	}
	if len(m.series) >= 2*maxTableLabels {
		k.table = otherTable
		if c, ok := m.series[k]; ok {
			return c
		}
	}
	k.table = strings.Clone(k.table)
	c = m.statements.WithLabelValues(k.table, k.kind)
	m.series[k] = c
	return c
}

// tableName reports whether s can be a table's plain name (lower case, as the schema's are).
func tableName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; !('a' <= b && b <= 'z' || b == '_' || i > 0 && '0' <= b && b <= '9') {
			return false
		}
	}
	return true
}

// sqlKind is a raw statement's kind by its first word: a SELECT (or a WITH that changes nothing, SHOW,
// EXPLAIN, VALUES) reads; anything else writes.
func sqlKind(sql string) string {
	switch strings.ToLower(firstWord(sql)) {
	case "select", "show", "explain", "values":
		return kindRead
	case "with":
		lower := strings.ToLower(sql)
		for _, w := range []string{"insert ", "update ", "delete "} {
			if strings.Contains(lower, w) {
				return kindWrite
			}
		}
		return kindRead
	}
	return kindWrite
}

// sqlTable is a raw statement's main table: the name after UPDATE, INSERT INTO, DELETE FROM or the first
// FROM; "" when there is none.
func sqlTable(sql string) string {
	words := strings.Fields(sql)
	for i, w := range words {
		if i+1 >= len(words) {
			break
		}
		switch strings.ToLower(w) {
		case "update", "into", "from":
			name := strings.Trim(words[i+1], `"`+"`;(),")
			if dot := strings.LastIndexByte(name, '.'); dot >= 0 {
				name = strings.Trim(name[dot+1:], `"`)
			}
			return strings.ToLower(name)
		}
	}
	return ""
}

func firstWord(s string) string {
	s = strings.TrimLeft(s, " \t\r\n(")
	end := strings.IndexAny(s, " \t\r\n(")
	if end < 0 {
		return s
	}
	return s[:end]
}

// countingPool is a database pool whose transactions are counted when they end.
type countingPool struct {
	gorm.ConnPool
	m *dbMetrics
}

var (
	_ gorm.ConnPoolBeginner = (*countingPool)(nil)
	_ gorm.GetDBConnector   = (*countingPool)(nil)
	_ gorm.TxCommitter      = (*countingTx)(nil)
	_ gorm.GetDBConnector   = (*countingTx)(nil)
)

// BeginTx begins a transaction as GORM would on the pool itself.
func (p *countingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	var (
		tx  gorm.ConnPool
		err error
	)
	switch b := p.ConnPool.(type) {
	case gorm.TxBeginner:
		tx, err = b.BeginTx(ctx, opts)
	case gorm.ConnPoolBeginner:
		tx, err = b.BeginTx(ctx, opts)
	default:
		return nil, gorm.ErrInvalidTransaction
	}
	if err != nil {
		return nil, err
	}
	return &countingTx{ConnPool: tx, pool: p, m: p.m}, nil
}

// GetDBConn is the pool's *sql.DB (for db.DB()).
func (p *countingPool) GetDBConn() (*sql.DB, error) {
	switch c := p.ConnPool.(type) {
	case *sql.DB:
		return c, nil
	case gorm.GetDBConnector:
		return c.GetDBConn()
	}
	return nil, gorm.ErrInvalidDB
}

// countingTx is a transaction that counts itself once when it ends.
type countingTx struct {
	gorm.ConnPool
	pool *countingPool
	m    *dbMetrics
}

func (t *countingTx) Commit() error { return t.end(gorm.TxCommitter.Commit) }

func (t *countingTx) Rollback() error { return t.end(gorm.TxCommitter.Rollback) }

// end commits or rolls back; a transaction already ended is not counted again.
func (t *countingTx) end(how func(gorm.TxCommitter) error) error {
	c, ok := t.ConnPool.(gorm.TxCommitter)
	if !ok {
		return gorm.ErrInvalidTransaction
	}
	err := how(c)
	if !errors.Is(err, sql.ErrTxDone) {
		t.m.transactions.Inc()
	}
	return err
}

// GetDBConn is the pool's *sql.DB (for db.DB() inside a transaction).
func (t *countingTx) GetDBConn() (*sql.DB, error) { return t.pool.GetDBConn() }
