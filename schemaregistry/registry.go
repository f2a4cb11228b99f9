package schemaregistry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Compatibility levels.
const (
	None               = "NONE"
	Backward           = "BACKWARD"
	BackwardTransitive = "BACKWARD_TRANSITIVE"
	Forward            = "FORWARD"
	ForwardTransitive  = "FORWARD_TRANSITIVE"
	Full               = "FULL"
	FullTransitive     = "FULL_TRANSITIVE"
)

// Modes.
const (
	ReadWrite = "READWRITE"
	ReadOnly  = "READONLY"
	Import    = "IMPORT"
)

// MaxSchemaBytes bounds a schema's text in a request. Confluent stores each
// schema as one record of its _schemas topic, whose records Kafka caps at
// about a megabyte by default, so larger schemas do not register there
// either; the parsed form and the checks stay linear in it.
const MaxSchemaBytes = 1 << 20

// Latest stands for "latest" and -1 in a version argument.
const Latest = -1

// Config configures a Registry.
type Config struct {
	// DefaultCompatibility applies when neither the subject nor the global
	// config sets a level. Default BACKWARD.
	DefaultCompatibility string
	Logger               *slog.Logger
}

// Registry is the schema registry: Confluent's rules over a Store, with a
// cache of parsed schemas by id and of each subject's versions.
type Registry struct {
	store  Store
	cfg    Config
	logger *slog.Logger

	mu struct {
		sync.Mutex
		// byID holds parsed schemas; an id's schema never changes, it can
		// only disappear (permanent delete).
		byID map[int]*cachedSchema
		// byFingerprint maps fingerprints to ids.
		byFingerprint map[string]int
		// versions holds each subject's version rows.
		versions map[string][]Version
		// prepared holds parsed requests by their text, so a lookup or a
		// repeated registration skips parsing. Cleared with byID: a
		// reference's subject/version can name another schema after a purge.
		prepared map[string]*prepared
		// settings holds each subject's SettingValues for registrations
		// on an assumingStore, which confirms them as it writes.
		settings map[string]SettingValues
		// gen counts invalidations; a read that raced one is not cached.
		gen uint64
	}
}

type cachedSchema struct {
	stored StoredSchema
	parsed Schema
}

// New builds a registry over store; it takes ownership (Close closes it).
func New(store Store, cfg Config) (*Registry, error) {
	if cfg.DefaultCompatibility == "" {
		cfg.DefaultCompatibility = Backward
	}
	level, ok := parseLevel(cfg.DefaultCompatibility)
	if !ok {
		return nil, fmt.Errorf("default compatibility %q: not a level", cfg.DefaultCompatibility)
	}
	cfg.DefaultCompatibility = level
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Registry{store: store, cfg: cfg, logger: cfg.Logger.With("component", "schemaregistry")}
	r.resetCache()
	store.Watch(r.invalidate)
	return r, nil
}

// Close closes the store.
func (r *Registry) Close() error { return r.store.Close() }

func (r *Registry) resetCache() {
	r.mu.Lock()
	r.mu.byID = map[int]*cachedSchema{}
	r.mu.byFingerprint = map[string]int{}
	r.mu.versions = map[string][]Version{}
	r.mu.prepared = map[string]*prepared{}
	r.mu.settings = map[string]SettingValues{}
	r.mu.gen++
	r.mu.Unlock()
}

// invalidate drops what another writer may have changed.
func (r *Registry) invalidate(subject string) {
	if subject == "" {
		r.resetCache()
		return
	}
	r.mu.Lock()
	delete(r.mu.versions, subject)
	delete(r.mu.settings, subject)
	r.mu.gen++
	r.mu.Unlock()
}

// added records this node's own registration in the caches, so the
// subject's next registration needs no read: the version joins the
// subject's cached rows when they end at the version it follows, the
// settings the store confirmed are cached, the fingerprint maps to the
// id, and a schema this call stored is cached
// parsed under its id (one it did not store may hold another text of the
// same canonical form, registered concurrently elsewhere: it is read back
// when needed).
func (r *Registry) added(v Version, expectLatest int, p *prepared, confirmed *SettingValues) {
	created := v.Created
	v.Created = false
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.gen++
	if confirmed != nil {
		r.mu.settings[v.Subject] = *confirmed // the store checked them as it wrote
	}
	if _, ok := r.mu.byID[v.ID]; created && !ok {
		st := p.stored
		st.ID = v.ID
		r.mu.byID[v.ID] = &cachedSchema{stored: st, parsed: p.parsed}
	}
	vs, ok := r.mu.versions[v.Subject]
	latest := 0
	if len(vs) > 0 {
		latest = vs[len(vs)-1].Version
	}
	switch {
	case ok && latest == expectLatest && v.Version > latest:
		// Appending in place is safe: every cached list is either clipped
		// (read from the store, whose array it may share) or grown here,
		// and only here, under the lock, from the list now cached; a reader
		// holding a shorter header never sees what is written past its
		// length. Copying the list instead made each new version cost O(n).
		r.mu.versions[v.Subject] = append(vs, v)
	case !ok && expectLatest == 0:
		// The store had no row of the subject, soft-deleted or not.
		r.mu.versions[v.Subject] = []Version{v}
	default:
		delete(r.mu.versions, v.Subject)
	}
	r.mu.byFingerprint[p.stored.Fingerprint] = v.ID
}

