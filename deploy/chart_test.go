package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"better-compute.dev/compute/reconcile/substrates/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

const chartDir = "helm/better-compute"

// valueCases are the values files under the chart's ci/ directory (helm lint and chart-testing
// read the same place): minimal, three zones, external OpenFGA, metrics on their own port.
var valueCases = []string{"minimal", "three-zones", "external-openfga", "metrics-port"}

// render is helm template of the chart with one values case, as objects.
func render(t *testing.T, helm, valuesCase string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(helm, "template", "bc", chartDir, "--namespace", "bc-"+valuesCase,
		"-f", filepath.Join(chartDir, "ci", valuesCase+".yaml"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", valuesCase, err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v\n%s", valuesCase, err, doc)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
	return objs
}

// TestChartLints: helm lint passes for every values case, and refuses the chart without the
// database Secret (the values it cannot run without).
func TestChartLints(t *testing.T) {
	helm := kubetest.Helm(t) // skips without helm, fails in CI
	for _, c := range valueCases {
		if out, err := exec.Command(helm, "lint", "--strict", chartDir, "-f", filepath.Join(chartDir, "ci", c+".yaml")).CombinedOutput(); err != nil {
			t.Errorf("helm lint %s: %v\n%s", c, err, out)
		}
	}
	out, err := exec.Command(helm, "template", "bc", chartDir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "database.urlSecret.name") {
		t.Errorf("helm template without the database Secret: %v\n%s", err, out)
	}
}

// TestChartDryRunsOnAPIServer: every object the chart renders for every values case is accepted by
// a real kube-apiserver (create with dryRun=All and strict field validation: schema, defaults and
// admission run, nothing is stored). The monitoring kinds are checked against
// testdata/monitoring-crds.yaml, installed first.
func TestChartDryRunsOnAPIServer(t *testing.T) {
	helm := kubetest.Helm(t) // skips without helm, fails in CI
	srv := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(ctx, t, dyn)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(srv.Discovery))

	kinds := map[string]bool{}
	for _, c := range valueCases {
		ns := "bc-" + c
		if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		objs := render(t, helm, c)
		for _, obj := range objs {
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Errorf("%s: %s %s: no such kind on the API server: %v", c, gvk, obj.GetName(), err)
				continue
			}
			_, err = dyn.Resource(m.Resource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{
				DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
			if err != nil {
				t.Errorf("%s: %s %s refused: %v", c, gvk.Kind, obj.GetName(), err)
			}
			kinds[gvk.Kind] = true
		}
		t.Logf("%s: %d objects accepted with dryRun=All", c, len(objs))
	}
	for _, k := range []string{"Deployment", "Service", "PodDisruptionBudget", "Job", "ServiceAccount", "ServiceMonitor", "PrometheusRule", "NetworkPolicy"} {
		if !kinds[k] {
			t.Errorf("no values case renders a %s", k)
		}
	}
}

// installCRDs creates testdata/monitoring-crds.yaml and waits until both are established.
func installCRDs(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	raw, err := os.ReadFile("testdata/monitoring-crds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	var names []string
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: m}
		if _, err := crds.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("CRD %s: %v", obj.GetName(), err)
		}
		names = append(names, obj.GetName())
	}
	for _, name := range names {
		for {
			got, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			if slices.ContainsFunc(conds, func(c any) bool {
				m, _ := c.(map[string]any)
				return m["type"] == "Established" && m["status"] == "True"
			}) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("CRD %s not established", name)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// serverVariables are the variables bc-server help lists.
func serverVariables(t *testing.T) []string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bc-server")
	if out, err := exec.Command("go", "build", "-o", bin, "better-compute.dev/compute/cmd/bc-server").CombinedOutput(); err != nil {
		t.Fatalf("go build bc-server: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "help").Output()
	if err != nil {
		t.Fatalf("bc-server help: %v", err)
	}
	var vars []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(line, "  ") && (strings.HasPrefix(f[0], "BC_") || strings.HasPrefix(f[0], "OTEL_")) {
			vars = append(vars, f[0])
		}
	}
	if len(vars) < 20 {
		t.Fatalf("bc-server help lists %d variables", len(vars))
	}
	return vars
}

// podSpecs returns the pod specs of the Deployments and Jobs among objs, by kind.
func podSpecs(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	specs := map[string]map[string]any{}
	for _, o := range objs {
		if o.GetKind() == "Deployment" || o.GetKind() == "Job" {
			spec, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			if !ok {
				t.Fatalf("%s %s has no pod spec", o.GetKind(), o.GetName())
			}
			specs[o.GetKind()] = spec
		}
	}
	return specs
}

// TestChartPodsAreSafe: for every values case the replicas' and the migration's environments hold
// only variables bc-server help lists, the secrets come from Secrets (never a value), service
// links are off, pods run non-root on a read-only root, and the drain delay is wired to preStop
// and the grace period.
func TestChartPodsAreSafe(t *testing.T) {
	helm := kubetest.Helm(t) // skips without helm, fails in CI
	known := serverVariables(t)
	secret := []string{"BC_DATABASE_URL", "BC_SEAL_KEY", "BC_OPENFGA_TOKEN"}
	for _, c := range valueCases {
		specs := podSpecs(t, render(t, helm, c))
		if len(specs) != 2 {
			t.Fatalf("%s: pod specs of %v, want a Deployment and a Job", c, reflect.ValueOf(specs).MapKeys())
		}
		for kind, spec := range specs {
			if spec["enableServiceLinks"] != false || spec["automountServiceAccountToken"] != false {
				t.Errorf("%s %s: enableServiceLinks %v, automountServiceAccountToken %v, want false", c, kind, spec["enableServiceLinks"], spec["automountServiceAccountToken"])
			}
			if nonRoot, _, _ := unstructured.NestedBool(spec, "securityContext", "runAsNonRoot"); !nonRoot {
				t.Errorf("%s %s: runAsNonRoot not set", c, kind)
			}
			containers, _, _ := unstructured.NestedSlice(spec, "containers")
			for _, ct := range containers {
				ct := ct.(map[string]any)
				if ro, _, _ := unstructured.NestedBool(ct, "securityContext", "readOnlyRootFilesystem"); !ro {
					t.Errorf("%s %s: root filesystem not read-only", c, kind)
				}
				env, _, _ := unstructured.NestedSlice(ct, "env")
				names := map[string]bool{}
				for _, e := range env {
					e := e.(map[string]any)
					name := e["name"].(string)
					names[name] = true
					if !slices.Contains(known, name) {
						t.Errorf("%s %s: env %s is not a variable bc-server help lists", c, kind, name)
					}
					if _, inline := e["value"]; inline && slices.Contains(secret, name) {
						t.Errorf("%s %s: %s is inline, want a secretKeyRef", c, kind, name)
					}
					if _, ref, _ := unstructured.NestedMap(e, "valueFrom", "secretKeyRef"); slices.Contains(secret, name) && !ref {
						t.Errorf("%s %s: %s not read from a Secret", c, kind, name)
					}
				}
				if !names["BC_DATABASE_URL"] {
					t.Errorf("%s %s: no BC_DATABASE_URL", c, kind)
				}
				if kind == "Deployment" {
					if !names["BC_SEAL_KEY"] || names["BC_OPENFGA_TOKEN"] != (c == "external-openfga") || names["BC_METRICS_LISTEN"] != (c == "metrics-port") {
						t.Errorf("%s: env %v", c, names)
					}
					drain := envValue(env, "BC_DRAIN_DELAY")
					pre := number(ct, "lifecycle", "preStop", "sleep", "seconds")
					grace := number(spec, "terminationGracePeriodSeconds")
					if drain != "5s" || pre != 5 || grace < 2*5+15 {
						t.Errorf("%s: BC_DRAIN_DELAY %q, preStop sleep %v, grace %v: want 5s, 5 and at least 25", c, drain, pre, grace)
					}
					for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
						if p, _, _ := unstructured.NestedString(ct, probe, "httpGet", "path"); p != path {
							t.Errorf("%s: %s path %q, want %s", c, probe, p, path)
						}
					}
				}
			}
			if kind == "Deployment" {
				tsc, _, _ := unstructured.NestedSlice(spec, "topologySpreadConstraints")
				if len(tsc) == 0 || tsc[0].(map[string]any)["topologyKey"] != "topology.kubernetes.io/zone" {
					t.Errorf("%s: topologySpreadConstraints %v, want a spread over zones first", c, tsc)
				}
				if c == "three-zones" && tsc[0].(map[string]any)["whenUnsatisfiable"] != "DoNotSchedule" {
					t.Errorf("three-zones: zone spread %v", tsc[0])
				}
			}
		}
	}
}

// number reads a number of a rendered object (YAML numbers decode as float64).
func number(m map[string]any, path ...string) float64 {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	f, _ := v.(float64)
	return f
}

func envValue(env []any, name string) string {
	for _, e := range env {
		if m := e.(map[string]any); m["name"] == name {
			v, _ := m["value"].(string)
			return v
		}
	}
	return ""
}

// TestChartRulesAreTheAlertsFile: the PrometheusRule's spec is deploy/prometheus/alerts.yaml
// itself: the chart's files/alerts.yaml is a link to it (not a copy that could drift), and the
// rendered groups equal the file's.
func TestChartRulesAreTheAlertsFile(t *testing.T) {
	helm := kubetest.Helm(t) // skips without helm, fails in CI
	link := filepath.Join(chartDir, "files", "alerts.yaml")
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is not a symbolic link (%v): it must link to deploy/prometheus/alerts.yaml", link, err)
	}
	a, errA := os.Stat(link)
	b, errB := os.Stat("prometheus/alerts.yaml")
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		t.Fatalf("%s does not resolve to prometheus/alerts.yaml (%v, %v)", link, errA, errB)
	}
	raw, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	var rules int
	for _, o := range render(t, helm, "metrics-port") {
		if o.GetKind() != "PrometheusRule" {
			continue
		}
		rules++
		spec, _, _ := unstructured.NestedMap(o.Object, "spec")
		if !reflect.DeepEqual(spec, want) {
			t.Errorf("PrometheusRule spec differs from prometheus/alerts.yaml")
		}
	}
	groups, _ := want["groups"].([]any)
	if rules != 1 || len(groups) == 0 {
		t.Fatalf("%d PrometheusRules rendered, alerts.yaml has %d groups", rules, len(groups))
	}
}
