// Package kubetest starts a real kube-apiserver (with its etcd) for the substrate tests, through
// scripts/kube-apiserver.sh. One server serves every test of a package: Start starts it on
// first use and Main stops it when the package's tests are done.
//
// Without the binaries (scripts/kube-apiserver.sh build, once, cached under
// $HOME/.cache/better-compute) a test that needs the server is skipped with a message saying
// so, except in CI (CI set, as CI=true), where it fails: the tier is required there.
package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"better-compute.dev/compute/reconcile/substrates/k8sapply"
)

// Server is a running kube-apiserver on 127.0.0.1, reached as cluster-admin by a client
// certificate.
type Server struct {
	URL        string // https://127.0.0.1:port
	CAPEM      []byte
	CertPEM    []byte // cluster-admin client certificate (group system:masters)
	KeyPEM     []byte
	Kubeconfig []byte
	Config     *rest.Config
	Client     *k8sapply.Clients
	Discovery  discovery.DiscoveryInterface
	dir        string
}

var (
	mu       sync.Mutex
	shared   *Server
	startErr error
	notBuilt bool
)

// exitNotBuilt is the script's exit status 3: the binaries are not in the cache.
const exitNotBuilt = 3

// Start returns the package's server, starting it on the first call. Without the binaries
// it skips t (fails it when CI is set); a server that does not start fails t.
func Start(t testing.TB) *Server {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if shared == nil && startErr == nil && !notBuilt {
		shared, startErr = start()
	}
	switch {
	case notBuilt && os.Getenv("CI") != "":
		t.Fatal("kubetest: kube-apiserver is not built and CI (CI set) requires the real-API-server tier: run scripts/kube-apiserver.sh build before the tests")
	case notBuilt:
		t.Skip("kubetest: kube-apiserver is not built: run scripts/kube-apiserver.sh build (minutes, once; cached under $HOME/.cache/better-compute) to run this test against a real API server")
	case startErr != nil:
		t.Fatalf("kubetest: %v", startErr)
	}
	return shared
}

// Main runs the package's tests, then stops the server if one was started. Call it from
// TestMain.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if shared != nil {
		shared.stop()
	}
	mu.Unlock()
	os.Exit(code)
}

func start() (*Server, error) {
	script, err := scriptPath()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bc-kube-apiserver-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(script, "start", dir)
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("ETCD_PORT=%d", ports[0]), fmt.Sprintf("ETCD_PEER_PORT=%d", ports[1]), fmt.Sprintf("APISERVER_PORT=%d", ports[2]),
		// A test binary killed before Main stops the pair (a timeout) does not leave it running.
		fmt.Sprintf("WATCH_PID=%d", os.Getpid()))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if _, err := cmd.Output(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == exitNotBuilt {
			notBuilt = true
			_ = os.RemoveAll(dir)
			return nil, nil
		}
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%s start: %v: %s", script, err, strings.TrimSpace(stderr.String()))
	}
	s := &Server{URL: fmt.Sprintf("https://127.0.0.1:%d", ports[2]), dir: dir}
	for _, f := range []struct {
		name string
		into *[]byte
	}{{"pki/ca.crt", &s.CAPEM}, {"pki/admin.crt", &s.CertPEM}, {"pki/admin.key", &s.KeyPEM}, {"kubeconfig", &s.Kubeconfig}} {
		if *f.into, err = os.ReadFile(filepath.Join(dir, f.name)); err != nil {
			s.stop()
			return nil, err
		}
	}
	s.Config = &rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{CAData: s.CAPEM, CertData: s.CertPEM, KeyData: s.KeyPEM}}
	if s.Client, err = k8sapply.NewClients(s.Config); err != nil {
		s.stop()
		return nil, err
	}
	if s.Discovery, err = discovery.NewDiscoveryClientForConfig(s.Config); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// As returns a client that impersonates user (and groups): what that identity may do is what
// the server's RBAC grants it.
func (s *Server) As(user string, groups ...string) (k8sapply.Cluster, error) {
	cfg := rest.CopyConfig(s.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return k8sapply.NewClients(cfg)
}

func (s *Server) stop() {
	if script, err := scriptPath(); err == nil {
		_ = exec.Command(script, "stop", s.dir).Run()
	}
	_ = os.RemoveAll(s.dir)
}

// Helm returns the helm the chart tests run: the tier's own build (scripts/kube-apiserver.sh
// builds helm in the same compile as kube-apiserver, sharing their Kubernetes packages), waiting
// for a build in progress; else helm on PATH or in GOPATH/bin. Without one it skips t (fails it
// when CI is set).
func Helm(t testing.TB) string {
	t.Helper()
	if script, err := scriptPath(); err == nil {
		if out, err := exec.Command(script, "helm").Output(); err == nil {
			return strings.TrimSpace(string(out))
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "helm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := "kubetest: helm is not built: run scripts/kube-apiserver.sh build (it builds helm with kube-apiserver), or make helm"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// scriptPath finds scripts/kube-apiserver.sh at the module's root, above the working directory.
func scriptPath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "kube-apiserver.sh")
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("no %s at the module root", p)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kubetest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// freePorts returns n ports free on 127.0.0.1 at the time of asking.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