// cachedFor returns a subject's cached version rows and the cached id of
// a fingerprint, without reading the store: none and 0 when not cached.
func (r *Registry) cachedFor(subject, fingerprint string) ([]Version, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.versions[subject], r.mu.byFingerprint[fingerprint]
}

// catchUp brings a store that lags other nodes' writes up to date.
func (r *Registry) catchUp(ctx context.Context) error {
	if c, ok := r.store.(catchUpper); ok {
		if err := c.CatchUp(ctx); err != nil {
			return storeError("catch up with the writes of other nodes", err)
		}
	}
	return nil
}

// versions returns a subject's rows, from the cache unless fresh is set;
// a fresh read catches up first.
func (r *Registry) versions(ctx context.Context, subject string, fresh bool) ([]Version, error) {
	r.mu.Lock()
	vs, ok := r.mu.versions[subject]
	gen := r.mu.gen
	r.mu.Unlock()
	if ok && !fresh {
		return vs, nil
	}
	if fresh {
		if err := r.catchUp(ctx); err != nil {
			return nil, err
		}
	}
	vs, err := r.store.Versions(ctx, subject)
	if err != nil {
		return nil, storeError("read versions", err)
	}
	r.mu.Lock()
	if len(r.mu.versions) > 100000 {
		r.mu.versions = map[string][]Version{}
	}
	if r.mu.gen == gen {
		// Clipped, so that added's appends never write into an array the
		// store may still hold.
		r.mu.versions[subject] = slices.Clip(vs)
	}
	r.mu.Unlock()
	return vs, nil
}

// schema returns the parsed schema with this id, loading it (and its
// references) on a cache miss.
func (r *Registry) schema(ctx context.Context, id int) (*cachedSchema, error) {
	return r.schemaDepth(ctx, id, 0)
}

func (r *Registry) schemaDepth(ctx context.Context, id, depth int) (*cachedSchema, error) {
	r.mu.Lock()
	c, ok := r.mu.byID[id]
	r.mu.Unlock()
	if ok {
		return c, nil
	}
	st, err := r.store.Schema(ctx, id)
	if errors.Is(err, ErrStoreNotFound) {
		// Another node may have just registered it.
		if err = r.catchUp(ctx); err == nil {
			st, err = r.store.Schema(ctx, id)
		}
	}
	if errors.Is(err, ErrStoreNotFound) {
		return nil, errorf(40403, "Schema %d not found", id)
	}
	if err != nil {
		return nil, storeError("read schema", err)
	}
	st.Type = storedType(st.Type)
	typ, err := schemaTypeNamed(st.Type)
	if err != nil {
		return nil, errorf(50001, "stored schema %d is of type %s, which this node does not serve", id, st.Type)
	}
	refs, err := r.resolveRefs(ctx, st.References, depth+1)
	if err != nil {
		return nil, err
	}
	p, err := typ.Parse(st.Text, refs)
	if err != nil {
		return nil, errorf(50001, "stored schema %d does not parse: %v", id, err)
	}
	c = &cachedSchema{stored: st, parsed: p}
	r.mu.Lock()
	r.mu.byID[id] = c
	r.mu.byFingerprint[st.Fingerprint] = id
	r.mu.Unlock()
	return c, nil
}

// resolveRefs loads and parses each referenced version.
func (r *Registry) resolveRefs(ctx context.Context, refs []Reference, depth int) ([]ParsedReference, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if depth > 32 {
		return nil, errorf(42201, "Invalid schema: references nest more than 32 deep")
	}
	out := make([]ParsedReference, 0, len(refs))
	for _, ref := range refs {
		v, err := r.findVersion(ctx, ref.Subject, ref.Version, true)
		if err != nil {
			return nil, errorf(42201, "Invalid schema: reference %q to subject '%s' version %d: %v", ref.Name, ref.Subject, ref.Version, err)
		}
		c, err := r.schemaDepth(ctx, v.ID, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, ParsedReference{Reference: ref, Text: c.stored.Text, Schema: c.parsed})
	}
	return out, nil
}

