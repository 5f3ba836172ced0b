package redfishsim

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
)

type doc = map[string]any

func link(path string) doc { return doc{"@odata.id": path} }

func collection(path, typ string, members ...string) doc {
	ms := make([]doc, len(members))
	for i, m := range members {
		ms[i] = link(m)
	}
	return doc{
		"@odata.id": path, "@odata.type": "#" + typ + "Collection." + typ + "Collection",
		"Name": typ + " Collection", "Members": ms, "Members@odata.count": len(ms),
	}
}

var healthy = doc{"State": "Enabled", "Health": "OK"}

func session(id, user string) doc {
	return doc{
		"@odata.id": sessionsPath + "/" + id, "@odata.type": "#Session.v1_6_0.Session",
		"Id": id, "Name": "User Session", "UserName": user,
	}
}

// Layout is how the simulated service arranges its resources. Clients must discover members
// from the collections (Systems, Chassis, Managers and the system's subcollections), never
// assume an id: the layouts differ in every id and in how memory sizes are spelled.
type Layout string

const (
	// LayoutClassic uses the ids "1" (Systems/1, Chassis/1, Managers/1), processors CPU<n>,
	// DIMMs DIMM<n> reporting CapacityMiB only, one NIC and a SimpleStorage of drives.
	LayoutClassic Layout = "classic"
	// LayoutNamed is laid out as DMTF's public mockups are: Systems/node-a7, Chassis/chassis-a7,
	// Managers/bmc-a7, processors socket-<n> plus one GPU (not a CPU), DIMMs reporting
	// VolatileSizeMiB only and one absent DIMM slot, two NICs, and a Storage with Drives.
	LayoutNamed Layout = "named"
)

// layout holds the ids of one Layout.
type layout struct {
	kind                     Layout
	system, chassis, manager string
}

func newLayout(l Layout) layout {
	if l == LayoutNamed {
		return layout{kind: l, system: root + "/Systems/node-a7", chassis: root + "/Chassis/chassis-a7", manager: root + "/Managers/bmc-a7"}
	}
	return layout{kind: LayoutClassic, system: root + "/Systems/1", chassis: root + "/Chassis/1", manager: root + "/Managers/1"}
}

// document returns the resource at path, or nil. Called with the lock held.
func (s *Server) document(path string) doc {
	if id, ok := strings.CutPrefix(path, sessionsPath+"/"); ok {
		if _, open := s.sessions[id]; open {
			return session(id, s.cfg.Username)
		}
		return nil
	}
	return s.tree()[path]
}

// tree is every resource but the sessions, by path, as the machines are now.
func (s *Server) tree() map[string]doc {
	l := s.lay
	t := map[string]doc{}
	add := func(d doc) { t[d["@odata.id"].(string)] = d }
	systems := make([]string, len(s.machines))
	for i, m := range s.machines {
		systems[i] = m.path
	}
	add(collection(root+"/Systems", "ComputerSystem", systems...))
	add(collection(root+"/Chassis", "Chassis", l.chassis))
	add(collection(root+"/Managers", "Manager", l.manager))
	add(doc{
		"@odata.id": l.chassis, "@odata.type": "#Chassis.v1_21_0.Chassis", "Id": lastSegment(l.chassis), "Name": "Chassis",
		"ChassisType": "RackMount", "Manufacturer": s.cfg.Manufacturer, "Model": s.cfg.Model,
		"SerialNumber": s.cfg.SerialNumber, "PartNumber": s.cfg.Model + "-CH", "PowerState": s.machines[0].power,
		"Status": healthy,
		"Links":  doc{"ComputerSystems": links(systems), "ManagedBy": []doc{link(l.manager)}},
	})
	add(doc{
		"@odata.id": l.manager, "@odata.type": "#Manager.v1_15_0.Manager", "Id": lastSegment(l.manager), "Name": "BMC",
		"ManagerType": "BMC", "Description": "Simulated baseboard management controller",
		"FirmwareVersion": s.cfg.BMCFirmware, "Model": s.cfg.Model + "-BMC", "Status": healthy,
		"Links": doc{"ManagerForServers": links(systems), "ManagerForChassis": []doc{link(l.chassis)}},
	})
	if !s.cfg.BasicOnly {
		add(doc{
			"@odata.id": root + "/SessionService", "@odata.type": "#SessionService.v1_1_8.SessionService",
			"Id": "SessionService", "Name": "Session Service", "ServiceEnabled": true,
			"SessionTimeout": 1800, "Sessions": link(sessionsPath),
		})
		ids := make([]string, 0, len(s.sessions))
		for id := range s.sessions {
			ids = append(ids, sessionsPath+"/"+id)
		}
		add(collection(sessionsPath, "Session", ids...))
	}
	for _, m := range s.machines {
		s.addSystem(add, m)
	}
	return t
}

