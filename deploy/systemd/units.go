// Package systemd holds the router's systemd units (the socket-activated service and its two
// sockets) and checks them: Check reads the contract the router relies on out of the unit files,
// the tests run systemd-analyze over them.
package systemd

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Units are the unit files shipped beside this file.
//
//go:embed anvil-router.service anvil-router.socket anvil-router-metrics.socket anvil-router.service.d/metrics.conf
var Units embed.FS

// The unit names and the socket names the router takes (router/listen's APIName and MetricsName).
const (
	ServiceUnit       = "anvil-router.service"
	APISocketUnit     = "anvil-router.socket"
	MetricsSocketUnit = "anvil-router-metrics.socket"
	MetricsDropIn     = "anvil-router.service.d/metrics.conf" // adds the metrics socket to the service
	APIName           = "anvil-api"
	MetricsName       = "anvil-metrics"
	// defaultShutdownGrace is the router's shutdown_grace default: a stop must wait longer.
	defaultShutdownGrace = 30 * time.Second
)

// Unit is a parsed unit file: each section's settings in file order, every value of a repeated key.
type Unit map[string]map[string][]string

// Parse reads a unit file: [Section] headers, Key=Value lines, # and ; comments, blank lines. A
// backslash line continuation is refused: the shipped units do not use one.
func Parse(b []byte) (Unit, error) {
	u := Unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case strings.HasSuffix(line, `\`):
			return nil, fmt.Errorf("line %d: continuation lines are not supported", n)
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("line %d: not a setting in a section", n)
			}
			k = strings.TrimSpace(k)
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	return u, sc.Err()
}

// Get is the last value of key in section ("" when unset), as systemd reads a single-valued key.
func (u Unit) Get(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// Names are the files Check reads, as units' keys: the units and the metrics drop-in.
func Names() []string { return []string{ServiceUnit, APISocketUnit, MetricsSocketUnit, MetricsDropIn} }

// Check returns every way the units break the contract the router relies on: each socket named
// for router/listen and with a backlog; the service taking the front door socket (and, through the
// drop-in, the metrics socket), reloading with SIGHUP, waiting past the shutdown grace, and running
// hardened. units maps each of Names to its file.
func Check(units map[string][]byte) []string {
	var problems []string
	bad := func(unit, format string, args ...any) {
		problems = append(problems, unit+": "+fmt.Sprintf(format, args...))
	}
	parsed := map[string]Unit{}
	for _, name := range Names() {
		b, ok := units[name]
		if !ok {
			bad(name, "missing")
			continue
		}
		u, err := Parse(b)
		if err != nil {
			bad(name, "%v", err)
			continue
		}
		parsed[name] = u
	}
	for name, want := range map[string]string{APISocketUnit: APIName, MetricsSocketUnit: MetricsName} {
		u, ok := parsed[name]
		if !ok {
			continue
		}
		if got := u.Get("Socket", "FileDescriptorName"); got != want {
			bad(name, "FileDescriptorName=%q, want %q: the router takes its sockets by name", got, want)
		}
		if len(u["Socket"]["ListenStream"]) == 0 {
			bad(name, "no ListenStream=")
		}
		if u.Get("Socket", "Backlog") == "" {
			bad(name, "no Backlog=: connections that arrive during a restart wait in it")
		}
		if a := u.Get("Socket", "Accept"); a != "" && a != "no" && a != "false" {
			bad(name, "Accept=%s: the router takes the listening socket, not one per connection", a)
		}
		if s := u.Get("Socket", "Service"); s != ServiceUnit {
			bad(name, "Service=%q, want %q", s, ServiceUnit)
		}
	}
	if d, ok := parsed[MetricsDropIn]; ok && !slices.Contains(strings.Fields(strings.Join(d["Service"]["Sockets"], " ")), MetricsSocketUnit) {
		bad(MetricsDropIn, "Sockets= does not name %s: the metrics socket would start the service but never reach it", MetricsSocketUnit)
	}
	if s, ok := parsed[ServiceUnit]; ok {
		checkService(s, func(format string, args ...any) { bad(ServiceUnit, format, args...) })
	}
	slices.Sort(problems) // the map walk above has no order
	return problems
}

// hardening is the service settings that must hold exactly these values.
func hardening() [][2]string {
	return [][2]string{
		{"NoNewPrivileges", "yes"}, {"ProtectSystem", "strict"}, {"ProtectHome", "yes"}, {"PrivateTmp", "yes"},
		{"PrivateDevices", "yes"}, {"CapabilityBoundingSet", ""}, {"RestrictSUIDSGID", "yes"},
		{"ProtectKernelTunables", "yes"}, {"ProtectKernelModules", "yes"}, {"ProtectControlGroups", "yes"},
		{"MemoryDenyWriteExecute", "yes"}, {"SystemCallArchitectures", "native"},
	}
}

func checkService(s Unit, bad func(string, ...any)) {
	sockets := strings.Fields(strings.Join(s["Service"]["Sockets"], " "))
	if !slices.Contains(sockets, APISocketUnit) {
		bad("Sockets= does not name %s", APISocketUnit)
	}
	if !slices.Contains(strings.Fields(strings.Join(s["Unit"]["Requires"], " ")), APISocketUnit) {
		bad("Requires= does not name %s", APISocketUnit)
	}
	if t := s.Get("Service", "Type"); t != "simple" && t != "exec" {
		bad("Type=%s: the router sends no readiness notification", t)
	}
	exec := strings.Fields(s.Get("Service", "ExecStart"))
	if len(exec) < 4 || exec[1] != "serve" || exec[2] != "--config" {
		bad("ExecStart=%q does not run `anvil-router serve --config FILE`", s.Get("Service", "ExecStart"))
	}
	if r := s.Get("Service", "ExecReload"); !strings.Contains(r, "-HUP") || !strings.Contains(r, "$MAINPID") {
		bad("ExecReload=%q does not send SIGHUP to the router", r)
	}
	if k := s.Get("Service", "KillSignal"); k != "" && k != "SIGTERM" {
		bad("KillSignal=%s: the graceful shutdown starts on SIGTERM", k)
	}
	stop, err := time.ParseDuration(s.Get("Service", "TimeoutStopSec"))
	if err != nil || stop <= defaultShutdownGrace {
		bad("TimeoutStopSec=%q must be a duration longer than the shutdown grace (%s)", s.Get("Service", "TimeoutStopSec"), defaultShutdownGrace)
	}
	if s.Get("Service", "User") == "" && s.Get("Service", "DynamicUser") != "yes" {
		bad("runs as root: set User=")
	}
	for _, h := range hardening() {
		if vs, ok := s["Service"][h[0]]; !ok || vs[len(vs)-1] != h[1] {
			bad("%s= must be %q", h[0], h[1])
		}
	}
}