// SchemaRequest is a schema given to register, look up or check.
type SchemaRequest struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	// ID and Version are honoured in IMPORT mode only.
	ID      int `json:"id,omitempty"`
	Version int `json:"version,omitempty"`
	// Normalize (the ?normalize=true of registration and lookup) stores
	// the schema's canonical form instead of its text and makes that form
	// the identity. Without it the identity is the canonical form too,
	// except for Protobuf, whose identity keeps the written order of
	// fields, oneofs, enum values and imports, as Confluent's does.
	Normalize bool `json:"-"`
}

// prepared is a parsed request: references pinned to versions.
type prepared struct {
	stored StoredSchema
	parsed Schema
}

// prepare parses a request, from the cache when the same text (and
// pinned references) was parsed before.
func (r *Registry) prepare(ctx context.Context, req SchemaRequest) (*prepared, error) {
	key, cacheable := prepareKey(req)
	if cacheable {
		r.mu.Lock()
		p, ok := r.mu.prepared[key]
		r.mu.Unlock()
		if ok {
			return p, nil
		}
	}
	p, err := r.parseRequest(ctx, req)
	if err == nil && cacheable {
		r.mu.Lock()
		if len(r.mu.prepared) > 10000 {
			r.mu.prepared = map[string]*prepared{}
		}
		r.mu.prepared[key] = p
		r.mu.Unlock()
	}
	return p, err
}

// prepareKey keys the prepared cache; a "latest" reference is not cacheable.
func prepareKey(req SchemaRequest) (string, bool) {
	var b strings.Builder
	b.WriteString(strings.ToUpper(req.SchemaType))
	if req.Normalize {
		b.WriteString("\x00normalize")
	}
	b.WriteByte(0)
	b.WriteString(req.Schema)
	for _, ref := range req.References {
		if ref.Version == Latest {
			return "", false
		}
		fmt.Fprintf(&b, "\x00%s\x00%s\x00%d", ref.Name, ref.Subject, ref.Version)
	}
	return b.String(), true
}

func (r *Registry) parseRequest(ctx context.Context, req SchemaRequest) (*prepared, error) {
	typ, err := schemaTypeNamed(req.SchemaType)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Schema) == "" {
		return nil, errorf(42201, "Invalid schema: empty schema")
	}
	if len(req.Schema) > MaxSchemaBytes {
		return nil, errorf(42201, "Invalid schema: %d bytes, more than the %d this registry accepts", len(req.Schema), MaxSchemaBytes)
	}
	refs := make([]Reference, len(req.References))
	for i, ref := range req.References {
		if ref.Name == "" || ref.Subject == "" {
			return nil, errorf(42201, "Invalid schema: reference %d needs a name and a subject", i)
		}
		if ref.Version == Latest {
			v, err := r.findVersion(ctx, ref.Subject, Latest, false)
			if err != nil {
				return nil, errorf(42201, "Invalid schema: reference %q: %v", ref.Name, err)
			}
			ref.Version = v.Version
		}
		refs[i] = ref
	}
	parsedRefs, err := r.resolveRefs(ctx, refs, 1)
	if err != nil {
		return nil, err
	}
	for _, ref := range parsedRefs {
		if ref.Schema.Type() != typ.Name() {
			return nil, errorf(42201, "Invalid schema: reference %q names subject '%s' version %d, a %s schema; a %s schema references %s schemas only",
				ref.Name, ref.Subject, ref.Version, ref.Schema.Type(), typ.Name(), typ.Name())
		}
	}
	p, err := typ.Parse(req.Schema, parsedRefs)
	if err != nil {
		return nil, errorf(42201, "Invalid schema %s: %v", abbreviate(req.Schema), err)
	}
	st := StoredSchema{Type: typ.Name(), Text: req.Schema, References: refs}
	if d, ok := p.(describedText); ok {
		if text, ok := d.DescriptorText(); ok {
			st.Text = text
		}
	}
	if req.Normalize {
		st.Text = p.Canonical()
	}
	if len(refs) == 0 {
		st.References = nil
	}
	st.Fingerprint = fingerprint(typ.Name(), identityForm(p, req.Normalize), st.References)
	return &prepared{stored: st, parsed: p}, nil
}

// describedText is a Schema that may have been sent in a binary form
// (Protobuf's base64 FileDescriptorProto, which Confluent's Python
// serializer registers); the registry keeps and serves the text that form
// stands for, as Confluent's does.
type describedText interface {
	DescriptorText() (string, bool)
}

