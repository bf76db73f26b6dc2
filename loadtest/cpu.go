package loadtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Process names processes whose CPU time a run measures (the app instances, Redis, nginx), so that a
// report can say what one request costs each tier per core.
type Process struct {
	Name string
	PIDs []int
}

// CPUUse is the CPU time the processes of one name used while the requests were fired.
type CPUUse struct {
	Name    string
	Seconds float64
}

// ParseProcesses reads "name=pid,pid;name=pid" (the load tool's -cpu flag).
func ParseProcesses(s string) ([]Process, error) {
	var out []Process
	for _, part := range strings.Split(s, ";") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, pids, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("-cpu: %q is not name=pid,pid", part)
		}
		p := Process{Name: name}
		for _, f := range strings.Split(pids, ",") {
			pid, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || pid <= 0 {
				return nil, fmt.Errorf("-cpu: %q is not a process id", f)
			}
			p.PIDs = append(p.PIDs, pid)
		}
		out = append(out, p)
	}
	return out, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux this runs on.
const clockTicks = 100

// cpuSeconds answers the user and system CPU time a process has used, from /proc/PID/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: count fields after its end.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64) // field 14
	stime, err2 := strconv.ParseFloat(f[12], 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	return (utime + stime) / clockTicks, nil
}

// sampleCPU answers each process's CPU seconds so far, by pid; a process that is gone is left out.
func sampleCPU(ps []Process) map[int]float64 {
	out := map[int]float64{}
	for _, p := range ps {
		for _, pid := range p.PIDs {
			if s, err := cpuSeconds(pid); err == nil {
				out[pid] = s
			}
		}
	}
	return out
}

// MeasureCPU runs fn and answers the CPU each name's processes used meanwhile, in the order given. A
// process that started or ended meanwhile is not counted (its share of the window cannot be told).
func MeasureCPU(ps []Process, fn func()) []CPUUse { return measureCPU(ps, fn) }

func measureCPU(ps []Process, fn func()) []CPUUse {
	quiesce(ps, quietShare, quietWait)
	before := sampleCPU(ps)
	fn()
	return cpuUsed(ps, before, sampleCPU(ps))
}

// A measurement starts once the measured processes are quiet: a server refilling its captcha pool after
// the scenario before drained it, or a worker writing that scenario's orders, would otherwise charge its
// work to this scenario's requests. Quiet is under quietShare of a core each over quietWindow; a process
// that is never quiet within quietWait is measured all the same. Redis is left out (one server for the
// whole machine: others' work is not the server's).
const (
	quietShare  = 0.05
	quietWindow = 250 * time.Millisecond
	quietWait   = 30 * time.Second
)

// quiesce waits until every measured process but Redis uses under share of a core, or wait has passed.
func quiesce(ps []Process, share float64, wait time.Duration) {
	var watched []Process
	for _, p := range ps {
		if p.Name != "redis" {
			watched = append(watched, p)
		}
	}
	if len(watched) == 0 {
		return
	}
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		before := sampleCPU(watched)
		time.Sleep(quietWindow)
		after := sampleCPU(watched)
		quiet := true
		for pid, s := range after {
			if s-before[pid] > share*quietWindow.Seconds() {
				quiet = false
			}
		}
		if quiet {
			return
		}
	}
}

// cpuUsed answers the CPU each name's processes used between two samples.
func cpuUsed(ps []Process, before, after map[int]float64) []CPUUse {
	out := make([]CPUUse, 0, len(ps))
	for _, p := range ps {
		u := CPUUse{Name: p.Name}
		for _, pid := range p.PIDs {
			b, ok1 := before[pid]
			a, ok2 := after[pid]
			if ok1 && ok2 {
				u.Seconds += max(a-b, 0)
			}
		}
		out = append(out, u)
	}
	return out
}

// Named answers the processes named name, or none: the -cpu flag's names (app, worker, redis) say
// which tier each is.
func Named(ps []Process, name string) []Process {
	for _, p := range ps {
		if p.Name == name {
			return []Process{p}
		}
	}
	return nil
}

// secondsOf answers the CPU seconds the processes named name used, and whether they were measured.
func secondsOf(us []CPUUse, name string) (float64, bool) {
	for _, u := range us {
		if u.Name == name {
			return u.Seconds, true
		}
	}
	return 0, false
}