func links(paths []string) []doc {
	out := make([]doc, len(paths))
	for i, p := range paths {
		out[i] = link(p)
	}
	return out
}

// addSystem adds one machine's ComputerSystem and its inventory.
func (s *Server) addSystem(add func(doc), m *machine) {
	l := s.lay
	sysPath := m.path
	add(s.system(m))
	var procs, dimms, nics []string
	for i := 1; i <= s.cfg.CPUs; i++ {
		id := fmt.Sprintf("CPU%d", i)
		if l.kind == LayoutNamed {
			id = fmt.Sprintf("socket-%d", i-1)
		}
		d := doc{
			"@odata.id": sysPath + "/Processors/" + id, "@odata.type": "#Processor.v1_18_0.Processor", "Id": id,
			"Name": fmt.Sprintf("Processor %d", i), "Socket": fmt.Sprintf("CPU %d", i),
			"ProcessorType": "CPU", "ProcessorArchitecture": "x86", "InstructionSet": "x86-64",
			"Manufacturer": "Intel(R) Corporation", "Model": cpuModel,
			"MaxSpeedMHz": 3200, "TotalCores": s.cfg.CoresPerCPU, "TotalThreads": 2 * s.cfg.CoresPerCPU,
			"Status": healthy,
		}
		add(d)
		procs = append(procs, d["@odata.id"].(string))
	}
	if l.kind == LayoutNamed {
		d := doc{
			"@odata.id": sysPath + "/Processors/gpu-0", "@odata.type": "#Processor.v1_18_0.Processor", "Id": "gpu-0",
			"Name": "Accelerator", "ProcessorType": "GPU", "Manufacturer": "Simulated", "Model": "SIM-GPU",
			"TotalCores": 4096, "Status": healthy,
		}
		add(d)
		procs = append(procs, d["@odata.id"].(string))
	}
	for i := 1; i <= s.cfg.DIMMs; i++ {
		id := fmt.Sprintf("DIMM%d", i)
		if l.kind == LayoutNamed {
			id = fmt.Sprintf("dimm-%c%d", 'a'+rune((i-1)/2), (i-1)%2)
		}
		d := doc{
			"@odata.id": sysPath + "/Memory/" + id, "@odata.type": "#Memory.v1_17_0.Memory", "Id": id,
			"Name": "DIMM " + id, "MemoryType": "DRAM", "MemoryDeviceType": "DDR4",
			"OperatingSpeedMhz": 3200, "Manufacturer": "Samsung", "SerialNumber": fmt.Sprintf("DIMM%04d", i),
			"PartNumber": "M393A4K40DB3-CWE", "Status": healthy,
		}
		if l.kind == LayoutNamed {
			d["VolatileSizeMiB"] = s.cfg.DIMMSizeMiB
		} else {
			d["CapacityMiB"] = s.cfg.DIMMSizeMiB
		}
		add(d)
		dimms = append(dimms, d["@odata.id"].(string))
	}
	if l.kind == LayoutNamed {
		d := doc{
			"@odata.id": sysPath + "/Memory/dimm-empty", "@odata.type": "#Memory.v1_17_0.Memory", "Id": "dimm-empty",
			"Name": "Empty slot", "Status": doc{"State": "Absent"},
		}
		add(d)
		dimms = append(dimms, d["@odata.id"].(string))
	}
	nicCount := 1
	if l.kind == LayoutNamed {
		nicCount = 2
	}
	for i := 1; i <= nicCount; i++ {
		id := fmt.Sprintf("NIC%d", i)
		if l.kind == LayoutNamed {
			id = fmt.Sprintf("eth%d", i-1)
		}
		d := doc{
			"@odata.id": sysPath + "/EthernetInterfaces/" + id, "@odata.type": "#EthernetInterface.v1_9_0.EthernetInterface",
			"Id": id, "Name": "NIC " + id, "MACAddress": fmt.Sprintf("02:00:00:00:00:%02x", i), "SpeedMbps": 25000,
			"LinkStatus": "LinkUp", "Status": healthy,
		}
		add(d)
		nics = append(nics, d["@odata.id"].(string))
	}
	add(collection(sysPath+"/Processors", "Processor", procs...))
	add(collection(sysPath+"/Memory", "Memory", dimms...))
	add(collection(sysPath+"/EthernetInterfaces", "EthernetInterface", nics...))

	if l.kind == LayoutNamed {
		ctrl := sysPath + "/Storage/raid-0"
		var drives []doc
		for i := 0; i < s.cfg.Drives; i++ {
			p := fmt.Sprintf("%s/Drives/disk-%d", ctrl, i)
			add(doc{
				"@odata.id": p, "@odata.type": "#Drive.v1_17_0.Drive", "Id": fmt.Sprintf("disk-%d", i),
				"Name": fmt.Sprintf("Disk %d", i), "MediaType": "SSD", "CapacityBytes": s.cfg.DriveSizeBytes,
				"Model": "SIM-NVME", "SerialNumber": fmt.Sprintf("DRV%04d", i), "Status": healthy,
			})
			drives = append(drives, link(p))
		}
		add(doc{
			"@odata.id": ctrl, "@odata.type": "#Storage.v1_15_0.Storage", "Id": "raid-0", "Name": "RAID controller",
			"Drives": drives, "Drives@odata.count": len(drives), "Status": healthy,
		})
		add(collection(sysPath+"/Storage", "Storage", ctrl))
	} else {
		devs := make([]doc, s.cfg.Drives)
		for i := range devs {
			devs[i] = doc{"Name": fmt.Sprintf("Disk %d", i), "Model": "SIM-SATA", "CapacityBytes": s.cfg.DriveSizeBytes, "Status": healthy}
		}
		add(doc{
			"@odata.id": sysPath + "/SimpleStorage/1", "@odata.type": "#SimpleStorage.v1_3_0.SimpleStorage", "Id": "1",
			"Name": "Onboard SATA", "Devices": devs, "Status": healthy,
		})
		add(collection(sysPath+"/SimpleStorage", "SimpleStorage", sysPath+"/SimpleStorage/1"))
	}
}