// writtenIdentity is a Schema whose identity without normalize=true is
// not its canonical form: Confluent keeps a Protobuf schema's field and
// import order unless normalize=true sorts them.
type writtenIdentity interface {
	Written() string
}

// identityForm is the text a schema's fingerprint hashes: the canonical
// form with normalize=true, and for types that keep declaration order
// (writtenIdentity) the written form without it.
func identityForm(p Schema, normalize bool) string {
	if w, ok := p.(writtenIdentity); ok && !normalize {
		return w.Written()
	}
	return p.Canonical()
}

func abbreviate(s string) string {
	if len(s) > 200 {
		return s[:197] + "..."
	}
	return s
}

// fingerprint identifies a schema: its type, normalized form and references.
func fingerprint(typ, normalized string, refs []Reference) string {
	h := sha256.New()
	h.Write([]byte(typ + "\n" + normalized + "\n"))
	for _, ref := range refs {
		fmt.Fprintf(h, "%s\x00%s\x00%d\n", ref.Name, ref.Subject, ref.Version)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// schemaID returns the id of a fingerprint, 0 when none.
func (r *Registry) schemaID(ctx context.Context, fp string) (int, error) {
	r.mu.Lock()
	id, ok := r.mu.byFingerprint[fp]
	r.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := r.store.SchemaID(ctx, fp)
	if errors.Is(err, ErrStoreNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, storeError("look up schema", err)
	}
	r.mu.Lock()
	r.mu.byFingerprint[fp] = id
	r.mu.Unlock()
	return id, nil
}

// Register registers a schema under subject and returns its id: the
// existing id when the subject already has it, the id it has under other
// subjects, or a new one.
func (r *Registry) Register(ctx context.Context, subject string, req SchemaRequest) (int, error) {
	if err := validSubject(subject); err != nil {
		return 0, err
	}
	if err := r.catchUp(ctx); err != nil {
		return 0, err
	}
	// Clients send 0 or -1 for "not given", as Confluent's server reads them.
	req.ID, req.Version = max(req.ID, 0), max(req.Version, 0)
	set, err := r.registrationAllowed(ctx, subject, req, false)
	if err != nil {
		return 0, err
	}
	p, err := r.prepare(ctx, req)
	if err != nil {
		return 0, err
	}
	// Another node (or goroutine) may add a version between our read and
	// our write, or our caches were stale; the store then refuses ours and
	// we check again against what it holds. Jittered backoff keeps one
	// writer from starving.
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if set, err = r.registrationAllowed(ctx, subject, req, true); err != nil {
				return 0, err
			}
		}
		id, err := r.registerOnce(ctx, subject, req, p, set, attempt > 0)
		if !errors.Is(err, ErrStoreConflict) {
			return id, err
		}
		if attempt == maxRegisterAttempts {
			return 0, errorf(50001, "register under subject %s: gave up after %d concurrent changes of the subject; retry", subject, attempt+1)
		}
		backoff := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6)))
		select {
		case <-ctx.Done():
			return 0, storeError("register schema", ctx.Err())
		case <-time.After(backoff):
		}
	}
}

const maxRegisterAttempts = 64

// registrationAllowed reads the settings a registration decides with and
// applies the mode. A refusal decided from cached settings is decided
// again from the store's.
func (r *Registry) registrationAllowed(ctx context.Context, subject string, req SchemaRequest, fresh bool) (regSettings, error) {
	set, err := r.registrationSettings(ctx, subject, fresh)
	if err != nil {
		return set, err
	}
	refused := set.mode == ReadOnly || (req.ID != 0 || req.Version != 0) && set.mode != Import
	if refused && set.assumed != nil && !fresh {
		return r.registrationAllowed(ctx, subject, req, true)
	}
	if set.mode == ReadOnly {
		return set, errorf(42205, "Subject %s is in read-only mode", subject)
	}
	if (req.ID != 0 || req.Version != 0) && set.mode != Import {
		return set, errorf(42205, "Registering a schema with a given id or version is only permitted in IMPORT mode; subject %s is in %s mode", subject, set.mode)
	}
	return set, nil
}

