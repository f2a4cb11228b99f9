package schemaregistry

import (
	"context"
	"errors"
)

// Store keeps subjects, versions, schemas and settings. It enforces
// uniqueness (ids, (subject, version)) atomically; every other rule —
// compatibility, modes, which deletes are allowed — belongs to Registry.
// Implementations: EmbeddedStore (a journal in the data dir), TopicStore
// (a cluster's _schemas topic) and PostgresStore. All pass storetest.Run.
//
// Errors: ErrStoreNotFound for a missing id, ErrStoreConflict when a
// precondition of a write no longer holds (the caller rereads and retries),
// ErrIDInUse when an imported id belongs to another schema, ErrVersionInUse
// when an imported version exists; anything else is a store failure.
type Store interface {
	// Schema returns the schema with this id.
	Schema(ctx context.Context, id int) (StoredSchema, error)
	// SchemaID returns the id of the schema with this fingerprint.
	SchemaID(ctx context.Context, fingerprint string) (int, error)
	// Subjects returns every subject with at least one version row,
	// soft-deleted or not, sorted, with how many versions are live.
	Subjects(ctx context.Context) ([]SubjectInfo, error)
	// Versions returns every version row of a subject, soft-deleted
	// included, in version order; none for an unknown subject.
	Versions(ctx context.Context, subject string) ([]Version, error)
	// VersionsOf returns the version rows that use schema id.
	VersionsOf(ctx context.Context, id int) ([]Version, error)
	// ReferencedBy returns the ids of schemas that reference subject/version.
	ReferencedBy(ctx context.Context, subject string, version int) ([]int, error)

	// AddVersion stores a new version. Atomically: if the subject's highest
	// version (soft-deleted included; 0 for none) is not w.ExpectLatest it
	// fails with ErrStoreConflict; the schema gets the id its fingerprint
	// already has, else w.ID when set, else a new id above every id in use;
	// the version is w.Version when set, else the highest plus one.
	AddVersion(ctx context.Context, w NewVersion) (Version, error)
	// SoftDelete marks versions of a subject deleted.
	SoftDelete(ctx context.Context, subject string, versions []int) error
	// Purge removes version rows, and schemas no longer used by any.
	Purge(ctx context.Context, subject string, versions []int) error

	// Setting returns a config or mode value ("" for the global one).
	Setting(ctx context.Context, kind SettingKind, subject string) (string, bool, error)
	// SetSetting sets it; DeleteSetting removes it.
	SetSetting(ctx context.Context, kind SettingKind, subject, value string) error
	DeleteSetting(ctx context.Context, kind SettingKind, subject string) error

	// Watch registers fn, called with a subject after another node (or
	// process) changed it, with "" when anything may have changed. Stores
	// without other writers may never call it.
	Watch(fn func(subject string))
	Close() error
}

// catchUpper is a store whose local reads can lag writes made through
// other nodes (TopicStore): CatchUp returns once every write committed
// when it was called is visible here. Registry calls it before each write
// and before a read its caches could not answer.
type catchUpper interface {
	CatchUp(ctx context.Context) error
}

// SettingKind selects the compatibility level or the mode.
type SettingKind string

// The setting kinds.
const (
	SettingCompatibility SettingKind = "compatibility"
	SettingMode          SettingKind = "mode"
)

// StoredSchema is a schema as registered: its text as first given.
type StoredSchema struct {
	ID          int         `json:"id"`
	Type        string      `json:"schemaType"`
	Text        string      `json:"schema"`
	References  []Reference `json:"references,omitempty"`
	Fingerprint string      `json:"fingerprint"`
}

// Reference names a schema that defines types the referencing one uses.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// Version is one (subject, version) row.
type Version struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int    `json:"id"`
	Deleted bool   `json:"deleted,omitempty"`
	// Created is set in AddVersion's answer when that call stored the
	// schema, so the stored text is the one given (stores may leave it
	// false: the caller then reads the schema back when it needs it).
	Created bool `json:"-"`
}

// SubjectInfo summarizes a subject.
type SubjectInfo struct {
	Name string
	Live int
}

// NewVersion is what AddVersion writes.
type NewVersion struct {
	Subject      string
	Schema       StoredSchema // ID is ignored: see ID
	ExpectLatest int
	ID           int // imported id, 0 to assign
	Version      int // imported version, 0 for the next one
	// Assumed is set only for stores that implement assumingStore, when
	// Registry decided from its caches: the settings it applied, and that
	// the subject holds no live version of this schema. The store fails
	// the write with ErrStoreConflict when either is no longer true.
	Assumed *SettingValues
}

// Store errors.
var (
	ErrStoreNotFound = errors.New("not found in store")
	ErrStoreConflict = errors.New("store changed concurrently")
	ErrIDInUse       = errors.New("schema id is in use by another schema")
	ErrVersionInUse  = errors.New("version exists")
)
