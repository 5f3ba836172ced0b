package bmc

import (
	"context"
	"errors"
	"fmt"

	"github.com/stmcginnis/gofish"
	gfcommon "github.com/stmcginnis/gofish/common"
	"github.com/stmcginnis/gofish/redfish"
)

// ErrInventory is an inventory that could not be read, or that reads as no machine (no
// processor, no memory). It is permanent: a step that reports such an inventory fails, it never
// succeeds with an empty one.
var ErrInventory = errors.New("bmc: inventory not readable")

// errIncomplete marks an inventory read that answered but described no usable machine.
type errIncomplete struct{ msg string }

func (e *errIncomplete) Error() string { return e.msg }

// redfishInventory reads the hardware of the node's system (its @odata.id) as any Redfish
// client does: from the system its Processors, Memory, EthernetInterfaces and Storage (or
// SimpleStorage), and from the service root's Chassis and Managers collections the vendor,
// model, serial and firmware the system leaves out, whatever their ids. bmclib v2.3.4's
// inventory only reads a few vendors' fixed paths and drops its errors, so it is not used. It
// goes through the run's logged-in gofish client and sends only GETs.
func redfishInventory(ctx context.Context, c *gofish.APIClient, system string) (*Inventory, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	sys, err := redfish.GetComputerSystem(c, system)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", system, err)
	}
	return walkRedfish(c.Service, sys)
}

func walkRedfish(svc *gofish.Service, sys *redfish.ComputerSystem) (*Inventory, error) {
	inv := &Inventory{Vendor: sys.Manufacturer, Model: sys.Model, Serial: sys.SerialNumber, BIOSVersion: sys.BIOSVersion}

	procs, err := sys.Processors()
	if err != nil {
		return nil, fmt.Errorf("reading %s processors: %w", sys.ODataID, err)
	}
	for _, p := range procs {
		if absent(p.Status) || (p.ProcessorType != "" && p.ProcessorType != redfish.CPUProcessorType) {
			continue // an empty socket, a GPU or an FPGA is not a CPU
		}
		inv.CPUs++
		inv.CPUCores += p.TotalCores
		inv.CPUThreads += p.TotalThreads
		inv.CPUModel = firstNonEmpty(inv.CPUModel, p.Model)
	}
	mems, err := sys.Memory()
	if err != nil {
		return nil, fmt.Errorf("reading %s memory: %w", sys.ODataID, err)
	}
	for _, m := range mems {
		// Older services report CapacityMiB, newer ones VolatileSizeMiB (and may leave
		// CapacityMiB out); an empty slot reports neither, or is Absent.
		size := m.CapacityMiB
		if size == 0 {
			size = m.VolatileSizeMiB
		}
		if absent(m.Status) || size == 0 {
			continue
		}
		inv.DIMMs++
		inv.MemoryBytes += int64(size) << 20
	}
	nics, err := sys.EthernetInterfaces()
	if err != nil {
		return nil, fmt.Errorf("reading %s network interfaces: %w", sys.ODataID, err)
	}
	for _, n := range nics {
		if !absent(n.Status) {
			inv.NICs++
		}
	}
	if err := countDrives(sys, inv); err != nil {
		return nil, err
	}

	chassis, err := svc.Chassis()
	if err != nil {
		return nil, fmt.Errorf("reading the Chassis collection: %w", err)
	}
	for _, ch := range chassis {
		inv.Vendor = firstNonEmpty(inv.Vendor, ch.Manufacturer)
		inv.Model = firstNonEmpty(inv.Model, ch.Model)
		inv.Serial = firstNonEmpty(inv.Serial, ch.SerialNumber)
	}
	managers, err := svc.Managers()
	if err != nil {
		return nil, fmt.Errorf("reading the Managers collection: %w", err)
	}
	for _, m := range managers {
		inv.BMCFirmware = firstNonEmpty(inv.BMCFirmware, m.FirmwareVersion)
	}

	switch {
	case inv.CPUs == 0:
		return nil, &errIncomplete{fmt.Sprintf("%s reports no processor (%d members in Processors)", sys.ODataID, len(procs))}
	case inv.MemoryBytes == 0:
		return nil, &errIncomplete{fmt.Sprintf("%s reports no memory (%d members in Memory)", sys.ODataID, len(mems))}
	}
	return inv, nil
}

// countDrives counts the drives of the system's Storage controllers, or of its SimpleStorage
// when it has no Storage.
func countDrives(sys *redfish.ComputerSystem, inv *Inventory) error {
	storage, err := sys.Storage()
	if err != nil {
		return fmt.Errorf("reading %s storage: %w", sys.ODataID, err)
	}
	for _, st := range storage {
		drives, err := st.Drives()
		if err != nil {
			return fmt.Errorf("reading the drives of %s: %w", st.ODataID, err)
		}
		for _, d := range drives {
			if !absent(d.Status) {
				inv.Drives++
			}
		}
	}
	if len(storage) > 0 {
		return nil
	}
	simple, err := sys.SimpleStorages()
	if err != nil {
		return fmt.Errorf("reading %s simple storage: %w", sys.ODataID, err)
	}
	for _, st := range simple {
		for _, d := range st.Devices {
			if !absent(d.Status) {
				inv.Drives++
			}
		}
	}
	return nil
}

func absent(s gfcommon.Status) bool { return s.State == gfcommon.AbsentState }
