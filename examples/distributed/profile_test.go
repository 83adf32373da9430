package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// profileLog reads the log after seq from, where a benchmark stored its
// tasks, and returns the commits per task: the store gives every event of
// one append transaction the same time, and times never decrease along
// seq, so each distinct time is one commit. It logs, for each step of a
// task (one event to the next), the p50 and p99 of the time between them.
func profileLog(tb testing.TB, st store.Store, from uint64) float64 {
	type step struct {
		t   time.Time
		typ protocol.Type
	}
	tasks := map[string][]step{}
	commits := map[time.Time]bool{}
	events := 0
	for ev, err := range st.Read(context.Background(), store.Query{AfterSeq: from}) {
		if err != nil {
			tb.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			continue
		}
		events++
		commits[ev.Time] = true
		tasks[m.TaskID] = append(tasks[m.TaskID], step{ev.Time, m.Type})
	}
	gaps := map[string][]time.Duration{}
	for id, s := range tasks {
		if s[0].typ != protocol.TypeTaskRequest {
			delete(tasks, id) // heartbeats and the registry's events
			continue
		}
		for i := 1; i < len(s); i++ {
			k := fmt.Sprintf("%02d %s -> %s", i, s[i-1].typ, s[i].typ)
			gaps[k] = append(gaps[k], s[i].t.Sub(s[i-1].t))
		}
		gaps["total"] = append(gaps["total"], s[len(s)-1].t.Sub(s[0].t))
	}
	if len(tasks) == 0 {
		return 0
	}
	tb.Logf("%d events, %d commits, %d tasks", events, len(commits), len(tasks))
	for _, k := range slices.Sorted(maps.Keys(gaps)) {
		g := gaps[k]
		slices.Sort(g)
		p := func(q int) time.Duration { return g[max(0, (len(g)*q+99)/100-1)].Round(10 * time.Microsecond) }
		tb.Logf("%-62s p50 %8v  p99 %8v", k, p(50), p(99))
	}
	return float64(len(commits)) / float64(len(tasks))
}

// procCPU returns the CPU time pid used, with its children's that ended;
// with kids, also the time of its live children (a postmaster's
// backends). Zero where /proc cannot be read.
func procCPU(pid int, kids bool) time.Duration {
	stat := func(p string) []string {
		b, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			return nil
		}
		s := string(b)
		return strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	}
	ticks := func(f []string) (t int64) {
		for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
			if i < len(f) {
				v, _ := strconv.ParseInt(f[i], 10, 64)
				t += v
			}
		}
		return t
	}
	t := ticks(stat(strconv.Itoa(pid)))
	if kids {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if f := stat(e.Name()); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				t += ticks(f)
			}
		}
	}
	return time.Duration(t) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// postmasterPID reads the pid of the server of the cluster in dir.
func postmasterPID(dir string) int {
	b, _ := os.ReadFile(dir + "/data/postmaster.pid")
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return pid
}
