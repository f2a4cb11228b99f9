package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ferry-mq/ferry/server/auth"
)

// The authorizer settings take Kafka's keys and values, as properties and
// flags; an unknown authorizer class or a malformed principal is refused.
func TestAuthorizerSettings(t *testing.T) {
	s, _, err := loadServeSettings(nil)
	if err != nil || s.authorizerClass != "" || s.allowIfNoACL || s.superUsers != nil {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	props := filepath.Join(t.TempDir(), "server.properties")
	content := "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n" +
		"super.users=User:admin; User:ANONYMOUS\nallow.everyone.if.no.acl.found=true\n"
	if err := os.WriteFile(props, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	s, warnings, err := loadServeSettings([]string{"--config", props})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("properties: %v %v", warnings, err)
	}
	if s.authorizerClass != "kafka.security.authorizer.AclAuthorizer" || !s.allowIfNoACL ||
		!slices.Equal(s.superUsers, []auth.Principal{auth.User("admin"), auth.Anonymous}) {
		t.Fatalf("properties: %+v", s)
	}
	s, _, err = loadServeSettings([]string{"--authorizer-class-name", "ferry", "--super-users", "User:ops"})
	if err != nil || s.authorizerClass != "ferry" || len(s.superUsers) != 1 {
		t.Fatalf("flags: %+v %v", s, err)
	}
	for _, bad := range [][]string{
		{"--authorizer-class-name", "com.example.MyAuthorizer"},
		{"--super-users", "admin"},
		{"--allow-everyone-if-no-acl-found", "maybe"},
	} {
		if _, _, err := loadServeSettings(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
