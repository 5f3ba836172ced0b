// Package ipmisim runs OpenIPMI's ipmi_sim for tests: one BMC on a loopback UDP port, with one
// admin user, a FRU 0 describing the machine (Contoso IPMI-7, serial SN-IPMI-1), sensor data
// records naming two processors and three DIMMs, and a chassis-control script that records
// every power and boot-device change the BMC makes (files "power", "boot", "boots" and
// "chassis.log" in Dir). Tool is an ipmitool wrapper that records each command it is given
// ("commands.log") before running the real one. It needs the Debian packages openipmi and
// ipmitool (Require).
package ipmisim

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Sim is one running ipmi_sim; it stops when the test ends.
type Sim struct {
	// Dir holds the simulator's files and what it records.
	Dir string
	// Port is the BMC's UDP port on 127.0.0.1.
	Port int
	// Tool is the recording ipmitool wrapper.
	Tool string
}

// The BMC's one account.
const User, Password = "admin", "ipmi-Pa55-sim"

// Require skips without ipmi_sim and ipmitool, except in CI (env CI set), where they are
// installed by .ci/run and their absence is a failure.
func Require(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"ipmi_sim", "ipmitool"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed (Debian packages openipmi and ipmitool); CI must run the IPMI tests", bin)
			}
			t.Skipf("%s is not installed (Debian packages openipmi and ipmitool)", bin)
		}
	}
}

// FreeUDPPort is a loopback UDP port nothing listens on (at the time of asking).
func FreeUDPPort(t testing.TB) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// fruArea builds one FRU info area (board or product): the fields as 8-bit ASCII, the end
// marker, padding to 8 bytes and the zero checksum.
func fruArea(head []byte, fields ...string) []byte {
	a := append([]byte{}, head...)
	for _, f := range fields {
		a = append(a, 0xC0|byte(len(f)))
		a = append(a, f...)
	}
	a = append(a, 0xC1)
	for (len(a)+1)%8 != 0 {
		a = append(a, 0)
	}
	a[1] = byte((len(a) + 1) / 8)
	return append(a, checksum(a))
}

func checksum(b []byte) byte {
	var sum byte
	for _, c := range b {
		sum += c
	}
	return -sum
}

// fruImage is FRU 0: a common header, a board area and a product area.
func fruImage(vendor, product, serial string) []byte {
	board := fruArea([]byte{0x01, 0, 0x00, 0, 0, 0}, vendor, product+"-MB", "B"+serial, "PN-1", "")
	prod := fruArea([]byte{0x01, 0, 0x00}, vendor, product, "M-"+product, "1.0", serial, "", "")
	hdr := []byte{0x01, 0, 0, 1, byte(1 + len(board)/8), 0, 0}
	hdr = append(hdr, checksum(hdr))
	return append(append(hdr, board...), prod...)
}

// compactSDR is a compact sensor record (type 02h) for one entity instance.
func compactSDR(sensor, entity, instance, sensorType byte, name string) []byte {
	r := []byte{0x00, 0x00, 0x51, 0x02, 0, 0x20, 0x00, sensor, entity, instance, 0x67, 0x40, sensorType, 0x6f,
		0x80, 0x00, 0x80, 0x00, 0x80, 0x00, 0xc0, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xC0 | byte(len(name))}
	r = append(r, name...)
	r[4] = byte(len(r) - 5)
	return r
}

func hexBytes(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("0x%02x", c)
	}
	return strings.Join(parts, " ")
}

// Options vary the simulated BMC.
type Options struct {
	// NoFRU leaves FRU 0 without data, as many BMCs ship: "fru print 0" fails.
	NoFRU bool
}

// Start writes lan.conf, sim.emu and the chassis script into a fresh directory, starts
// ipmi_sim and waits until it answers.
func Start(t testing.TB) *Sim { t.Helper(); return StartWith(t, Options{}) }

