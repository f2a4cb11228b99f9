package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/twmb/franz-go/pkg/kerr"
)

// kafkaNameAliases are the constants whose Go names shorten Kafka's.
var kafkaNameAliases = map[string]string{
	"KafkaNone":                  "NONE",
	"KafkaUnknownTopicPartition": "UNKNOWN_TOPIC_OR_PARTITION",
	"KafkaKafkaStorageError":     "KAFKA_STORAGE_ERROR",
	"KafkaInvalidTopic":          "INVALID_TOPIC_EXCEPTION",
	"KafkaInvalidReplication":    "INVALID_REPLICATION_FACTOR",
	"KafkaNotEnoughAfterAppend":  "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
	"KafkaOutOfOrderSequence":    "OUT_OF_ORDER_SEQUENCE_NUMBER",
	// Kafka 2.8 renamed NOT_LEADER_FOR_PARTITION (6); kerr keeps the old name.
	"KafkaNotLeaderOrFollower": "NOT_LEADER_FOR_PARTITION",
}

// TestKafkaCodesMatchKafkasTable checks every Kafka* code constant in
// errors.go against Kafka's table (franz-go's kerr, generated from it):
// the code must be the one Kafka gives the name the constant spells.
// Issue 23: UNKNOWN_LEADER_EPOCH was 76, Kafka's UNSUPPORTED_COMPRESSION_TYPE.
func TestKafkaCodesMatchKafkasTable(t *testing.T) {
	consts := int16Literals(t, "errors.go")
	if len(consts) < 30 {
		t.Fatalf("found %d Kafka code constants in errors.go; the parser missed them", len(consts))
	}
	for name, code := range consts {
		if !strings.HasPrefix(name, "Kafka") {
			continue
		}
		want, ok := kafkaNameAliases[name]
		if !ok {
			want = screamingSnake(strings.TrimPrefix(name, "Kafka"))
		}
		got := "NONE"
		if code != 0 {
			e := kerr.TypedErrorForCode(code)
			got = e.Message
			if e == kerr.UnknownServerError && code != kerr.UnknownServerError.Code {
				got = "(no such code)"
			}
		}
		if got != want {
			t.Errorf("%s = %d is Kafka's %s, want %s (%d)", name, code, got, want, codeOf(want))
		}
	}
}

// TestNoKafkaCodeLiteralsOutsideTheTable enforces the style rule: a Kafka
// error code is typed as a number only in errors.go; elsewhere it comes
// from that table or from kerr.
func TestNoKafkaCodeLiteralsOutsideTheTable(t *testing.T) {
	root, _ := filepath.Abs("..")
	self, _ := filepath.Abs("errors.go")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == self {
			return nil
		}
		for name, code := range int16Literals(t, path) {
			lower := strings.ToLower(name)
			if strings.HasPrefix(lower, "err") || strings.HasPrefix(lower, "code") || strings.HasPrefix(lower, "kafka") {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s: %s = %d: a Kafka error code typed as a literal; use server.Kafka* or kerr", rel, name, code)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// int16Literals returns the file's int16 constants and variables given as
// integer literals.
func int16Literals(t *testing.T, path string) map[string]int16 {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	out := map[string]int16{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || (gd.Tok != token.CONST && gd.Tok != token.VAR) {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "int16" {
				continue
			}
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					if v, ok := intLiteral(vs.Values[i]); ok {
						out[name.Name] = v
					}
				}
			}
		}
	}
	return out
}

func intLiteral(e ast.Expr) (int16, bool) {
	neg := false
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.SUB {
		neg, e = true, u.X
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return 0, false
	}
	v, err := strconv.ParseInt(lit.Value, 0, 16)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return int16(v), true
}

// screamingSnake turns UnknownLeaderEpoch into UNKNOWN_LEADER_EPOCH.
func screamingSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// codeOf is Kafka's code for name, -2 if there is none.
func codeOf(name string) int16 {
	for c := int16(-1); c < 200; c++ {
		if e := kerr.TypedErrorForCode(c); e != nil && e.Message == name {
			return c
		}
	}
	return -2
}
