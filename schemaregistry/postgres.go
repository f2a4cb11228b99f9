package schemaregistry

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Advisory lock keys: one for migrations, one that every registry write
// takes (shared, or exclusive for permanent deletes: see lockScope).
const (
	migrateLockKey = 0x6665727279_01 // "ferry" + 1
	writeLockKey   = 0x6665727279_02
	notifyChannel  = "ferry_schemaregistry"
	// notifyAll is the payload of a change that may touch any subject or id.
	notifyAll = "*"
)

func init() {
	unavailableChecks = append(unavailableChecks, func(err error) bool {
		var ce *pgconn.ConnectError
		var ne net.Error
		return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, pgx.ErrTxClosed)
	})
}

// PostgresStore keeps the registry in PostgreSQL. Ids come from a
// sequence and versions are assigned under a transaction-scoped advisory
// lock on the subject, so ids and versions are unique across every ferry
// node sharing the database while writes to different subjects commit
// concurrently; each write NOTIFYs the others, whose Watch callbacks drop
// cached state.
type PostgresStore struct {
	dsn     string
	pool    *pgxpool.Pool
	timeout time.Duration
	logger  *slog.Logger

	cancel context.CancelFunc
	done   chan struct{}

	// ownPIDs holds the backend process ids of this store's connections
	// (uint32 → struct{}): a notification from one of them announces this
	// node's own write, which its Registry has already accounted for, so
	// the listener drops it instead of emptying caches just filled.
	ownPIDs sync.Map

	mu struct {
		sync.Mutex
		watchers []func(string)
	}
}

// PostgresConfig configures OpenPostgres.
type PostgresConfig struct {
	// DSN is a postgres:// URL.
	DSN string
	// Timeout bounds each store operation. Default 10 s.
	Timeout time.Duration
	Logger  *slog.Logger
}

// OpenPostgres connects, applies the embedded migrations and starts
// listening for other nodes' changes.
func OpenPostgres(ctx context.Context, cfg PostgresConfig) (*PostgresStore, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("postgres dsn: %w", err)
	}
	if !strings.Contains(cfg.DSN, "pool_max_conns") && pcfg.MaxConns < 10 {
		pcfg.MaxConns = 10 // one is the LISTEN connection; pgx's default is 4 here
	}
	s := &PostgresStore{dsn: cfg.DSN, timeout: cfg.Timeout, logger: cfg.Logger.With("component", "schemaregistry-postgres")}
	pcfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		s.ownPIDs.Store(conn.PgConn().PID(), struct{}{})
		return nil
	}
	pcfg.BeforeClose = func(conn *pgx.Conn) { s.ownPIDs.Delete(conn.PgConn().PID()) }
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s.pool = pool
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.migrate(mctx); err != nil {
		pool.Close()
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	s.cancel, s.done = stop, make(chan struct{})
	go s.listen(lctx)
	return s, nil
}

// migrate applies every embedded migration not applied yet, in name
// order, under a session advisory lock so nodes starting together do not
// race.
func (s *PostgresStore) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrateLockKey)); err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", int64(migrateLockKey))
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schemaregistry_migrations (
		name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres: migrations table: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := applyMigration(ctx, conn.Conn(), name); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, name string) error {
	var applied bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM schemaregistry_migrations WHERE name = $1)", name).Scan(&applied); err != nil || applied {
		return err
	}
	sql, err := migrations.ReadFile(name)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, string(sql)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO schemaregistry_migrations (name) VALUES ($1)", name)
		return err
	})
}

// listen runs LISTEN on a dedicated connection and hands notifications to
// the watchers; after losing the connection it tells them everything may
// have changed, then reconnects.
func (s *PostgresStore) listen(ctx context.Context) {
	defer close(s.done)
	for ctx.Err() == nil {
		err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		s.logger.Warn("schema change listener lost its connection; reconnecting", "err", err)
		s.notifyWatchers(notifyAll)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (s *PostgresStore) listenOnce(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	// Changes made before LISTEN took effect were not announced.
	s.notifyWatchers(notifyAll)
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			conn.Conn().Close(context.Background()) // do not return a LISTENing conn to the pool
			return err
		}
		if _, own := s.ownPIDs.Load(n.PID); own {
			continue
		}
		s.notifyWatchers(n.Payload)
	}
}

