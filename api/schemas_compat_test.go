package api

import "testing"

// TestSchemaCompatibilityOneVersion: POST /compatibility/subjects/{s}/versions/{v}
// tests against that one version (latest included) even under a transitive
// level, as Confluent does; without a version it covers what the level does.
func TestSchemaCompatibilityOneVersion(t *testing.T) {
	e := newSchemaEnv(t)
	const (
		onlyA = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
		onlyB = `{"type":"record","name":"R","fields":[{"name":"b","type":"int"}]}`
	)
	e.do(t, "PUT", "/config/s", srType, `{"compatibility":"NONE"}`).wantJSON(t, `{"compatibility":"NONE"}`)
	e.register(t, "s", onlyA)
	e.register(t, "s", onlyB)
	e.do(t, "PUT", "/config/s", srType, `{"compatibility":"BACKWARD_TRANSITIVE"}`).wantJSON(t, `{"compatibility":"BACKWARD_TRANSITIVE"}`)
	// onlyB reads version 2's data, not version 1's (b has no default).
	for path, want := range map[string]string{
		"/compatibility/subjects/s/versions/latest": `{"is_compatible":true}`,
		"/compatibility/subjects/s/versions/-1":     `{"is_compatible":true}`,
		"/compatibility/subjects/s/versions/2":      `{"is_compatible":true}`,
		"/compatibility/subjects/s/versions/1":      `{"is_compatible":false}`,
		"/compatibility/subjects/s/versions":        `{"is_compatible":false}`,
	} {
		t.Run(path, func(t *testing.T) {
			e.do(t, "POST", path, srType, body(onlyB)).wantJSON(t, want)
		})
	}
}