const cpuModel = "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"

func lastSegment(p string) string { return p[strings.LastIndex(p, "/")+1:] }

func (s *Server) serviceRoot() doc {
	d := doc{
		"@odata.id": root + "/", "@odata.type": "#ServiceRoot.v1_15_0.ServiceRoot",
		"Id": "RootService", "Name": "Root Service", "RedfishVersion": "1.15.0",
		"UUID":    "8f1c6f2e-0000-4000-8000-000000000001",
		"Systems": link(root + "/Systems"), "Chassis": link(root + "/Chassis"),
		"Managers": link(root + "/Managers"),
	}
	if !s.cfg.BasicOnly {
		d["SessionService"] = link(root + "/SessionService")
		d["Links"] = doc{"Sessions": link(sessionsPath)}
	}
	return d
}

func (s *Server) system(m *machine) doc {
	l := s.lay
	storage := doc{"SimpleStorage": link(m.path + "/SimpleStorage")}
	if l.kind == LayoutNamed {
		storage = doc{"Storage": link(m.path + "/Storage")}
	}
	d := doc{
		"@odata.id": m.path, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
		"Id": m.id, "Name": m.name, "SystemType": "Physical",
		"Manufacturer": s.cfg.Manufacturer, "Model": s.cfg.Model, "SerialNumber": m.serial,
		"SKU": s.cfg.Model + "-SKU", "UUID": "8f1c6f2e-0000-4000-8000-000000000002",
		"BiosVersion": s.cfg.BIOSVersion, "PowerState": m.power, "Status": healthy,
		"ProcessorSummary": doc{
			"Count": s.cfg.CPUs, "CoreCount": s.cfg.CPUs * s.cfg.CoresPerCPU,
			"Model": cpuModel, "Status": healthy,
		},
		"MemorySummary": doc{"TotalSystemMemoryGiB": s.cfg.DIMMs * s.cfg.DIMMSizeMiB / 1024, "Status": healthy},
		"Boot": doc{
			"BootSourceOverrideTarget":                         m.boot.target,
			"BootSourceOverrideEnabled":                        m.boot.enabled,
			"BootSourceOverrideMode":                           m.boot.mode,
			"BootSourceOverrideTarget@Redfish.AllowableValues": bootTargets,
		},
		"Processors":         link(m.path + "/Processors"),
		"Memory":             link(m.path + "/Memory"),
		"EthernetInterfaces": link(m.path + "/EthernetInterfaces"),
		"Links":              doc{"Chassis": []doc{link(l.chassis)}, "ManagedBy": []doc{link(l.manager)}},
		"Actions": doc{"#ComputerSystem.Reset": doc{
			"target":                            m.path + "/Actions/ComputerSystem.Reset",
			"ResetType@Redfish.AllowableValues": resetTypes,
		}},
	}
	for k, v := range storage {
		d[k] = v
	}
	return d
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
