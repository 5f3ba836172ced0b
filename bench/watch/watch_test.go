// Package watch measures what open WatchEvents streams cost a replica, in one run, by counts:
// the database's own transactions per second (pg_stat_database: xact_commit + xact_rollback of a
// database the benchmark owns alone) with no watch open and with idle watches open, how long a new
// event takes to reach every open watch (p50, p99), the replica's memory per idle watch, and
// whether 10,000 watches open and stay idle without error. The watches are opened by a child
// process (this test binary, re-run as TestWatchClients), so the memory counted is the replica's
// alone.
//
//	go test -count=1 -run '^TestWatchCost$' -v ./bench/watch
//
// BC_BENCH_WATCHES (default "1000,10000") lists the watch counts; BC_BENCH_WINDOW (default 20s)
// is how long each rate is counted; BC_BENCH_WATCH_TENANTS (default 1) spreads the watches over
// that many tenants, each watched with its own principal's token.
package watch

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// Environment of the child process that opens the watches.
const (
	envClientURL     = "BC_WATCH_CLIENT_URL"
	envClientTargets = "BC_WATCH_CLIENT_TARGETS" // tenant=token,tenant=token...
	envClientCount   = "BC_WATCH_CLIENT_COUNT"
	envClientAfter   = "BC_WATCH_CLIENT_AFTER"
)

// benchType is the type of the events the benchmark writes; the watches keep only those.
const benchType = "bench.fanout"

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// rate counts the database's transactions per second over window (after a settling pause: the
// server publishes a backend's counts at most once a second while it is busy).
func rate(xacts func() int64, window time.Duration) float64 {
	time.Sleep(3 * time.Second)
	a, t0 := xacts(), time.Now()
	time.Sleep(window)
	return float64(xacts()-a) / time.Since(t0).Seconds()
}

// serverMemory is the heap and the stacks this process holds after a collection.
func serverMemory() (heap, stack uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse
}

// writeHeapProfile writes the in-use heap to path (BC_BENCH_HEAP_PROFILE), to see what a watch holds.
func writeHeapProfile(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}

// clients is the child process holding the watches open.
type clients struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ready  chan string   // "ready N" or "fail ..."
	events chan received // one per event per watch
	errs   chan string
}

type received struct {
	cursor int64
	at     time.Time
}

// clientOutput is where the children's lines go; made once, before the replica's memory is first
// counted, so that the benchmark's own buffers are not counted as the watches'.
type clientOutput struct {
	events chan received
	errs   chan string
}

func newClientOutput() clientOutput {
	return clientOutput{events: make(chan received, 4096), errs: make(chan string, 4096)}
}

func startClients(t *testing.T, out clientOutput, url string, targets []string, n int, after int64) *clients {
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchClients$", "-test.count=1")
	cmd.Env = append(os.Environ(), envClientURL+"="+url, envClientTargets+"="+strings.Join(targets, ","),
		envClientCount+"="+strconv.Itoa(n), envClientAfter+"="+strconv.FormatInt(after, 10))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &clients{cmd: cmd, stdin: stdin, ready: make(chan string, 1), events: out.events, errs: out.errs}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) >= 1 && (f[0] == "ready" || f[0] == "fail"):
				c.ready <- sc.Text()
			case len(f) == 3 && f[0] == "ev":
				cur, _ := strconv.ParseInt(f[1], 10, 64)
				ns, _ := strconv.ParseInt(f[2], 10, 64)
				c.events <- received{cursor: cur, at: time.Unix(0, ns)}
			case len(f) >= 1 && f[0] == "err":
				c.errs <- sc.Text()
			}
		}
	}()
	select {
	case line := <-c.ready:
		if !strings.HasPrefix(line, "ready") {
			t.Fatalf("clients: %s", line)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("clients: not ready after 5 minutes")
	}
	return c
}

// stop ends the child (closing its stdin) and returns the stream errors it reported.
func (c *clients) stop() []string {
	_ = c.stdin.Close()
	_ = c.cmd.Wait()
	var errs []string
	for {
		select {
		case e := <-c.errs:
			errs = append(errs, e)
		default:
			return errs
		}
	}
}

