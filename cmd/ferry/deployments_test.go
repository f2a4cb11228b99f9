package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	composetypes "github.com/compose-spec/compose-go/v2/types"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mq/ferry/test/harness"
)

// The uid and gid of distroless's nonroot user, which the image runs as.
const nonrootID = 65532

// The example broker configs of the cluster deployment load as `ferry
// serve --config` reads them, with no key ferry ignores.
func TestClusterDeploymentConfigsLoad(t *testing.T) {
	files, err := filepath.Glob("../../deployments/cluster/broker-*.properties")
	if err != nil || len(files) != 3 {
		t.Fatalf("broker configs %v: %v", files, err)
	}
	ids := map[int32]bool{}
	for _, f := range files {
		s, warnings, err := loadServeSettings([]string{"--config", f})
		if err != nil || len(warnings) > 0 {
			t.Fatalf("%s: %v %v", f, err, warnings)
		}
		if s.zookeeper != "zookeeper:2181/ferry" || s.brokerRack == "" || s.broker.DefaultReplicationFactor != 3 || s.broker.MinInsyncReplicas != 2 {
			t.Fatalf("%s: zookeeper %q rack %q rf %d min isr %d", f, s.zookeeper, s.brokerRack, s.broker.DefaultReplicationFactor, s.broker.MinInsyncReplicas)
		}
		ids[s.broker.BrokerID] = true
	}
	if len(ids) != 3 {
		t.Fatalf("broker ids %v, want three distinct", ids)
	}
}

// The example single-node server.properties, which the systemd unit
// starts with, loads with no key ferry ignores.
func TestExampleServerPropertiesLoad(t *testing.T) {
	s, warnings, err := loadServeSettings([]string{"--config", "../../deployments/server.properties"})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("deployments/server.properties: %v %v", err, warnings)
	}
	if s.broker.DataDir != "/var/lib/ferry" {
		t.Fatalf("log.dirs %q, want /var/lib/ferry (the unit's ReadWritePaths)", s.broker.DataDir)
	}
}

// `ferry health`, the containers' health check, exits 0 only on a 200.
func TestHealthCommand(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		fmt.Fprint(w, `{"status":"ok"}`)
	}))
	defer srv.Close()
	if err := runHealth([]string{"--url", srv.URL + "/healthz"}); err != nil {
		t.Fatalf("healthy node: %v", err)
	}
	status = http.StatusServiceUnavailable
	if err := runHealth([]string{"--url", srv.URL + "/healthz"}); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("503: %v, want an error naming the status", err)
	}
	if err := runHealth([]string{"--url", srv.URL + "/nowhere"}); err == nil {
		t.Fatal("404 passed the health check")
	}
	srv.Close()
	if err := runHealth([]string{"--url", srv.URL + "/healthz", "--timeout", "1s"}); err == nil {
		t.Fatal("a closed port passed the health check")
	}
	if err := runHealth([]string{"extra"}); !errors.Is(err, errUsage) {
		t.Fatalf("an argument: %v, want a usage error", err)
	}
}

