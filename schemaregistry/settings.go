package schemaregistry

import (
	"cmp"
	"context"
	"strings"
)

var levels = []string{None, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive}

func parseLevel(s string) (string, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	for _, l := range levels {
		if l == s {
			return l, true
		}
	}
	return "", false
}

func parseMode(s string) (string, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	switch s {
	case ReadWrite, ReadOnly, Import:
		return s, true
	}
	return "", false
}

func (r *Registry) setting(ctx context.Context, kind SettingKind, subject string) (string, bool, error) {
	v, ok, err := r.store.Setting(ctx, kind, subject)
	if err != nil {
		return "", false, storeError("read "+string(kind), err)
	}
	return v, ok, nil
}

// effectiveLevel is the subject's level, else the global one, else the default.
func (r *Registry) effectiveLevel(ctx context.Context, subject string) (string, error) {
	return r.effective(ctx, SettingCompatibility, subject, r.cfg.DefaultCompatibility)
}

// SettingValues are the settings a registration decides with, as stored:
// the subject's and the global compatibility level and mode, "" where
// none is set.
type SettingValues struct {
	SubjectLevel, GlobalLevel, SubjectMode, GlobalMode string
}

// assumingStore is a store that reads a subject's settings and the global
// ones in one round trip (PostgresStore) and honours NewVersion.Assumed,
// so Registry may decide a registration from its caches: the store
// refuses the write when they were stale.
type assumingStore interface {
	SettingsOf(ctx context.Context, subject string) (SettingValues, error)
}

// regSettings is what a registration attempt decided with.
type regSettings struct {
	mode, level string
	// assumed is set for an assumingStore: the values for the store to
	// confirm.
	assumed *SettingValues
}

// registrationSettings returns the subject's effective mode and level: for
// an assumingStore from the cache unless fresh is set (the store confirms
// them as it writes), for other stores read from the store.
func (r *Registry) registrationSettings(ctx context.Context, subject string, fresh bool) (regSettings, error) {
	as, ok := r.store.(assumingStore)
	if !ok {
		mode, err := r.effectiveMode(ctx, subject)
		if err != nil {
			return regSettings{}, err
		}
		level, err := r.effectiveLevel(ctx, subject)
		return regSettings{mode: mode, level: level}, err
	}
	r.mu.Lock()
	vals, cached := r.mu.settings[subject]
	global, globalCached := r.mu.settings[""]
	gen := r.mu.gen
	r.mu.Unlock()
	if !cached && globalCached && !fresh {
		// Most subjects have no settings of their own: assume so, the
		// store confirms it.
		vals, cached = SettingValues{GlobalLevel: global.GlobalLevel, GlobalMode: global.GlobalMode}, true
	}
	if !cached || fresh {
		var err error
		if vals, err = as.SettingsOf(ctx, subject); err != nil {
			return regSettings{}, storeError("read settings", err)
		}
		r.mu.Lock()
		if len(r.mu.settings) > 100000 {
			r.mu.settings = map[string]SettingValues{}
		}
		if r.mu.gen == gen {
			r.mu.settings[subject] = vals
			// Subject "" is the global entry: its own values are the global ones.
			r.mu.settings[""] = SettingValues{vals.GlobalLevel, vals.GlobalLevel, vals.GlobalMode, vals.GlobalMode}
		}
		r.mu.Unlock()
	}
	return regSettings{
		mode:    cmp.Or(vals.SubjectMode, vals.GlobalMode, ReadWrite),
		level:   cmp.Or(vals.SubjectLevel, vals.GlobalLevel, r.cfg.DefaultCompatibility),
		assumed: &vals,
	}, nil
}

// settingChanged drops cached settings after this node wrote (or tried to
// write) one; a global one is part of every subject's entry.
func (r *Registry) settingChanged(subject string) {
	r.mu.Lock()
	if subject == "" {
		r.mu.settings = map[string]SettingValues{}
	} else {
		delete(r.mu.settings, subject)
	}
	r.mu.gen++
	r.mu.Unlock()
}

func (r *Registry) effectiveMode(ctx context.Context, subject string) (string, error) {
	return r.effective(ctx, SettingMode, subject, ReadWrite)
}

func (r *Registry) effective(ctx context.Context, kind SettingKind, subject, def string) (string, error) {
	if subject != "" {
		v, ok, err := r.setting(ctx, kind, subject)
		if err != nil || ok {
			return v, err
		}
	}
	v, ok, err := r.setting(ctx, kind, "")
	if err != nil || ok {
		return v, err
	}
	return def, nil
}