// registerOnce is one attempt. On an assumingStore the first attempt of
// an ordinary registration reads nothing its caches lack: a subject they
// do not hold is taken to have no versions and a fingerprint they do not
// know to be new, and the store refuses the write (ErrStoreConflict) if
// that was wrong; the retry reads everything fresh. A 409 decided that
// way is confirmed the same way before it is answered.
func (r *Registry) registerOnce(ctx context.Context, subject string, req SchemaRequest, p *prepared, set regSettings, fresh bool) (int, error) {
	mode, level := set.mode, set.level
	assuming := set.assumed != nil && !fresh && mode != Import
	var vs []Version
	var id int
	var err error
	if assuming {
		vs, id = r.cachedFor(subject, p.stored.Fingerprint)
	} else {
		if vs, err = r.versions(ctx, subject, fresh); err != nil {
			return 0, err
		}
		if id, err = r.schemaID(ctx, p.stored.Fingerprint); err != nil {
			return 0, err
		}
	}
	if id != 0 {
		for i := len(vs) - 1; i >= 0; i-- {
			if v := vs[i]; v.ID == id && !v.Deleted && (req.Version == 0 || req.Version == v.Version) {
				return id, nil
			}
		}
	}
	if mode != Import {
		if err := r.checkAgainst(ctx, subject, p, live(vs), level); err != nil {
			if assuming {
				return 0, ErrStoreConflict // confirm with what the store holds
			}
			return 0, err
		}
	}
	latest := 0
	if len(vs) > 0 {
		latest = vs[len(vs)-1].Version
	}
	w := NewVersion{Subject: subject, Schema: p.stored, ExpectLatest: latest, ID: req.ID, Version: req.Version}
	if set.assumed != nil && mode != Import {
		w.Assumed = set.assumed
	}
	v, err := r.store.AddVersion(ctx, w)
	switch {
	case errors.Is(err, ErrStoreConflict):
		r.invalidate(subject)
		return 0, err
	case errors.Is(err, ErrIDInUse):
		return 0, errorf(42205, "Overwrite new schema with id %d is not permitted: the id belongs to another schema", req.ID)
	case errors.Is(err, ErrVersionInUse):
		return 0, errorf(42205, "Overwrite of subject %s version %d is not permitted: it holds another schema", subject, req.Version)
	case err != nil:
		return 0, storeError("register schema", err)
	}
	r.added(v, latest, p, w.Assumed)
	return v.ID, nil
}

// live returns the versions not soft-deleted. With none deleted (the
// usual case) it is vs itself, not a copy: cached version lists are never
// written in place below their length (see added), and registering in a
// subject of many versions must not copy them all each time.
func live(vs []Version) []Version {
	if !slices.ContainsFunc(vs, func(v Version) bool { return v.Deleted }) {
		return vs
	}
	var out []Version
	for _, v := range vs {
		if !v.Deleted {
			out = append(out, v)
		}
	}
	return out
}

// checkAgainst applies the subject's level against olds (oldest first) and
// returns a 409 naming every breaking change. An empty level means the
// subject's effective one.
func (r *Registry) checkAgainst(ctx context.Context, subject string, p *prepared, olds []Version, level string) error {
	msgs, err := r.incompatibilities(ctx, subject, p, olds, level)
	if err != nil || len(msgs) == 0 {
		return err
	}
	return errorf(409, "Schema being registered is incompatible with an earlier schema for subject \"%s\", details: [%s]", subject, strings.Join(msgs, ", "))
}

// incompatibilities lists, in Confluent's verbose style, why p breaks the
// level against olds; none when compatible.
func (r *Registry) incompatibilities(ctx context.Context, subject string, p *prepared, olds []Version, level string) ([]string, error) {
	if level == "" {
		var err error
		if level, err = r.effectiveLevel(ctx, subject); err != nil {
			return nil, err
		}
	}
	if level == None || len(olds) == 0 {
		return nil, nil
	}
	if !strings.HasSuffix(level, "_TRANSITIVE") {
		olds = olds[len(olds)-1:]
	}
	var msgs []string
	for i := len(olds) - 1; i >= 0; i-- {
		old, err := r.schema(ctx, olds[i].ID)
		if err != nil {
			return nil, err
		}
		found := p.parsed.Incompatibilities(level, old.parsed)
		if len(found) == 0 {
			continue
		}
		msgs = append(msgs, found...)
		msgs = append(msgs, fmt.Sprintf("{oldSchemaVersion: %d}", olds[i].Version),
			fmt.Sprintf("{oldSchema: '%s'}", old.stored.Text),
			fmt.Sprintf("{compatibility: '%s'}", level))
	}
	return msgs, nil
}

// CheckLevel reports why newer breaks level against older (one pair; the
// caller picks which olds a transitive level covers).
func CheckLevel(level string, newer, older *Type) []Incompatibility {
	var out []Incompatibility
	if strings.HasPrefix(level, Backward) || strings.HasPrefix(level, Full) {
		out = append(out, CheckReadable(newer, older, "new", "old")...)
	}
	if strings.HasPrefix(level, Forward) || strings.HasPrefix(level, Full) {
		out = append(out, CheckReadable(older, newer, "old", "new")...)
	}
	return out
}