// TestWatchCost is the benchmark (a test so that it reports in one run with -v).
func TestWatchCost(t *testing.T) {
	if os.Getenv(envClientURL) != "" {
		t.Skip("child process")
	}
	xacts := storetest.OwnDatabase(t, "bench_watch_")
	window, err := time.ParseDuration(envOr("BC_BENCH_WINDOW", "20s"))
	if err != nil {
		t.Fatal(err)
	}
	s := apptest.Start(t)
	nTenants, _ := strconv.Atoi(envOr("BC_BENCH_WATCH_TENANTS", "1"))
	var targets []string
	var first apptest.Tenant
	for i := range max(nTenants, 1) {
		tn := s.NewTenant(t, fmt.Sprintf("watch-%d", i), "viewer")
		if i == 0 {
			first = tn
		}
		targets = append(targets, tn.ID+"="+tn.Token)
	}
	none := rate(xacts, window)
	t.Logf("no watches: %.1f database transactions/s", none)
	out := newClientOutput()
	baseHeap, baseStack := serverMemory()
	for _, field := range strings.Split(envOr("BC_BENCH_WATCHES", "1000,10000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n <= 0 {
			t.Fatalf("BC_BENCH_WATCHES: %q", field)
		}
		head, err := store.EventHead(context.Background(), s.App.DB.Q(), first.ID)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		c := startClients(t, out, s.App.URL, targets, n, head)
		t.Logf("%d watches open in %v", n, time.Since(t0).Round(time.Millisecond))
		heap, stack := serverMemory()
		if path := os.Getenv("BC_BENCH_HEAP_PROFILE"); path != "" {
			writeHeapProfile(t, fmt.Sprintf("%s.%d", path, n))
		}
		heapPer, stackPer := (float64(heap)-float64(baseHeap))/float64(n)/1024, (float64(stack)-float64(baseStack))/float64(n)/1024
		idle := rate(xacts, window)
		lat := fanOut(t, s, first, c, n/max(nTenants, 1))
		errs := c.stop()
		t.Logf("%d idle watches: %.1f transactions/s (%.1f with none, +%.1f); memory %.1f KiB per watch (heap %.1f, stacks %.1f); "+
			"new event to every watch of its tenant: p50 %v p99 %v (%d deliveries); stream errors %d",
			n, idle, none, idle-none, heapPer+stackPer, heapPer, stackPer, pct(lat, 0.5), pct(lat, 0.99), len(lat), len(errs))
		for i, e := range errs {
			if i < 5 {
				t.Logf("  %s", e)
			}
		}
	}
}

// fanOut writes three events to the tenant, one after another, and returns how long each took
// from its commit to each watch that received it.
func fanOut(t *testing.T, s *apptest.Stack, tn apptest.Tenant, c *clients, watches int) []time.Duration {
	var lat []time.Duration
	for i := range 3 {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		err := store.ExecuteTx(context.Background(), s.App.DB, func(tx store.Tx) error {
			_, err := store.AppendEvent(context.Background(), tx, store.Event{TenantID: tn.ID, ID: "evt_bench" + hex.EncodeToString(b), Type: benchType, ResourceID: "bench"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		committed := time.Now()
		deadline := time.After(10 * time.Second)
		for got := 0; got < watches; got++ {
			select {
			case r := <-c.events:
				lat = append(lat, r.at.Sub(committed))
			case <-deadline:
				t.Errorf("event %d reached %d of %d watches in 10s", i, got, watches)
				got = watches
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	slices.Sort(lat)
	return lat
}

func pct(l []time.Duration, p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[int(float64(len(l)-1)*p)].Round(time.Millisecond)
}

// TestWatchClients is the child process: it opens BC_WATCH_CLIENT_COUNT watches spread over the
// targets, prints "ready N" once every stream is established, one "ev cursor unixnano" line per
// event received, "err ..." for a stream that ended, and exits when its stdin closes.
func TestWatchClients(t *testing.T) {
	url := os.Getenv(envClientURL)
	if url == "" {
		t.Skip("run by TestWatchCost")
	}
	n, _ := strconv.Atoi(os.Getenv(envClientCount))
	targets := strings.Split(os.Getenv(envClientTargets), ",")
	after, _ := strconv.ParseInt(os.Getenv(envClientAfter), 10, 64)
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: &http.Transport{Protocols: p}}
	var out sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(w, format+"\n", args...)
		_ = w.Flush()
		out.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	var opened sync.WaitGroup
	var failed sync.Once
	sem := make(chan struct{}, 64)
	for i := range n {
		tenant, token, _ := strings.Cut(targets[i%len(targets)], "=")
		opened.Add(1)
		go func() {
			sem <- struct{}{}
			c := computev1connect.NewEventServiceClient(hc, url, connect.WithGRPC())
			req := connect.NewRequest(&v1.WatchEventsRequest{TenantId: tenant, After: after, Types: []string{benchType}})
			req.Header().Set("Authorization", "Bearer "+token)
			stream, err := c.WatchEvents(ctx, req)
			if err == nil {
				_, err = stream.ResponseHeader(), stream.Err()
			}
			<-sem
			opened.Done()
			if err != nil {
				failed.Do(func() { say("fail open: %v", err) })
				return
			}
			for stream.Receive() {
				if e := stream.Msg().GetEvent(); e != nil {
					say("ev %d %d", e.GetCursor(), time.Now().UnixNano())
				}
			}
			if ctx.Err() == nil {
				say("err %d %v", i, stream.Err())
			}
		}()
	}
	opened.Wait()
	say("ready %d", n)
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
}
