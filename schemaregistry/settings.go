package schemaregistry

import (
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

// settingsReader is a store that reads a subject's settings and the
// global ones at once (PostgresStore: one round trip instead of up to
// four): key "" holds the global values.
type settingsReader interface {
	SettingsOf(ctx context.Context, subject string) (map[SettingKind]map[string]string, error)
}

// registrationSettings returns the subject's effective mode and
// compatibility level, read fresh from the store: a registration must see
// a level or mode another node has just set.
func (r *Registry) registrationSettings(ctx context.Context, subject string) (mode, level string, err error) {
	sr, ok := r.store.(settingsReader)
	if !ok {
		if mode, err = r.effectiveMode(ctx, subject); err == nil {
			level, err = r.effectiveLevel(ctx, subject)
		}
		return mode, level, err
	}
	all, err := sr.SettingsOf(ctx, subject)
	if err != nil {
		return "", "", storeError("read settings", err)
	}
	effective := func(kind SettingKind, def string) string {
		if v, ok := all[kind][subject]; ok {
			return v
		}
		if v, ok := all[kind][""]; ok {
			return v
		}
		return def
	}
	return effective(SettingMode, ReadWrite), effective(SettingCompatibility, r.cfg.DefaultCompatibility), nil
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