// healthCommandWorks runs a deployment's health check command line
// (ferry's argv without the binary) against a server that answers 200, its
// URL overriding the one in the line, so the line's subcommand and flags
// are ones ferry takes.
func healthCommandWorks(t *testing.T, where string, argv []string) {
	t.Helper()
	if len(argv) < 1 || argv[0] != "health" {
		t.Fatalf("%s: health check runs ferry %q, want `ferry health`", where, argv)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	if err := runHealth(append(slices.Clone(argv[1:]), "--url", srv.URL)); err != nil {
		t.Fatalf("%s: ferry %q: %v", where, argv, err)
	}
	for i, a := range argv {
		if a == "--url" && i+1 < len(argv) && !strings.HasSuffix(argv[i+1], ":8080/healthz") {
			t.Fatalf("%s: health check asks %q, not the node's HTTP port 8080", where, argv[i+1])
		}
	}
}

// The Dockerfile, parsed as BuildKit parses it: the image runs as nonroot,
// its data volume is a directory copied in owned by nonroot before VOLUME
// declares it (so a new volume starts writable), the health check is a
// ferry subcommand that exists, and the entrypoint serves from the volume.
func TestDockerfileImageLayout(t *testing.T) {
	f, err := os.Open("../../deployments/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ast, err := parser.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	stages, _, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want build and runtime", len(stages))
	}
	build, final := stages[0], stages[1]
	if !strings.HasPrefix(final.BaseName, "gcr.io/distroless/static") || !strings.HasSuffix(final.BaseName, ":nonroot") {
		t.Fatalf("runtime base %q, want distroless static nonroot", final.BaseName)
	}
	builtBinary := false
	for _, c := range build.Commands {
		if r, ok := c.(*instructions.RunCommand); ok && strings.Contains(strings.Join(r.CmdLine, " "), "-o /out/ferry ./cmd/ferry") {
			builtBinary = true
		}
	}
	if !builtBinary {
		t.Fatal("the build stage does not build ./cmd/ferry to /out/ferry")
	}

	var (
		user, volume    string
		chowned         = map[string]string{} // destination → owner, copied before VOLUME
		binary          bool
		health          []string
		entrypoint      []string
		exposed         []string
		volumeBeforeOwn bool
	)
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.CopyCommand:
			if c.From == build.Name && slices.Equal(c.SourcePaths, []string{"/out/ferry"}) && c.DestPath == "/usr/local/bin/ferry" {
				binary = true
			}
			if c.Chown != "" {
				if volume != "" && c.DestPath == volume {
					volumeBeforeOwn = true
				}
				chowned[c.DestPath] = c.Chown
			}
		case *instructions.UserCommand:
			user = c.User
		case *instructions.VolumeCommand:
			if len(c.Volumes) != 1 {
				t.Fatalf("VOLUME %q, want the one data directory", c.Volumes)
			}
			volume = c.Volumes[0]
		case *instructions.HealthCheckCommand:
			health = c.Health.Test
		case *instructions.EntrypointCommand:
			if c.PrependShell {
				t.Fatal("ENTRYPOINT in shell form: the image has no shell")
			}
			entrypoint = c.CmdLine
		case *instructions.ExposeCommand:
			exposed = append(exposed, c.Ports...)
		}
	}
	want := fmt.Sprintf("%d:%d", nonrootID, nonrootID)
	switch {
	case !binary:
		t.Fatal("the runtime stage does not copy /out/ferry to /usr/local/bin/ferry")
	case user != want:
		t.Fatalf("USER %q, want %s (distroless nonroot, stated so the volume's owner is visible here)", user, want)
	case volume != "/var/lib/ferry":
		t.Fatalf("VOLUME %q, want /var/lib/ferry", volume)
	case chowned[volume] != want || volumeBeforeOwn:
		t.Fatalf("the volume %s is not copied in owned by %s before VOLUME (chowned: %v): a new volume would be root's", volume, want, chowned)
	case !slices.Equal(exposed, []string{"8080", "9092"}):
		t.Fatalf("EXPOSE %q, want 8080 9092", exposed)
	case !slices.Equal(entrypoint, []string{"/usr/local/bin/ferry", "serve", "--data-dir", volume}):
		t.Fatalf("ENTRYPOINT %q, want ferry serve on the volume", entrypoint)
	case len(health) < 3 || health[0] != "CMD" || health[1] != "/usr/local/bin/ferry":
		t.Fatalf("HEALTHCHECK %q, want CMD /usr/local/bin/ferry … (no shell in the image)", health)
	}
	healthCommandWorks(t, "Dockerfile HEALTHCHECK", health[2:])
}

// The compose files load as Docker Compose loads them (compose-go, schema
// validated): each ferry service builds the Dockerfile as ferry:dev, keeps
// its data on a volume at the image's data directory, mounts configs that
// exist, and has a health check ferry can run.
func TestComposeFilesLoad(t *testing.T) {
	for _, file := range []string{"docker-compose.yml", "docker-compose.cluster.yml"} {
		t.Run(file, func(t *testing.T) {
			dir, err := filepath.Abs("../../deployments")
			if err != nil {
				t.Fatal(err)
			}
			project, err := loader.LoadWithContext(context.Background(), composetypes.ConfigDetails{
				WorkingDir:  dir,
				ConfigFiles: []composetypes.ConfigFile{{Filename: filepath.Join(dir, file)}},
				Environment: composetypes.Mapping{},
			}, func(o *loader.Options) { o.SetProjectName("ferry", true) })
			if err != nil {
				t.Fatal(err)
			}
			brokers := 0
			for name, svc := range project.Services {
				if svc.Build == nil {
					continue
				}
				brokers++
				if svc.Image != "ferry:dev" || svc.Build.Dockerfile != "deployments/Dockerfile" || filepath.Clean(svc.Build.Context) != filepath.Dir(dir) {
					t.Fatalf("%s: image %q built from %q in %q, want ferry:dev from deployments/Dockerfile at the root", name, svc.Image, svc.Build.Dockerfile, svc.Build.Context)
				}
				dataVolume := false
				for _, v := range svc.Volumes {
					switch {
					case v.Type == composetypes.VolumeTypeVolume && v.Target == "/var/lib/ferry":
						dataVolume = true
					case v.Type == composetypes.VolumeTypeBind:
						if _, err := os.Stat(v.Source); err != nil {
							t.Fatalf("%s: mounts %s, which is not in the repository: %v", name, v.Source, err)
						}
						if strings.HasSuffix(v.Source, ".properties") {
							if _, warnings, err := loadServeSettings([]string{"--config", v.Source}); err != nil || len(warnings) > 0 {
								t.Fatalf("%s: %s: %v %v", name, v.Source, err, warnings)
							}
							advertisesItself(t, name, v.Source)
						}
					}
				}
				if !dataVolume {
					t.Fatalf("%s: no named volume at /var/lib/ferry", name)
				}
				hc := svc.HealthCheck
				if hc == nil || len(hc.Test) < 3 || hc.Test[0] != "CMD" || hc.Test[1] != "/usr/local/bin/ferry" {
					t.Fatalf("%s: health check %+v, want CMD /usr/local/bin/ferry health …", name, hc)
				}
				healthCommandWorks(t, name+" healthcheck", hc.Test[2:])
			}
			if want := map[string]int{"docker-compose.yml": 1, "docker-compose.cluster.yml": 3}[file]; brokers != want {
				t.Fatalf("%d ferry services, want %d", brokers, want)
			}
		})
	}
}

