package api

import (
	"net/http"
	"strings"
	"testing"
)

// Every path parameter is decoded once: %3D is "=", and %2541 is the
// three characters "%41", never "A".
func TestPathParametersDecodedOnce(t *testing.T) {
	e := newGroupsEnv(t)
	if a := e.do(t, "POST", "/topics", typeJSON, `{"name":"a.b","partitions":1}`); a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	if a := e.do(t, "GET", "/topics/a%2Eb", "", ""); a.status != 200 {
		t.Errorf("GET /topics/a%%2Eb: %d %s", a.status, a.body)
	}
	if a := e.do(t, "POST", "/kafka/a%2Eb", typeJSON, `{"x":1}`); a.status != 200 {
		t.Errorf("POST /kafka/a%%2Eb: %d %s", a.status, a.body)
	}
	if got := e.testEnv.readAll(t, "a.b", 0); len(got.Records) != 1 {
		t.Errorf("a.b has %d records, want 1", len(got.Records))
	}

	a := e.do(t, http.MethodPost, "/consumers/g%3D1", typeRestV2, `{"name":"c=1","format":"json"}`)
	var ci createdInstance
	a.decode(t, &ci)
	if a.status != 200 || !strings.HasSuffix(ci.BaseURI, "/consumers/g=1/instances/c=1") {
		t.Fatalf("create consumer: %d %s", a.status, a.body)
	}
	if a := e.do(t, "POST", "/consumers/g%3D1/instances/c%3D1/subscription", typeRestV2, `{"topics":["a.b"]}`); a.status != http.StatusNoContent {
		t.Errorf("subscribe c%%3D1: %d %s", a.status, a.body)
	}
	if a := e.do(t, "GET", "/consumers/g=1/instances/c=1/subscription", "", ""); a.status != 200 || !strings.Contains(string(a.body), "a.b") {
		t.Errorf("subscription of c=1: %d %s", a.status, a.body)
	}
	if a := e.do(t, "GET", "/groups/g%3D1", "", ""); a.status != 200 || !strings.Contains(string(a.body), `"g=1"`) {
		t.Errorf("GET /groups/g%%3D1: %d %s", a.status, a.body)
	}

	s := newSchemaEnv(t)
	s.register(t, "x%2541", `"int"`)
	s.register(t, "a%2Fb", `"string"`)
	a = s.do(t, "GET", "/subjects", "", "")
	if !strings.Contains(string(a.body), `"x%41"`) || !strings.Contains(string(a.body), `"a/b"`) || strings.Contains(string(a.body), `"xA"`) {
		t.Errorf("subjects: %s; want x%%41 and a/b", a.body)
	}
	if a := s.do(t, "GET", "/subjects/x%2541/versions/1", "", ""); a.status != 200 {
		t.Errorf("GET x%%2541: %d %s", a.status, a.body)
	}
}