func (s *PostgresStore) notifyWatchers(payload string) {
	subject := strings.TrimPrefix(payload, "s:")
	if payload == notifyAll {
		subject = ""
	}
	s.mu.Lock()
	ws := s.mu.watchers
	s.mu.Unlock()
	for _, fn := range ws {
		fn(subject)
	}
}

// Watch implements Store.
func (s *PostgresStore) Watch(fn func(subject string)) {
	s.mu.Lock()
	s.mu.watchers = append(s.mu.watchers, fn)
	s.mu.Unlock()
}

// DSN is the database URL the store was opened with.
func (s *PostgresStore) DSN() string { return s.dsn }

// Close implements Store.
func (s *PostgresStore) Close() error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
		s.cancel = nil
	}
	s.pool.Close()
	return nil
}

func (s *PostgresStore) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// Schema implements Store.
func (s *PostgresStore) Schema(ctx context.Context, id int) (StoredSchema, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	sc := StoredSchema{ID: id}
	err := s.pool.QueryRow(ctx, "SELECT schema_type, schema_text, fingerprint FROM schemaregistry_schemas WHERE id = $1", id).
		Scan(&sc.Type, &sc.Text, &sc.Fingerprint)
	if errors.Is(err, pgx.ErrNoRows) {
		return sc, ErrStoreNotFound
	}
	if err != nil {
		return sc, err
	}
	rows, err := s.pool.Query(ctx, "SELECT name, subject, version FROM schemaregistry_references WHERE schema_id = $1 ORDER BY position", id)
	if err != nil {
		return sc, err
	}
	sc.References, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Reference, error) {
		var ref Reference
		err := row.Scan(&ref.Name, &ref.Subject, &ref.Version)
		return ref, err
	})
	if len(sc.References) == 0 {
		sc.References = nil
	}
	return sc, err
}

// SchemaID implements Store.
func (s *PostgresStore) SchemaID(ctx context.Context, fp string) (int, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var id int
	err := s.pool.QueryRow(ctx, "SELECT id FROM schemaregistry_schemas WHERE fingerprint = $1", fp).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrStoreNotFound
	}
	return id, err
}

// Subjects implements Store.
func (s *PostgresStore) Subjects(ctx context.Context) ([]SubjectInfo, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT subject, count(*) FILTER (WHERE NOT deleted)
		FROM schemaregistry_versions GROUP BY subject ORDER BY subject COLLATE "C"`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (SubjectInfo, error) {
		var si SubjectInfo
		err := row.Scan(&si.Name, &si.Live)
		return si, err
	})
}

func collectVersions(rows pgx.Rows) ([]Version, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Version, error) {
		var v Version
		err := row.Scan(&v.Subject, &v.Version, &v.ID, &v.Deleted)
		return v, err
	})
}

// Versions implements Store.
func (s *PostgresStore) Versions(ctx context.Context, subject string) ([]Version, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT subject, version, schema_id, deleted FROM schemaregistry_versions
		WHERE subject = $1 ORDER BY version`, subject)
	if err != nil {
		return nil, err
	}
	return collectVersions(rows)
}

// VersionsOf implements Store.
func (s *PostgresStore) VersionsOf(ctx context.Context, id int) ([]Version, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT subject, version, schema_id, deleted FROM schemaregistry_versions
		WHERE schema_id = $1 ORDER BY subject COLLATE "C", version`, id)
	if err != nil {
		return nil, err
	}
	return collectVersions(rows)
}

// ReferencedBy implements Store: ids of schemas with a live version that
// reference subject/version.
func (s *PostgresStore) ReferencedBy(ctx context.Context, subject string, version int) ([]int, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT r.schema_id FROM schemaregistry_references r
		WHERE r.subject = $1 AND r.version = $2 AND EXISTS (
			SELECT 1 FROM schemaregistry_versions v WHERE v.schema_id = r.schema_id AND NOT v.deleted)
		ORDER BY r.schema_id`, subject, version)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// Lock scopes of a write (see migrations/0002_concurrent_writes.sql):
