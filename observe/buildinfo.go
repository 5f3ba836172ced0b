package observe

import (
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// version and commit are stamped by the image build and `make image`
// (-ldflags "-X better-compute.dev/compute/observe.version=... -X ...observe.commit=...");
// unset, they come from the module and VCS information the Go toolchain records.
var version, commit string

// Build is what a binary says about itself: bc-server version prints it, bc_build_info exports it.
type Build struct {
	Version   string // the release (a tag or git describe), "devel" when unknown
	Commit    string // the VCS revision, with "-dirty" when the tree had changes; "unknown" when none
	GoVersion string
}

var buildOnce = sync.OnceValue(func() Build {
	b := Build{Version: version, Commit: commit, GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if ok {
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		if b.Commit == "" {
			var dirty bool
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					b.Commit = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if b.Commit != "" && dirty {
				b.Commit += "-dirty"
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
})

// BuildInfo returns this binary's build.
func BuildInfo() Build { return buildOnce() }

// buildInfo is bc_build_info: always 1, its labels say which build a replica runs (a fleet
// mid-rollout shows two).
var buildInfo = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
	Name:        "bc_build_info",
	Help:        "The running build: version, commit and Go version as labels; always 1.",
	ConstLabels: prometheus.Labels{"version": BuildInfo().Version, "commit": BuildInfo().Commit, "goversion": BuildInfo().GoVersion},
}, func() float64 { return 1 })
