package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDevListensWhereBCListenSays: dev honours BC_LISTEN as serve does (it used to ignore it
// and take 127.0.0.1:8080 unless --addr was given), and --addr still wins over it.
func TestDevListensWhereBCListenSays(t *testing.T) {
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	fromEnv, fromFlag := free(), free()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"BC_LISTEN", nil, fromEnv},
		{"--addr over BC_LISTEN", []string{"--addr", fromFlag}, fromFlag},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ready := filepath.Join(t.TempDir(), "ready.json")
			env := map[string]string{"BC_LISTEN": fromEnv}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			var out, errOut bytes.Buffer
			go func() {
				done <- run(ctx, append([]string{"dev", "--ready-file", ready}, c.args...), lookup(env), &out, &errOut)
			}()
			defer func() {
				cancel()
				<-done
			}()
			var info struct{ URL string }
			deadline := time.Now().Add(2 * time.Minute)
			for {
				if raw, err := os.ReadFile(ready); err == nil && json.Unmarshal(raw, &info) == nil {
					break
				}
				select {
				case code := <-done:
					done <- code
					t.Fatalf("dev exited %d before it was ready: %s", code, errOut.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("dev not ready within 2 minutes: %s", errOut.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			if !strings.HasSuffix(info.URL, "://"+c.want) {
				t.Errorf("dev serves on %s, want %s", info.URL, c.want)
			}
			conn, err := net.Dial("tcp", c.want)
			if err != nil {
				t.Fatalf("nothing listens on %s: %v", c.want, err)
			}
			conn.Close()
		})
	}
}