// lockSubject takes the registry lock shared and the subject's lock, so
// writes to different subjects run (and commit) concurrently; lockAll
// takes the registry lock exclusively, for permanent deletes, which may
// remove schemas other subjects' registrations are about to reuse.
type lockScope int

const (
	lockSubject lockScope = iota
	lockAll
)

// subjectLockClass is the first key of a subject's advisory lock
// (two-key form, the second is hashtext(subject)); "ferr".
const subjectLockClass = 0x66657272

// write runs fn in a transaction holding the scope's advisory locks, then
// announces the change to the other nodes (payload notifyAll or "s:"+subject).
func (s *PostgresStore) write(ctx context.Context, scope lockScope, subject, payload string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if scope == lockAll {
			_, err = tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(writeLockKey))
		} else {
			_, err = tx.Exec(ctx, "SELECT pg_advisory_xact_lock_shared($1), pg_advisory_xact_lock($2, hashtext($3))",
				int64(writeLockKey), int32(subjectLockClass), subject)
		}
		if err != nil {
			return err
		}
		if err := fn(ctx, tx); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", notifyChannel, notifyPayload(payload))
		return err
	})
}

// notifyPayload bounds a NOTIFY payload: PostgreSQL refuses 8000 bytes
// and more, and "everything may have changed" is always true.
func notifyPayload(payload string) string {
	if len(payload) > 7000 {
		return notifyAll
	}
	return payload
}

// AddVersion implements Store: one call of schemaregistry_add_version in
// its own transaction, then the NOTIFY in a second one, both sent in one
// round trip (a pipeline). A NOTIFY inside the writing transaction would
// hold PostgreSQL's database-wide notification lock through the commit's
// flush and so serialize every registration again; sent after the commit
// it still reaches the other nodes only once the write is visible, and
// if PostgreSQL stops in between, their listening connections drop and
// they empty their caches anyway. (A conflict announces nothing new: the
// other nodes drop that subject's cached rows, which costs a reread.)
func (s *PostgresStore) AddVersion(ctx context.Context, w NewVersion) (Version, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	names := make([]string, len(w.Schema.References))
	subjects := make([]string, len(w.Schema.References))
	versions := make([]int32, len(w.Schema.References))
	for i, ref := range w.Schema.References {
		names[i], subjects[i], versions[i] = ref.Name, ref.Subject, int32(ref.Version)
	}
	var assumed SettingValues
	if w.Assumed != nil {
		assumed = *w.Assumed
	}
	var outcome string
	var version, id int
	var created bool
	batch := &pgx.Batch{}
	batch.Queue("BEGIN")
	batch.Queue(`SELECT o_outcome, o_version, o_id, o_created
		FROM schemaregistry_add_version($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		w.Subject, w.ExpectLatest, w.Version, w.ID, w.Schema.Fingerprint, w.Schema.Type, w.Schema.Text,
		names, subjects, versions,
		w.Assumed != nil, assumed.SubjectLevel, assumed.GlobalLevel, assumed.SubjectMode, assumed.GlobalMode).
		QueryRow(func(row pgx.Row) error { return row.Scan(&outcome, &version, &id, &created) })
	batch.Queue("COMMIT")
	batch.Queue("SELECT pg_notify($1, $2)", notifyChannel, notifyPayload("s:"+w.Subject))
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return Version{}, err
	}
	switch outcome {
	case "ok":
		return Version{Subject: w.Subject, Version: version, ID: id, Created: created}, nil
	case "conflict":
		return Version{}, ErrStoreConflict
	case "id_in_use":
		return Version{}, ErrIDInUse
	case "version_in_use":
		return Version{}, ErrVersionInUse
	}
	return Version{}, fmt.Errorf("schemaregistry_add_version: unknown outcome %q", outcome)
}

// SoftDelete implements Store.
func (s *PostgresStore) SoftDelete(ctx context.Context, subject string, versions []int) error {
	return s.write(ctx, lockSubject, subject, "s:"+subject, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE schemaregistry_versions SET deleted = true WHERE subject = $1 AND version = ANY($2)", subject, versions)
		return err
	})
}

// Purge implements Store.
func (s *PostgresStore) Purge(ctx context.Context, subject string, versions []int) error {
	return s.write(ctx, lockAll, subject, notifyAll, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "DELETE FROM schemaregistry_versions WHERE subject = $1 AND version = ANY($2) RETURNING schema_id", subject, versions)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM schemaregistry_schemas s WHERE s.id = ANY($1)
			AND NOT EXISTS (SELECT 1 FROM schemaregistry_versions v WHERE v.schema_id = s.id)`, ids)
		return err
	})
}

