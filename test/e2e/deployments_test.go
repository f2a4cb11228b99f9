package e2e

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestExampleServerPropertiesIsHonoured: the shipped example config starts a
// node without a single unknown-key warning, and its settings take effect
// (flags given by the harness still win over the file).
func TestExampleServerPropertiesIsHonoured(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	props := filepath.Join(filepath.Dir(file), "..", "..", "deployments", "server.properties")
	node := harness.Start(t, "--config", props)
	mustPost(t, node.URL+"/kafka/example", "application/json", `{"id":1}`, 200)
	node.Stop()
	logs := node.Logs()
	if strings.Contains(logs, "unknown key") {
		t.Fatalf("the example config has keys ferry does not know:\n%s", logs)
	}
	if !strings.Contains(logs, `"msg":"ferry serving"`) {
		t.Fatalf("log.format=json from the file was not applied:\n%s", logs)
	}
	if !strings.Contains(logs, node.DataDir) {
		t.Fatalf("--data-dir should win over log.dirs:\n%s", logs)
	}
}