// StartWith is Start with options.
func StartWith(t testing.TB, o Options) *Sim {
	t.Helper()
	Require(t)
	dir := t.TempDir()
	s := &Sim{Dir: dir, Port: FreeUDPPort(t)}
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The chassis control program ipmi_sim runs: "<script> <mc> get|set <parm> [<value>]...".
	chassis := write("chassis.sh", `#!/bin/sh
dir=$(dirname "$0")
mc=$1; op=$2; shift 2
case $op in
get)
  for p in "$@"; do
    case $p in
      power) echo "power:$(cat "$dir/power" 2>/dev/null || echo 0)";;
      boot) echo "boot:$(cat "$dir/boot" 2>/dev/null || echo default)";;
    esac
  done;;
set)
  while [ $# -gt 1 ]; do
    case $1 in
      power)
        if [ "$2" = 1 ] && [ "$(cat "$dir/power" 2>/dev/null || echo 0)" = 0 ]; then
          echo "$(cat "$dir/boot" 2>/dev/null || echo default)" >> "$dir/boots"
        fi
        echo "$2" > "$dir/power"; echo "power $2" >> "$dir/chassis.log";;
      boot) echo "$2" > "$dir/boot"; echo "boot $2" >> "$dir/chassis.log";;
    esac
    shift 2
  done;;
esac
exit 0
`, 0o755)
	lan := write("lan.conf", fmt.Sprintf(`name "bcsim"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 %d
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  chassis_control "%s 0x20"
  user 2 true "%s" "%s" admin 10 none md2 md5 straight
`, s.Port, chassis, User, Password), 0o600)
	fru := fruImage("Contoso", "IPMI-7", "SN-IPMI-1")
	var emu strings.Builder
	fmt.Fprintf(&emu, "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\n")
	if !o.NoFRU {
		fmt.Fprintf(&emu, "mc_add_fru_data 0x20 0 0x%x data %s\n", len(fru), hexBytes(fru))
	}
	for i, e := range []struct {
		entity, instance, typ byte
		name                  string
	}{{3, 1, 0x07, "CPU1 Status"}, {3, 2, 0x07, "CPU2 Status"}, {32, 1, 0x0c, "DIMM A1"}, {32, 2, 0x0c, "DIMM A2"}, {32, 3, 0x0c, "DIMM B1"}} {
		fmt.Fprintf(&emu, "main_sdr_add 0x20 %s\n", hexBytes(compactSDR(byte(i+1), e.entity, e.instance, e.typ, e.name)))
		fmt.Fprintf(&emu, "sensor_add 0x20 0 %d 0x%02x 0x6f\n", i+1, e.typ)
	}
	emu.WriteString("mc_enable 0x20\n")
	emuPath := write("sim.emu", emu.String(), 0o600)
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ipmi_sim", "-c", lan, "-f", emuPath, "-s", state, "-n")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatalf("ipmi_sim: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })

	real, _ := exec.LookPath("ipmitool")
	// The wrapper records the command, then waits while a hold (see Hold) names it: the command
	// is then on its way but has not reached the BMC.
	s.Tool = write("ipmitool", fmt.Sprintf(`#!/bin/sh
dir=%q
echo "$*" >> "$dir/commands.log"
if [ -s "$dir/hold" ] && case "$*" in *"$(cat "$dir/hold")"*) true;; *) false;; esac; then
  touch "$dir/held"
  while [ -s "$dir/hold" ]; do sleep 0.02; done
fi
exec %q "$@"
`, dir, real), 0o755)
	// Wait for the simulator to answer (it reads its files after the process starts).
	for i := 0; ; i++ {
		out, err := exec.Command(real, "-I", "lanplus", "-H", "127.0.0.1", "-p", fmt.Sprint(s.Port), "-U", User,
			"-P", Password, "-C", "3", "-N", "1", "-R", "1", "chassis", "power", "status").CombinedOutput()
		if err == nil {
			break
		}
		if i == 30 {
			t.Fatalf("ipmi_sim does not answer: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return s
}

// Lines are the non-empty lines of one of the simulator's files.
func (s *Sim) Lines(name string) []string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, name))
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// File is one of the simulator's files, trimmed ("power": "1" on, "0" off; "boot").
func (s *Sim) File(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, name))
	return strings.TrimSpace(string(b))
}

// Commands are the ipmitool commands sent through Tool, without the connection options. A
// line with the password on it, or with other than exactly one cipher suite, fails the test.
func (s *Sim) Commands(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, l := range s.Lines("commands.log") {
		if strings.Contains(l, Password) {
			t.Errorf("the password is on ipmitool's command line: %q", l)
		}
		if strings.Count(l, " -C ") != 1 {
			t.Errorf("not exactly one cipher suite: %q", l)
		}
		_, cmd, ok := strings.Cut(l, " -R 1 ")
		if !ok {
			t.Fatalf("unexpected ipmitool line %q", l)
		}
		out = append(out, cmd)
	}
	return out
}

// ResetLogs forgets what the simulator recorded so far (its state is kept).
func (s *Sim) ResetLogs() {
	for _, f := range []string{"commands.log", "chassis.log", "boots"} {
		_ = os.Remove(filepath.Join(s.Dir, f))
	}
}

// Hold makes the ipmitool wrapper stop every command whose arguments contain args before it
// reaches the BMC, until Release; Held says whether one has stopped there.
func (s *Sim) Hold(args string) {
	_ = os.WriteFile(filepath.Join(s.Dir, "hold"), []byte(args), 0o600)
}

// Held reports whether a command stopped at the hold.
func (s *Sim) Held() bool {
	_, err := os.Stat(filepath.Join(s.Dir, "held"))
	return err == nil
}

// Release lets held commands go on (a command whose ipmitool was stopped meanwhile never does).
func (s *Sim) Release() { _ = os.Remove(filepath.Join(s.Dir, "hold")) }

// SetPower sets the chassis's power.
func (s *Sim) SetPower(on bool) {
	v := "0"
	if on {
		v = "1"
	}
	_ = os.WriteFile(filepath.Join(s.Dir, "power"), []byte(v+"\n"), 0o600)
}