// Setting implements Store.
func (s *PostgresStore) Setting(ctx context.Context, kind SettingKind, subject string) (string, bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var v string
	err := s.pool.QueryRow(ctx, "SELECT value FROM schemaregistry_settings WHERE kind = $1 AND subject = $2", string(kind), subject).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return v, err == nil, err
}

// SettingsOf implements assumingStore: the subject's and the global
// settings in one query.
func (s *PostgresStore) SettingsOf(ctx context.Context, subject string) (SettingValues, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var v SettingValues
	err := s.pool.QueryRow(ctx, `SELECT
		coalesce((SELECT value FROM schemaregistry_settings WHERE kind = 'compatibility' AND subject = $1), ''),
		coalesce((SELECT value FROM schemaregistry_settings WHERE kind = 'compatibility' AND subject = ''), ''),
		coalesce((SELECT value FROM schemaregistry_settings WHERE kind = 'mode' AND subject = $1), ''),
		coalesce((SELECT value FROM schemaregistry_settings WHERE kind = 'mode' AND subject = ''), '')`, subject).
		Scan(&v.SubjectLevel, &v.GlobalLevel, &v.SubjectMode, &v.GlobalMode)
	return v, err
}

// SetSetting implements Store.
func (s *PostgresStore) SetSetting(ctx context.Context, kind SettingKind, subject, value string) error {
	return s.write(ctx, lockSubject, subject, "s:"+subject, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO schemaregistry_settings (kind, subject, value) VALUES ($1, $2, $3)
			ON CONFLICT (kind, subject) DO UPDATE SET value = EXCLUDED.value`, string(kind), subject, value)
		return err
	})
}

// DeleteSetting implements Store.
func (s *PostgresStore) DeleteSetting(ctx context.Context, kind SettingKind, subject string) error {
	return s.write(ctx, lockSubject, subject, "s:"+subject, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "DELETE FROM schemaregistry_settings WHERE kind = $1 AND subject = $2", string(kind), subject)
		return err
	})
}

var _ Store = (*PostgresStore)(nil)

// OpenStore opens the store a --schema-store value names: empty for the
// embedded store under dataDir/schemas, postgres:// or postgresql:// for
// PostgreSQL.
func OpenStore(ctx context.Context, spec, dataDir string, logger *slog.Logger) (Store, error) {
	switch {
	case spec == "":
		return OpenEmbedded(filepath.Join(dataDir, "schemas"))
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return OpenPostgres(ctx, PostgresConfig{DSN: spec, Logger: logger})
	}
	return nil, fmt.Errorf("%q: want empty (embedded) or postgres://…", redact(spec))
}

// redact hides a password in a DSN for messages.
func redact(dsn string) string {
	if i := strings.Index(dsn, "@"); i >= 0 {
		if j := strings.Index(dsn, "://"); j >= 0 && j < i {
			return dsn[:j+3] + "…" + dsn[i:]
		}
	}
	return dsn
}