// advertisesItself checks that a compose broker's config advertises the
// service's own name, the one other brokers and clients on the compose
// network resolve.
func advertisesItself(t *testing.T, service, config string) {
	t.Helper()
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "advertised.listeners="); ok {
			if !strings.Contains(v, "://"+service+":") {
				t.Fatalf("%s: %s advertises %q, not its own service name", service, config, v)
			}
			return
		}
	}
	t.Fatalf("%s: %s sets no advertised.listeners; brokers would advertise the container's host name", service, config)
}

// k8sObject is one document of a manifest, decoded strictly into its
// Kubernetes type: a misspelt or misplaced field is an error, as kubectl's
// server-side field validation makes it.
type k8sObject struct {
	kind, name string
	obj        any
}

func decodeManifest(t *testing.T, path string) []k8sObject {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []k8sObject
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s document %d: %v", path, i, err)
		}
		var obj any
		switch meta.APIVersion + " " + meta.Kind {
		case "v1 Service":
			obj = &corev1.Service{}
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "apps/v1 StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "policy/v1 PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		default:
			t.Fatalf("%s document %d: kind %q %q is not one this test knows", path, i, meta.APIVersion, meta.Kind)
		}
		if err := decodeStrict(doc, obj); err != nil {
			t.Fatalf("%s document %d (%s): %v", path, i, meta.Kind, err)
		}
		name := obj.(metav1.Object).GetName()
		if name == "" {
			t.Fatalf("%s document %d (%s) has no name", path, i, meta.Kind)
		}
		objs = append(objs, k8sObject{meta.Kind, name, obj})
	}
	return objs
}

