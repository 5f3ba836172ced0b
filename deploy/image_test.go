// Package deploy tests what ships: the image Containerfile builds and the Helm chart under helm/.
package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// sandboxRefusal matches what podman, buildah and their runtimes say where the machine forbids
// containers (no user namespaces, no mounts, no cgroups, seccomp): the test then skips.
var sandboxRefusal = regexp.MustCompile(`(?i)operation not permitted|permission denied|cgroups? .*not supported|unshare|cannot (set up|mount)|newuidmap|no space for user namespace|mount .*: invalid argument`)

// TestImageRunsVersion builds the image with scripts/image.sh (make image) and runs
// `bc-server version` in it: the version and commit stamped by the build come back, the image
// runs as the non-root user 65532 and holds no shell. It skips, saying why, where neither podman
// nor buildah is installed or where the sandbox refuses to build or run a container.
func TestImageRunsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the image build takes a minute")
	}
	var tool string
	for _, name := range []string{"podman", "buildah"} {
		if _, err := exec.LookPath(name); err == nil {
			tool = name
			break
		}
	}
	if tool == "" {
		t.Skip("image: neither podman nor buildah is installed (apt-get install podman buildah); make image needs one")
	}
	root := repoRoot(t)
	// vfs works everywhere (no overlay mounts); the image is a few layers of one binary.
	storage := []string{"--storage-driver", "vfs"}
	version, commit := fmt.Sprintf("test-%d", os.Getpid()), "0123456789abcdef0123456789abcdef01234567"
	tag := "localhost/better-compute/bc-server:" + version
	build := exec.Command(filepath.Join(root, "scripts", "image.sh"), tag)
	build.Env = append(os.Environ(), "IMAGE_STORAGE_DRIVER=vfs", "VERSION="+version, "COMMIT="+commit)
	if out, err := build.CombinedOutput(); err != nil {
		if sandboxRefusal.Match(out) {
			t.Skipf("image: this machine refuses to build containers (%v); last lines:\n%s", err, tail(out, 5))
		}
		t.Fatalf("scripts/image.sh: %v\n%s", err, tail(out, 20))
	}
	t.Cleanup(func() { _ = exec.Command(tool, append(storage, "rmi", "-f", tag)...).Run() })

	user := strings.TrimSpace(runOut(t, tool, append(storage, "image", "inspect", "--format", "{{.Config.User}}", tag)...))
	if user != "65532:65532" {
		t.Errorf("image user %q, want 65532:65532 (non-root)", user)
	}

	out, how, err := runInImage(tool, storage, tag, "/usr/local/bin/bc-server", "version")
	if err != nil {
		if sandboxRefusal.MatchString(out) {
			t.Skipf("image: built, but this machine refuses to run a container (%v); last lines:\n%s", err, tail([]byte(out), 5))
		}
		t.Fatalf("bc-server version in the image (%s): %v\n%s", how, err, out)
	}
	want := "bc-server " + version + "\ncommit " + commit + "\n" + runtime.Version() + "\n"
	if out != want {
		t.Errorf("bc-server version in the image (%s) printed %q, want %q", how, out, want)
	}
	// ipmitool (metal's IPMI driver) runs in the image when the build host had it to copy.
	if _, err := os.Stat(filepath.Join(root, ".build", "image", "rootfs", "usr", "bin", "ipmitool")); err == nil {
		out, _, err := runInImage(tool, storage, tag, "/usr/bin/ipmitool", "-V")
		if err != nil || !strings.HasPrefix(out, "ipmitool version") {
			t.Errorf("ipmitool -V in the image: %v: %q", err, out)
		}
	} else {
		t.Log("the build host has no ipmitool: the image was built without it")
	}
	// scratch: the binary, the CA bundle, passwd and ipmitool's files; no shell to exec into.
	if out, _, err := runInImage(tool, storage, tag, "/bin/sh", "-c", "true"); err == nil {
		t.Errorf("the image has a shell: %q", out)
	}
	t.Logf("image built and run with %s (%s)", tool, how)
}

// runInImage runs argv in a container of image: podman run where the machine allows it, else a
// buildah working container with chroot isolation (no namespaces or cgroups needed). It returns
// the standard output (with standard error on failure) and how it ran.
func runInImage(tool string, storage []string, image string, argv ...string) (string, string, error) {
	var podmanOut []byte
	if tool == "podman" {
		args := append(append([]string{}, storage...), "run", "--rm", "--network=host", "--read-only", "--entrypoint", argv[0], image)
		out, err := outputOrBoth(exec.Command("podman", append(args, argv[1:]...)...))
		if err == nil {
			return out, "podman run --read-only", nil
		}
		podmanOut = []byte(out)
	}
	if _, err := exec.LookPath("buildah"); err != nil {
		return string(podmanOut), "podman run", fmt.Errorf("podman run failed and buildah is not installed")
	}
	ctr, err := outputOrBoth(exec.Command("buildah", append(append([]string{}, storage...), "from", image)...))
	if err != nil {
		return ctr, "buildah from", err
	}
	ctr = strings.TrimSpace(ctr)
	defer func() { _ = exec.Command("buildah", append(append([]string{}, storage...), "rm", ctr)...).Run() }()
	args := append(append([]string{}, storage...), "run", "--isolation", "chroot", "--network", "host", ctr, "--")
	out, err := outputOrBoth(exec.Command("buildah", append(args, argv...)...))
	how := "buildah run --isolation chroot"
	if len(podmanOut) > 0 {
		how += fmt.Sprintf(" (podman run refused: %s)", strings.TrimSpace(string(tail(podmanOut, 1))))
	}
	return out, how, err
}

// outputOrBoth returns the command's standard output, or both streams when it fails.
func outputOrBoth(cmd *exec.Cmd) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

func runOut(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := outputOrBoth(exec.Command(name, args...))
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// tail is the last n lines of b.
func tail(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}

// repoRoot is the module root: the directory above this package holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s", dir)
	}
	return dir
}