func validSubject(s string) error {
	if s == "" || strings.ContainsAny(s, "\x00") {
		return errorf(42201, "Invalid subject name %q", s)
	}
	return nil
}

// ParseVersion reads a version argument: a positive number, "latest" or -1.
func ParseVersion(s string) (int, error) {
	if s == "latest" || s == "-1" {
		return Latest, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > math.MaxInt32 {
		return 0, errorf(42202, "The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", s)
	}
	return n, nil
}

// findVersion resolves a version of a subject. With deleted set,
// soft-deleted versions count (and "latest" is the highest of all).
func (r *Registry) findVersion(ctx context.Context, subject string, version int, deleted bool) (Version, error) {
	v, err := r.findVersionIn(ctx, subject, version, deleted, false)
	if isNotFound(err) {
		// Reload on a miss: another node may have written since our
		// cache was filled and its NOTIFY is still on the way.
		v, err = r.findVersionIn(ctx, subject, version, deleted, true)
	}
	return v, err
}

func isNotFound(err error) bool {
	return errors.Is(err, ErrSubjectNotFound) || errors.Is(err, ErrVersionNotFound) || errors.Is(err, ErrSchemaNotFound)
}

func (r *Registry) findVersionIn(ctx context.Context, subject string, version int, deleted, fresh bool) (Version, error) {
	vs, err := r.versions(ctx, subject, fresh)
	if err != nil {
		return Version{}, err
	}
	if !deleted {
		vs = live(vs)
	}
	if len(vs) == 0 {
		return Version{}, subjectNotFound(subject)
	}
	if version == Latest {
		return vs[len(vs)-1], nil
	}
	for _, v := range vs {
		if v.Version == version {
			return v, nil
		}
	}
	return Version{}, versionNotFound(version)
}

// SchemaInfo is a registered schema as one subject's version.
type SchemaInfo struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int    `json:"id"`
	// SchemaType is omitted for AVRO, as Confluent's answers do.
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
	Deleted    bool        `json:"-"`
}

// AnswerType is a schema type as Confluent's answers carry it: omitted
// (empty) for AVRO.
func AnswerType(t string) string {
	if t = storedType(t); t == TypeAvro {
		return ""
	}
	return t
}

func (r *Registry) info(ctx context.Context, v Version) (SchemaInfo, error) {
	c, err := r.schema(ctx, v.ID)
	if err != nil {
		return SchemaInfo{}, err
	}
	return SchemaInfo{Subject: v.Subject, Version: v.Version, ID: v.ID, Schema: c.stored.Text,
		SchemaType: AnswerType(c.stored.Type), References: c.stored.References, Deleted: v.Deleted}, nil
}

// GetVersion returns one version of a subject.
func (r *Registry) GetVersion(ctx context.Context, subject string, version int, deleted bool) (SchemaInfo, error) {
	v, err := r.findVersion(ctx, subject, version, deleted)
	if err != nil {
		return SchemaInfo{}, err
	}
	return r.info(ctx, v)
}

// Subjects lists subjects with a live version (all with deleted).
func (r *Registry) Subjects(ctx context.Context, deleted bool) ([]string, error) {
	if err := r.catchUp(ctx); err != nil {
		return nil, err
	}
	infos, err := r.store.Subjects(ctx)
	if err != nil {
		return nil, storeError("list subjects", err)
	}
	out := []string{}
	for _, s := range infos {
		if s.Live > 0 || deleted {
			out = append(out, s.Name)
		}
	}
	return out, nil
}

// Versions lists a subject's version numbers.
func (r *Registry) Versions(ctx context.Context, subject string, deleted bool) ([]int, error) {
	vs, err := r.versions(ctx, subject, false)
	if err == nil && len(vs) == 0 {
		vs, err = r.versions(ctx, subject, true) // reload on a miss
	}
	if err != nil {
		return nil, err
	}
	if !deleted {
		vs = live(vs)
	}
	if len(vs) == 0 {
		return nil, subjectNotFound(subject)
	}
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out, nil
}

// Lookup finds the version of subject holding this schema.
func (r *Registry) Lookup(ctx context.Context, subject string, req SchemaRequest, deleted bool) (SchemaInfo, error) {
	info, err := r.lookup(ctx, subject, req, deleted, false)
	if isNotFound(err) {
		info, err = r.lookup(ctx, subject, req, deleted, true) // reload on a miss
	}
	return info, err
}

