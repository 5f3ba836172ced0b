package replicas_test

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildOnce builds bc-server once per test binary.
var buildOnce struct {
	sync.Once
	path string
	err  error
	out  []byte
}

// bcServer returns the path of a freshly built bc-server.
func bcServer(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bc-server-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "bc-server")
		cmd := exec.Command("go", "build", "-o", buildOnce.path, "better-compute.dev/compute/cmd/bc-server")
		buildOnce.out, buildOnce.err = cmd.CombinedOutput()
	})
	if buildOnce.err != nil {
		t.Fatalf("build bc-server: %v\n%s", buildOnce.err, buildOnce.out)
	}
	return buildOnce.path
}

// replica is one `bc-server serve` process under test.
type replica struct {
	name string
	url  string
	cmd  *exec.Cmd
	log  *bytes.Buffer // stderr: the replica's JSON log
	mu   *sync.Mutex
	done chan struct{}
}

// lockedWriter keeps the log readable while the process writes it.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// freePort asks the kernel for a free loopback port. The replica binds it a moment later; a
// collision in between fails the start loudly rather than silently.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startReplica runs bc-server serve with env and waits until it answers.
func startReplica(t *testing.T, name string, env []string) *replica {
	t.Helper()
	port := freePort(t)
	r := &replica{name: name, url: "http://127.0.0.1:" + strconv.Itoa(port), log: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan struct{})}
	r.cmd = exec.Command(bcServer(t), "serve")
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Env = append(r.cmd.Env, "BC_REPLICA="+name, "BC_LISTEN=127.0.0.1:"+strconv.Itoa(port))
	r.cmd.Stderr = lockedWriter{r.mu, r.log}
	r.cmd.Stdout = lockedWriter{r.mu, r.log}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() { r.stop(t) })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(r.url + "/metrics")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
		}
		select {
		case <-r.done:
			t.Fatalf("replica %s exited at start:\n%s", name, r.logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s does not answer:\n%s", name, r.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// signal sends sig to the replica's process (by its id).
func (r *replica) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s: %v", sig, r.name, err)
	}
}

// stop ends the replica if it still runs: resumed first if paused, then SIGTERM, then SIGKILL.
func (r *replica) stop(t *testing.T) {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGCONT)
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	if t.Failed() {
		t.Logf("log of %s (last 4 KiB):\n%s", r.name, tail(r.logText(), 4096))
	}
}

func (r *replica) logText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
