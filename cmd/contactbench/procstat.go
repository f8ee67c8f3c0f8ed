package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, 100 on every Linux this runs on (utime and stime are in it).
const clockTicks = 100

// proc reads a process's CPU time and peak resident memory from /proc.
type proc struct{ pid int }

// cpuSeconds is user + system time so far.
func (p proc) cpuSeconds() (float64, error) {
	st, err := readStat(p.pid)
	return st.own, err
}

// stat is what cpuSeconds and clusterCPU need from /proc/PID/stat, in seconds.
type stat struct {
	ppid     int
	own      float64 // utime + stime
	children float64 // cutime + cstime: the children that exited and were waited for
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	// fields after the parenthesised command name: state is field 3, ppid 4, utime 14,
	// stime 15, cutime 16, cstime 17.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return stat{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	var v [4]float64
	for i := range v {
		if v[i], err = strconv.ParseFloat(f[11+i], 64); err != nil {
			return stat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
		}
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return stat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return stat{ppid: ppid, own: (v[0] + v[1]) / clockTicks, children: (v[2] + v[3]) / clockTicks}, nil
}

// clusterCPU is the CPU time so far of a PostgreSQL cluster: its postmaster, the postmaster's
// live children (backends, walwriter, ...) and the children that have exited.
func clusterCPU(postmaster int) (float64, error) {
	pm, err := readStat(postmaster)
	if err != nil {
		return 0, err
	}
	total := pm.own + pm.children
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == postmaster {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != postmaster {
			continue // gone since ReadDir, or not PostgreSQL's
		}
		total += st.own + st.children
	}
	return total, nil
}

// cpuUse is CPU time spent, in seconds, by the parts of a measurement: contactd,
// PostgreSQL (its whole cluster) and this tool (its load and its receiver).
type cpuUse struct {
	Contactd float64 `json:"contactd"`
	Postgres float64 `json:"postgres"`
	Tool     float64 `json:"tool"`
}

// cpuMeter reads cpuUse so far; contactd is nil where none runs.
type cpuMeter struct {
	contactd   *proc
	postmaster int
}

func (m cpuMeter) read() (cpuUse, error) {
	var u cpuUse
	var err error
	if m.contactd != nil {
		if u.Contactd, err = m.contactd.cpuSeconds(); err != nil {
			return u, err
		}
	}
	if u.Postgres, err = clusterCPU(m.postmaster); err != nil {
		return u, err
	}
	u.Tool, err = proc{os.Getpid()}.cpuSeconds()
	return u, err
}

// since is the CPU spent from start to u.
func (u cpuUse) since(start cpuUse) cpuUse {
	return cpuUse{Contactd: u.Contactd - start.Contactd, Postgres: u.Postgres - start.Postgres, Tool: u.Tool - start.Tool}
}

// resetPeakRSS starts a new peak-RSS measurement (Linux: "5" to clear_refs resets VmHWM).
func (p proc) resetPeakRSS() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid), []byte("5"), 0)
}

// peakRSSBytes is VmHWM: the most resident memory since start or the last reset.
func (p proc) peakRSSBytes() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", p.pid)
}
