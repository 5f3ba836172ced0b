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

// document returns the resource at path, or nil. Called with the lock held.
func (s *Server) document(path string) doc {
	switch path {
	case root + "/Systems":
		return collection(path, "ComputerSystem", systemPath)
	case systemPath:
		return s.system()
	case systemPath + "/Processors":
		return collection(path, "Processor", s.members(path, "CPU", s.cfg.CPUs)...)
	case systemPath + "/Memory":
		return collection(path, "Memory", s.members(path, "DIMM", s.cfg.DIMMs)...)
	case systemPath + "/EthernetInterfaces":
		return collection(path, "EthernetInterface", path+"/NIC1")
	case systemPath + "/EthernetInterfaces/NIC1":
		return doc{
			"@odata.id": path, "@odata.type": "#EthernetInterface.v1_9_0.EthernetInterface",
			"Id": "NIC1", "Name": "NIC 1", "MACAddress": "02:00:00:00:00:01", "SpeedMbps": 25000,
			"LinkStatus": "LinkUp", "Status": healthy,
		}
	case root + "/Chassis":
		return collection(path, "Chassis", chassisPath)
	case chassisPath:
		return doc{
			"@odata.id": path, "@odata.type": "#Chassis.v1_21_0.Chassis", "Id": "1", "Name": "Chassis",
			"ChassisType": "RackMount", "Manufacturer": s.cfg.Manufacturer, "Model": s.cfg.Model,
			"SerialNumber": s.cfg.SerialNumber, "PartNumber": s.cfg.Model + "-CH", "PowerState": s.power,
			"Status": healthy,
			"Links":  doc{"ComputerSystems": []doc{link(systemPath)}, "ManagedBy": []doc{link(managerPath)}},
		}
	case root + "/Managers":
		return collection(path, "Manager", managerPath)
	case managerPath:
		return doc{
			"@odata.id": path, "@odata.type": "#Manager.v1_15_0.Manager", "Id": "1", "Name": "BMC",
			"ManagerType": "BMC", "Description": "Simulated baseboard management controller",
			"FirmwareVersion": s.cfg.BMCFirmware, "Model": s.cfg.Model + "-BMC", "Status": healthy,
			"Links": doc{"ManagerForServers": []doc{link(systemPath)}, "ManagerForChassis": []doc{link(chassisPath)}},
		}
	case root + "/SessionService":
		return doc{
			"@odata.id": path, "@odata.type": "#SessionService.v1_1_8.SessionService",
			"Id": "SessionService", "Name": "Session Service", "ServiceEnabled": true,
			"SessionTimeout": 1800, "Sessions": link(sessionsPath),
		}
	case sessionsPath:
		ids := make([]string, 0, len(s.sessions))
		for id := range s.sessions {
			ids = append(ids, sessionsPath+"/"+id)
		}
		return collection(path, "Session", ids...)
	}
	if id, ok := strings.CutPrefix(path, sessionsPath+"/"); ok {
		if _, open := s.sessions[id]; open {
			return session(id, s.cfg.Username)
		}
		return nil
	}
	if n, ok := memberIndex(path, systemPath+"/Processors/CPU", s.cfg.CPUs); ok {
		return doc{
			"@odata.id": path, "@odata.type": "#Processor.v1_18_0.Processor", "Id": fmt.Sprintf("CPU%d", n),
			"Name": fmt.Sprintf("Processor %d", n), "Socket": fmt.Sprintf("CPU %d", n),
			"ProcessorType": "CPU", "ProcessorArchitecture": "x86", "InstructionSet": "x86-64",
			"Manufacturer": "Intel(R) Corporation", "Model": "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
			"MaxSpeedMHz": 3200, "TotalCores": s.cfg.CoresPerCPU, "TotalThreads": 2 * s.cfg.CoresPerCPU,
			"Status": healthy,
		}
	}
	if n, ok := memberIndex(path, systemPath+"/Memory/DIMM", s.cfg.DIMMs); ok {
		return doc{
			"@odata.id": path, "@odata.type": "#Memory.v1_17_0.Memory", "Id": fmt.Sprintf("DIMM%d", n),
			"Name": fmt.Sprintf("DIMM %d", n), "MemoryType": "DRAM", "MemoryDeviceType": "DDR4",
			"CapacityMiB": s.cfg.DIMMSizeMiB, "VolatileSizeMiB": s.cfg.DIMMSizeMiB,
			"OperatingSpeedMhz": 3200, "Manufacturer": "Samsung", "SerialNumber": fmt.Sprintf("DIMM%04d", n),
			"PartNumber": "M393A4K40DB3-CWE", "Status": healthy,
		}
	}
	return nil
}

func (s *Server) members(path, prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s/%s%d", path, prefix, i+1)
	}
	return out
}

func memberIndex(path, prefix string, n int) (int, bool) {
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		return 0, false
	}
	var i int
	if _, err := fmt.Sscanf(rest, "%d", &i); err != nil || fmt.Sprint(i) != rest || i < 1 || i > n {
		return 0, false
	}
	return i, true
}

func (s *Server) serviceRoot() doc {
	return doc{
		"@odata.id": root + "/", "@odata.type": "#ServiceRoot.v1_15_0.ServiceRoot",
		"Id": "RootService", "Name": "Root Service", "RedfishVersion": "1.15.0",
		"UUID":    "8f1c6f2e-0000-4000-8000-000000000001",
		"Systems": link(root + "/Systems"), "Chassis": link(root + "/Chassis"),
		"Managers": link(root + "/Managers"), "SessionService": link(root + "/SessionService"),
		"Links": doc{"Sessions": link(sessionsPath)},
	}
}

func (s *Server) system() doc {
	return doc{
		"@odata.id": systemPath, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
		"Id": "1", "Name": "System", "SystemType": "Physical",
		"Manufacturer": s.cfg.Manufacturer, "Model": s.cfg.Model, "SerialNumber": s.cfg.SerialNumber,
		"SKU": s.cfg.Model + "-SKU", "UUID": "8f1c6f2e-0000-4000-8000-000000000002",
		"BiosVersion": s.cfg.BIOSVersion, "PowerState": s.power, "Status": healthy,
		"ProcessorSummary": doc{
			"Count": s.cfg.CPUs, "CoreCount": s.cfg.CPUs * s.cfg.CoresPerCPU,
			"Model": "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", "Status": healthy,
		},
		"MemorySummary": doc{"TotalSystemMemoryGiB": s.cfg.DIMMs * s.cfg.DIMMSizeMiB / 1024, "Status": healthy},
		"Boot": doc{
			"BootSourceOverrideTarget":                         s.boot.target,
			"BootSourceOverrideEnabled":                        s.boot.enabled,
			"BootSourceOverrideMode":                           s.boot.mode,
			"BootSourceOverrideTarget@Redfish.AllowableValues": bootTargets,
		},
		"Processors":         link(systemPath + "/Processors"),
		"Memory":             link(systemPath + "/Memory"),
		"EthernetInterfaces": link(systemPath + "/EthernetInterfaces"),
		"Links":              doc{"Chassis": []doc{link(chassisPath)}, "ManagedBy": []doc{link(managerPath)}},
		"Actions": doc{"#ComputerSystem.Reset": doc{
			"target":                            resetPath,
			"ResetType@Redfish.AllowableValues": resetTypes,
		}},
	}
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
