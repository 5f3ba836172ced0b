package storetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresBin is where the Debian packages install the PostgreSQL 15 server binaries.
const PostgresBin = "/usr/lib/postgresql/15/bin"

// Server is a PostgreSQL server of one test, in its own data directory on its own port, so
// that the test may stop, restart and kill it (fault tests) without touching the shared one.
type Server struct {
	// URL reaches the server's postgres database as user postgres.
	URL string

	t    testing.TB
	dir  string
	port int
	cred *syscall.Credential // run as postgres when the test runs as root
	cmd  *exec.Cmd
	done chan struct{}
}

// StartServer initdbs a data directory and starts a server on a free loopback port. It is
// skipped when the binaries are absent (failed in CI). The server is stopped and its directory
// removed at cleanup.
func StartServer(t testing.TB) *Server {
	t.Helper()
	if _, err := os.Stat(filepath.Join(PostgresBin, "initdb")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("storetest: no PostgreSQL binaries in %s", PostgresBin)
		}
		t.Skipf("storetest: no PostgreSQL binaries in %s", PostgresBin)
	}
	// t.TempDir's parents are private to the test's user; the server may run as another.
	dir, err := os.MkdirTemp("", "bc-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, dir: dir, port: freePort(t)}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		// initdb and postgres refuse to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("storetest: running as root without a postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	init := s.command("initdb", "-D", s.data(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("storetest: initdb: %v\n%s", err, out)
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(PostgresBin, name), args...)
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

// Start starts the server (again) and waits until it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	cmd := s.command("postgres", "-D", s.data(), "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=100")
	log, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("storetest: start postgres: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = log.Close(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.URL)
		cancel()
		if err == nil {
			_ = conn.Close(context.Background())
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("storetest: postgres did not accept connections within 30s (log in %s)", s.dir)
}

// Stop shuts the server down (fast shutdown: sessions are terminated with 57P01, open
// transactions roll back) and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Restart stops and starts the server.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

// TerminateBackends ends every client session but the caller's (pg_terminate_backend), as an
// operator or a failover would; it returns how many it ended.
func (s *Server) TerminateBackends(ctx context.Context) (int, error) {
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n)
	return n, err
}

// freePort asks the kernel for a free loopback port.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