// decodeStrict decodes one YAML document as the API server's strict field
// validation does: duplicate keys, unknown fields and fields in the wrong
// case (clusterIp for clusterIP) are errors, where encoding/json would
// quietly match or drop them.
func decodeStrict(doc []byte, obj any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := k8sjson.UnmarshalStrict(js, obj)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// The strict decoding refuses what a typo makes.
func TestManifestDecodingIsStrict(t *testing.T) {
	for _, bad := range []string{
		"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIp: None}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {headless: true}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nmetadata: {name: y}\n",
	} {
		if err := decodeStrict([]byte(bad), &corev1.Service{}); err == nil {
			t.Fatalf("%q decoded without an error", bad)
		}
	}
	good := "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIP: None}\n"
	var svc corev1.Service
	if err := decodeStrict([]byte(good), &svc); err != nil || svc.Spec.ClusterIP != "None" {
		t.Fatalf("%q: %v %+v", good, err, svc.Spec)
	}
}

// Each Kubernetes manifest decodes strictly into the API's types, and holds
// together: the StatefulSet's Service is headless (the names pods advertise
// resolve only then), ferry's image is the locally built ferry:dev and never
// pulled, the pods run as nonroot with fsGroup so the volume is writable,
// probes ask routes that exist, and the config loads.
func TestKubernetesManifests(t *testing.T) {
	for _, file := range []string{"ferry.yaml", "ferry-cluster.yaml"} {
		t.Run(file, func(t *testing.T) {
			objs := decodeManifest(t, filepath.Join("../../deployments/kubernetes", file))
			services := map[string]*corev1.Service{}
			configs := map[string]*corev1.ConfigMap{}
			for _, o := range objs {
				switch v := o.obj.(type) {
				case *corev1.Service:
					services[o.name] = v
				case *corev1.ConfigMap:
					configs[o.name] = v
				}
			}
			for _, cm := range configs {
				for key, text := range cm.Data {
					if !strings.HasSuffix(key, ".properties") {
						continue
					}
					path := filepath.Join(t.TempDir(), key)
					if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
						t.Fatal(err)
					}
					if _, warnings, err := loadServeSettings([]string{"--config", path}); err != nil || len(warnings) > 0 {
						t.Fatalf("ConfigMap %s %s: %v %v", cm.Name, key, err, warnings)
					}
				}
			}
			ferrySets := 0
			for _, o := range objs {
				sts, ok := o.obj.(*appsv1.StatefulSet)
				if !ok {
					continue
				}
				svc := services[sts.Spec.ServiceName]
				if svc == nil {
					t.Fatalf("StatefulSet %s: serviceName %q is not in the manifest", sts.Name, sts.Spec.ServiceName)
				}
				if svc.Spec.ClusterIP != corev1.ClusterIPNone {
					t.Fatalf("StatefulSet %s: Service %s has clusterIP %q; pods get DNS names only from a headless one", sts.Name, svc.Name, svc.Spec.ClusterIP)
				}
				pod := sts.Spec.Template.Spec
				var ferry *corev1.Container
				for i := range pod.Containers {
					if strings.HasPrefix(pod.Containers[i].Image, "ferry") {
						ferry = &pod.Containers[i]
					}
				}
				if ferry == nil {
					continue
				}
				ferrySets++
				if ferry.Image != "ferry:dev" || ferry.ImagePullPolicy != corev1.PullIfNotPresent {
					t.Fatalf("StatefulSet %s: image %q pull %q, want ferry:dev IfNotPresent (built and loaded, deployments/README.md)", sts.Name, ferry.Image, ferry.ImagePullPolicy)
				}
				sc := pod.SecurityContext
				if sc == nil || sc.FSGroup == nil || *sc.FSGroup != nonrootID || sc.RunAsUser == nil || *sc.RunAsUser != nonrootID || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
					t.Fatalf("StatefulSet %s: pod securityContext %+v, want runAsNonRoot, runAsUser and fsGroup %d", sts.Name, sc, nonrootID)
				}
				for _, probe := range []*corev1.Probe{ferry.ReadinessProbe, ferry.LivenessProbe} {
					if probe == nil || probe.HTTPGet == nil || (probe.HTTPGet.Path != "/readyz" && probe.HTTPGet.Path != "/healthz") {
						t.Fatalf("StatefulSet %s: probe %+v, want GET /readyz or /healthz", sts.Name, probe)
					}
				}
				dataMounted := false
				for _, m := range ferry.VolumeMounts {
					if m.MountPath == "/var/lib/ferry" && slices.ContainsFunc(sts.Spec.VolumeClaimTemplates, func(c corev1.PersistentVolumeClaim) bool { return c.Name == m.Name }) {
						dataMounted = true
					}
				}
				if !dataMounted {
					t.Fatalf("StatefulSet %s: no volume claim mounted at /var/lib/ferry", sts.Name)
				}
				// What each pod advertises must be a name the headless Service gives it.
				advertised := ""
				for _, e := range ferry.Env {
					if e.Name == "FERRY_ADVERTISED_KAFKA_ADDR" {
						advertised = e.Value
					}
				}
				for _, c := range pod.InitContainers {
					if s := strings.Join(c.Command, " "); strings.Contains(s, "advertised.listeners") {
						advertised = s
					}
				}
				if want := "." + svc.Name; !strings.Contains(advertised, want) {
					t.Fatalf("StatefulSet %s advertises %q, not a name under the headless Service %s", sts.Name, advertised, svc.Name)
				}
			}
			if ferrySets != 1 {
				t.Fatalf("%d StatefulSets run ferry, want 1", ferrySets)
			}
		})
	}
}

// The systemd unit passes `systemd-analyze verify` with nothing to say. The
// unit names /usr/local/bin/ferry, which verify requires to exist, so a copy
// names this test's own executable in its place; a copy with a misspelt
// value proves verify's warnings are caught.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	harness.RequireService(t, "systemd-analyze (Debian's systemd)", err)
	unit, err := os.ReadFile("../../deployments/systemd/ferry.service")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte("ExecStart=/usr/local/bin/ferry serve --config /etc/ferry/server.properties\n")) {
		t.Fatal("ExecStart is not ferry serve with /etc/ferry/server.properties")
	}
	verify := func(text []byte) (string, error) {
		path := filepath.Join(t.TempDir(), "ferry.service")
		text = bytes.ReplaceAll(text, []byte("/usr/local/bin/ferry"), []byte(self))
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
		return string(out), err
	}
	if out, err := verify(unit); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	broken := bytes.Replace(unit, []byte("KillSignal=SIGTERM"), []byte("KillSignal=SIGTREM"), 1)
	if out, err := verify(broken); err == nil && strings.TrimSpace(out) == "" {
		t.Fatal("a misspelt signal passed systemd-analyze verify unnoticed")
	}
}
