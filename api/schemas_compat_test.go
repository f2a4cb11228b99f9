package api

import (
	"fmt"
	"strings"
	"testing"
)

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

// TestSchemaSizeLimits: a schema over 1 MiB of text, or with more than
// 20,000 named types, fields, symbols and branches, is an invalid schema
// (422, 42201), refused before any compatibility check runs.
func TestSchemaSizeLimits(t *testing.T) {
	e := newSchemaEnv(t)
	fields := func(n int, pad string) string {
		var b strings.Builder
		b.WriteString(`{"type":"record","name":"W","doc":"` + pad + `","fields":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"name":"f%d","type":"int"}`, i)
		}
		return b.String() + "]}"
	}
	e.register(t, "ok", fields(19_000, ""))
	a := e.do(t, "POST", "/subjects/many/versions", srType, body(fields(20_001, "")))
	a.wantError(t, 422, 42201)
	if !strings.Contains(string(a.body), "more than 20000") {
		t.Fatalf("the message does not say why: %s", a.body)
	}
	a = e.do(t, "POST", "/subjects/long/versions", srType, body(fields(1, strings.Repeat("x", 1<<20))))
	a.wantError(t, 422, 42201)
	if !strings.Contains(string(a.body), "more than the 1048576") {
		t.Fatalf("the message does not say why: %s", a.body)
	}
	e.do(t, "POST", "/compatibility/subjects/ok/versions/latest", srType, body(fields(20_001, ""))).wantError(t, 422, 42201)
}
