package bmc

import (
	"context"
	"time"

	"better-compute.dev/compute/metal"
)

// Step is one action of a workflow at the BMC.
type Step string

// The steps. Every run starts with StepOpen and StepPowerState.
const (
	StepOpen       Step = "open"        // log in (one session for the whole run)
	StepPowerState Step = "power-state" // read and normalise the power state
	StepPowerOn    Step = "power-on"
	StepPowerOff   Step = "power-off"   // hard off: a released machine must not keep running
	StepBootPXE    Step = "boot-pxe"    // one-time network boot override
	StepBootDisk   Step = "boot-disk"   // persistent boot from disk (PXE off)
	StepReboot     Step = "power-cycle" // off then on if on (each waited for), on if off
	StepInventory  Step = "inventory"   // read hardware inventory (commissioning's "tests")
)

// StepResult is one step done, with what was done for it ("cycle", "already off", ...).
type StepResult struct {
	Step   Step   `json:"step"`
	Detail string `json:"detail,omitempty"`
}

// Inventory summarises the hardware as the BMC describes it: for Redfish from the system's
// collections, for IPMI (a reduced inventory) from FRU 0 and the sensor data records.
type Inventory struct {
	Vendor      string `json:"vendor,omitempty"`
	Model       string `json:"model,omitempty"`
	Serial      string `json:"serial,omitempty"`
	CPUModel    string `json:"cpuModel,omitempty"`
	CPUs        int    `json:"cpus"`
	CPUCores    int    `json:"cpuCores"`
	CPUThreads  int    `json:"cpuThreads"`
	MemoryBytes int64  `json:"memoryBytes"`
	DIMMs       int    `json:"dimms"`
	NICs        int    `json:"nics"`
	Drives      int    `json:"drives"`
	BIOSVersion string `json:"biosVersion,omitempty"`
	BMCFirmware string `json:"bmcFirmware,omitempty"`
}

// Report is what a run did and saw. It holds no credential: every text in it came from the
// BMC or a driver and was scrubbed. It is safe to store with the node (a failure state keeps
// the reason and the BMC's last answer) and to return in the API.
type Report struct {
	Workflow metal.Workflow `json:"workflow"`
	Target   string         `json:"target"` // protocol://address:port
	Steps    []StepResult   `json:"steps"`  // steps done, in order
	// FailedStep is the step that failed; empty when the run succeeded.
	FailedStep  Step       `json:"failedStep,omitempty"`
	PowerBefore PowerState `json:"powerBefore,omitempty"` // as read at the start
	PowerAfter  PowerState `json:"powerAfter,omitempty"`  // as read at the end, when it could be
	// RawPower is the driver's power string as last read ("On", "Chassis Power is on").
	RawPower string `json:"rawPower,omitempty"`
	// PowerLast is the BMC's last power reading in this run and PowerReadAt when it was read.
	PowerLast   PowerState `json:"powerLast,omitempty"`
	PowerReadAt time.Time  `json:"powerReadAt,omitzero"`
	// PowerRequested is the state a power change of this run asked for while the BMC's reading
	// does not show it yet (a run that failed before it settled); empty once it did.
	PowerRequested PowerState `json:"powerRequested,omitempty"`
	// Auth is how the run authenticated: AuthSession, AuthBasic or AuthRMCP; empty when it
	// never logged in.
	Auth      string     `json:"auth,omitempty"`
	Inventory *Inventory `json:"inventory,omitempty"`
	// Provider is the bmclib driver that answered (GetMetadata().SuccessfulProvider).
	Provider string `json:"provider,omitempty"`
	// LastAnswer is the BMC's last answer, "<call>: <answer or error>", scrubbed and bounded.
	LastAnswer string `json:"lastAnswer,omitempty"`

	// settling is RunOptions.Settling of the run that fills the report.
	settling func(ctx context.Context, requested, reading PowerState, readAt time.Time)
}

func (r *Report) done(step Step, detail string) {
	r.Steps = append(r.Steps, StepResult{Step: step, Detail: detail})
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
