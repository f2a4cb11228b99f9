// Package specgen writes ferry's OpenAPI files: swag (a pinned version,
// run as a program) reads the handlers' annotations and writes Swagger 2.0
// swagger.json and swagger.yaml; Convert turns swagger.json into OpenAPI
// 3.0 openapi3.json and openapi3.yaml with kin-openapi. `make openapi`
// (through ../../gen) and the freshness test both call Generate, so they
// cannot disagree on flags.
package specgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"
)

// SwagVersion is the swag that writes the committed files; the Makefile
// pins the same (a test checks).
const SwagVersion = "v1.16.6"

// SwagPackage is what `go install` builds.
const SwagPackage = "github.com/swaggo/swag/cmd/swag"

// Files are the generated files, all in the output folder.
var Files = []string{"swagger.json", "swagger.yaml", "openapi3.json", "openapi3.yaml"}

// swagArgs are swag's flags; paths are relative to the module root. The
// first folder holds the general info (info.go); server and
// schemaregistry hold types the answers use.
func swagArgs(outDir string) []string {
	return []string{"init", "--quiet",
		"--generalInfo", "info.go",
		"--dir", "./openapi,./api,./server,./schemaregistry",
		"--exclude", "./server/kafka",
		"--overridesFile", "./openapi/.swaggo",
		"--outputTypes", "json,yaml",
		"--output", outDir,
	}
}

// Generate runs the swag binary at swag in the module root root, writing
// into outDir (absolute, or relative to root), then converts.
func Generate(ctx context.Context, swag, root, outDir string) error {
	if !filepath.IsAbs(outDir) {
		outDir = filepath.Join(root, outDir)
	}
	cmd := exec.CommandContext(ctx, swag, swagArgs(outDir)...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("swag %v: %v\n%s", swagArgs(outDir), err, out.Bytes())
	}
	return Convert(outDir)
}

// Convert reads dir/swagger.json and writes dir/openapi3.json and
// dir/openapi3.yaml, after checking that the result is valid OpenAPI 3.
func Convert(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "swagger.json"))
	if err != nil {
		return err
	}
	var v2 openapi2.T
	if err := json.Unmarshal(data, &v2); err != nil {
		return fmt.Errorf("parse swagger.json: %w", err)
	}
	v3, err := openapi2conv.ToV3(&v2)
	if err != nil {
		return fmt.Errorf("convert to OpenAPI 3: %w", err)
	}
	if err := v3.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		return fmt.Errorf("the converted spec is not valid OpenAPI 3: %w", err)
	}
	jsonText, err := json.MarshalIndent(v3, "", "    ")
	if err != nil {
		return err
	}
	var tree any
	if err := json.Unmarshal(jsonText, &tree); err != nil {
		return err
	}
	yamlText, err := yaml.Marshal(tree)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "openapi3.json"), append(jsonText, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "openapi3.yaml"), yamlText, 0o644)
}