// Compatibility returns the level of subject ("" for the global level).
// A subject without its own level is 40408 unless defaultToGlobal is set.
func (r *Registry) Compatibility(ctx context.Context, subject string, defaultToGlobal bool) (string, error) {
	if err := r.catchUp(ctx); err != nil {
		return "", err
	}
	if subject == "" || defaultToGlobal {
		return r.effectiveLevel(ctx, subject)
	}
	v, ok, err := r.setting(ctx, SettingCompatibility, subject)
	if err != nil || ok {
		return v, err
	}
	return "", errorf(40408, "Subject '%s' does not have subject-level compatibility configured", subject)
}

// SetCompatibility sets the level of subject ("" for global) and returns it.
func (r *Registry) SetCompatibility(ctx context.Context, subject, level string) (string, error) {
	l, ok := parseLevel(level)
	if !ok {
		return "", errorf(42203, "Invalid compatibility level %q. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive", level)
	}
	defer r.settingChanged(subject)
	if err := r.store.SetSetting(ctx, SettingCompatibility, subject, l); err != nil {
		return "", storeError("set compatibility", err)
	}
	return l, nil
}

// DeleteCompatibility removes the level of subject ("" resets the global
// level to the default) and returns the level it had.
func (r *Registry) DeleteCompatibility(ctx context.Context, subject string) (string, error) {
	return r.deleteSetting(ctx, SettingCompatibility, subject, r.cfg.DefaultCompatibility, 40408,
		"Subject '%s' does not have subject-level compatibility configured")
}

func (r *Registry) deleteSetting(ctx context.Context, kind SettingKind, subject, def string, code int, msg string) (string, error) {
	if err := r.catchUp(ctx); err != nil {
		return "", err
	}
	prev, ok, err := r.setting(ctx, kind, subject)
	if err != nil {
		return "", err
	}
	if !ok {
		if subject == "" {
			return def, nil
		}
		vs, err := r.versions(ctx, subject, false)
		if err != nil {
			return "", err
		}
		if len(vs) == 0 {
			return "", subjectNotFound(subject)
		}
		return "", errorf(code, msg, subject)
	}
	defer r.settingChanged(subject)
	if err := r.store.DeleteSetting(ctx, kind, subject); err != nil {
		return "", storeError("delete "+string(kind), err)
	}
	return prev, nil
}

// Mode returns the mode of subject ("" for global); a subject without its
// own mode is 40409 unless defaultToGlobal is set.
func (r *Registry) Mode(ctx context.Context, subject string, defaultToGlobal bool) (string, error) {
	if err := r.catchUp(ctx); err != nil {
		return "", err
	}
	if subject == "" || defaultToGlobal {
		return r.effectiveMode(ctx, subject)
	}
	v, ok, err := r.setting(ctx, SettingMode, subject)
	if err != nil || ok {
		return v, err
	}
	return "", errorf(40409, "Subject '%s' does not have subject-level mode configured", subject)
}

// SetMode sets the mode of subject ("" for global). Switching to IMPORT
// where schemas exist needs force, as in Confluent.
func (r *Registry) SetMode(ctx context.Context, subject, mode string, force bool) (string, error) {
	m, ok := parseMode(mode)
	if !ok {
		return "", errorf(42204, "Invalid mode %q. Valid values are READWRITE, READONLY and IMPORT", mode)
	}
	if err := r.catchUp(ctx); err != nil {
		return "", err
	}
	if m == Import && !force {
		nonEmpty, err := r.hasSchemas(ctx, subject)
		if err != nil {
			return "", err
		}
		if nonEmpty {
			return "", errorf(42205, "Cannot import since found existing subjects; set force=true to switch to IMPORT mode anyway")
		}
	}
	defer r.settingChanged(subject)
	if err := r.store.SetSetting(ctx, SettingMode, subject, m); err != nil {
		return "", storeError("set mode", err)
	}
	return m, nil
}

func (r *Registry) hasSchemas(ctx context.Context, subject string) (bool, error) {
	if subject != "" {
		vs, err := r.versions(ctx, subject, true)
		return len(vs) > 0, err
	}
	subjects, err := r.Subjects(ctx, true)
	return len(subjects) > 0, err
}

// DeleteMode removes the mode of subject and returns the mode it had.
func (r *Registry) DeleteMode(ctx context.Context, subject string) (string, error) {
	return r.deleteSetting(ctx, SettingMode, subject, ReadWrite, 40409,
		"Subject '%s' does not have subject-level mode configured")
}