func (r *Registry) lookup(ctx context.Context, subject string, req SchemaRequest, deleted, fresh bool) (SchemaInfo, error) {
	vs, err := r.versions(ctx, subject, fresh)
	if err != nil {
		return SchemaInfo{}, err
	}
	if !deleted {
		vs = live(vs)
	}
	if len(vs) == 0 {
		return SchemaInfo{}, subjectNotFound(subject)
	}
	p, err := r.prepare(ctx, req)
	if err != nil {
		return SchemaInfo{}, err
	}
	id, err := r.schemaID(ctx, p.stored.Fingerprint)
	if err != nil {
		return SchemaInfo{}, err
	}
	for i := len(vs) - 1; id != 0 && i >= 0; i-- {
		if vs[i].ID == id {
			return r.info(ctx, vs[i])
		}
	}
	return SchemaInfo{}, errorf(40403, "Schema not found")
}

// SchemaByID returns a schema by id. Confluent's ?subject= names the
// schema context a subject belongs to; ferry has one context, so the
// schema is found whatever subject is given (deserializers pass the
// subject they guess, which need not be the one that registered it).
func (r *Registry) SchemaByID(ctx context.Context, id int) (StoredSchema, error) {
	c, err := r.schema(ctx, id)
	if err != nil {
		return StoredSchema{}, err
	}
	return c.stored, nil
}

// ParsedByID returns the parsed Avro schema with this id (for encoders);
// a schema of another type is a 40403 here.
func (r *Registry) ParsedByID(ctx context.Context, id int) (*ParsedSchema, error) {
	c, err := r.schema(ctx, id)
	if err != nil {
		return nil, err
	}
	a, ok := c.parsed.(*avroSchema)
	if !ok {
		return nil, errorf(40403, "Schema %d is a %s schema, not AVRO", id, c.parsed.Type())
	}
	return a.ParsedSchema, nil
}

// ParsedSchemaByID returns the parsed schema with this id, of any type:
// serializers and validators work through it.
func (r *Registry) ParsedSchemaByID(ctx context.Context, id int) (Schema, error) {
	c, err := r.schema(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.parsed, nil
}

// VersionsByID lists the (subject, version) pairs using schema id.
func (r *Registry) VersionsByID(ctx context.Context, id int, deleted bool) ([]Version, error) {
	if err := r.catchUp(ctx); err != nil {
		return nil, err
	}
	if _, err := r.schema(ctx, id); err != nil {
		return nil, err
	}
	vs, err := r.store.VersionsOf(ctx, id)
	if err != nil {
		return nil, storeError("read versions of schema", err)
	}
	out := []Version{}
	for _, v := range vs {
		if deleted || !v.Deleted {
			v.ID, v.Deleted = 0, false
			out = append(out, v)
		}
	}
	return out, nil
}

// SubjectsByID lists the subjects using schema id.
func (r *Registry) SubjectsByID(ctx context.Context, id int, deleted bool) ([]string, error) {
	vs, err := r.VersionsByID(ctx, id, deleted)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []string{}
	for _, v := range vs {
		if !seen[v.Subject] {
			seen[v.Subject] = true
			out = append(out, v.Subject)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ReferencedBy lists the ids of schemas referencing subject/version.
func (r *Registry) ReferencedBy(ctx context.Context, subject string, version int) ([]int, error) {
	if err := r.catchUp(ctx); err != nil {
		return nil, err
	}
	v, err := r.findVersion(ctx, subject, version, false)
	if err != nil {
		return nil, err
	}
	ids, err := r.store.ReferencedBy(ctx, subject, v.Version)
	if err != nil {
		return nil, storeError("read references", err)
	}
	if ids == nil {
		ids = []int{}
	}
	return ids, nil
}

// CheckCompatibility tests a schema against one version (Latest: the
// latest live one), whatever the subject's level says about transitivity,
// as Confluent's /compatibility/subjects/{s}/versions/{v} does. It returns
// the breaking changes, none when compatible (also when the subject has no
// live version and version is Latest).
func (r *Registry) CheckCompatibility(ctx context.Context, subject string, version int, req SchemaRequest) ([]string, error) {
	if err := r.catchUp(ctx); err != nil {
		return nil, err
	}
	p, err := r.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	v, err := r.findVersion(ctx, subject, version, false)
	if version == Latest && errors.Is(err, ErrSubjectNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r.incompatibilities(ctx, subject, p, []Version{v}, "")
}

// CheckCompatibilityAll tests a schema against the versions the subject's
// level covers (all live ones under a transitive level), as registration
// does. It returns the breaking changes, none when compatible.
func (r *Registry) CheckCompatibilityAll(ctx context.Context, subject string, req SchemaRequest) ([]string, error) {
	if err := r.catchUp(ctx); err != nil {
		return nil, err
	}
	p, err := r.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	vs, err := r.versions(ctx, subject, false)
	if err != nil {
		return nil, err
	}
	return r.incompatibilities(ctx, subject, p, live(vs), "")
}

// DeleteVersion soft-deletes a version, or removes a soft-deleted one
// for good when permanent is set. It returns the version number.
func (r *Registry) DeleteVersion(ctx context.Context, subject string, version int, permanent bool) (int, error) {
	if err := r.writable(ctx, subject); err != nil {
		return 0, err
	}
	vs, err := r.versions(ctx, subject, true)
	if err != nil {
		return 0, err
	}
	if len(vs) == 0 || (!permanent && len(live(vs)) == 0) {
		return 0, subjectNotFound(subject)
	}
	// A numbered version is found even when soft-deleted, so deleting it
	// again is 40406; "latest" means the latest live one unless permanent.
	v, err := r.findVersion(ctx, subject, version, permanent || version != Latest)
	if err != nil {
		return 0, err
	}
	switch {
	case !permanent && v.Deleted:
		return 0, errorf(40406, "Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", subject, v.Version)
	case permanent && !v.Deleted:
		return 0, errorf(40407, "Subject '%s' Version %d was not deleted first before being permanently deleted", subject, v.Version)
	}
	if err := r.checkUnreferenced(ctx, subject, []Version{v}); err != nil {
		return 0, err
	}
	if permanent {
		err = r.store.Purge(ctx, subject, []int{v.Version})
	} else {
		err = r.store.SoftDelete(ctx, subject, []int{v.Version})
	}
	r.afterDelete(subject, permanent)
	if err != nil {
		return 0, storeError("delete version", err)
	}
	return v.Version, nil
}

// DeleteSubject soft-deletes every live version, or removes a subject
// whose versions are all soft-deleted when permanent is set.
func (r *Registry) DeleteSubject(ctx context.Context, subject string, permanent bool) ([]int, error) {
	if err := r.writable(ctx, subject); err != nil {
		return nil, err
	}
	vs, err := r.versions(ctx, subject, true)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, subjectNotFound(subject)
	}
	lv := live(vs)
	switch {
	case !permanent && len(lv) == 0:
		return nil, errorf(40404, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject)
	case permanent && len(lv) > 0:
		return nil, errorf(40405, "Subject '%s' was not deleted first before being permanently deleted", subject)
	}
	target := lv
	if permanent {
		target = vs
	}
	if err := r.checkUnreferenced(ctx, subject, target); err != nil {
		return nil, err
	}
	nums := make([]int, len(target))
	for i, v := range target {
		nums[i] = v.Version
	}
	if permanent {
		err = r.store.Purge(ctx, subject, nums)
		if err == nil {
			err = r.store.DeleteSetting(ctx, SettingCompatibility, subject)
		}
		if err == nil {
			err = r.store.DeleteSetting(ctx, SettingMode, subject)
		}
	} else {
		err = r.store.SoftDelete(ctx, subject, nums)
	}
	r.afterDelete(subject, permanent)
	if err != nil {
		return nil, storeError("delete subject", err)
	}
	return nums, nil
}

func (r *Registry) afterDelete(subject string, permanent bool) {
	if permanent {
		r.resetCache() // ids may be gone
		return
	}
	r.invalidate(subject)
}

// checkUnreferenced refuses to delete versions live schemas refer to.
func (r *Registry) checkUnreferenced(ctx context.Context, subject string, vs []Version) error {
	for _, v := range vs {
		ids, err := r.store.ReferencedBy(ctx, subject, v.Version)
		if err != nil {
			return storeError("read references", err)
		}
		if len(ids) > 0 {
			return errorf(42206, "One or more references exist to the schema {subject=%s, version=%d}: ids %v", subject, v.Version, ids)
		}
	}
	return nil
}

// writable catches up (the deletes that call it read before they write)
// and checks the subject's mode.
func (r *Registry) writable(ctx context.Context, subject string) error {
	if err := r.catchUp(ctx); err != nil {
		return err
	}
	mode, err := r.effectiveMode(ctx, subject)
	if err != nil {
		return err
	}
	if mode == ReadOnly {
		return errorf(42205, "Subject %s is in read-only mode", subject)
	}
	return nil
}

// breakingChanges summarizes the changes the level refuses.
func breakingChanges(level string, changes []Change) string {
	var breaking []Change
	for _, c := range changes {
		if !c.Levels[level] {
			breaking = append(breaking, c)
		}
	}
	return DescribeChanges(breaking)
}
