package main

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Connections per event loop, read from outside. Every gnet event loop
// has an epoll instance of its own, and the kernel lists the files each
// epoll instance watches in /proc/PID/fdinfo/FD ("tfd:" lines, with each
// target's inode). Matching those inodes against the TCP sockets of
// /proc/net/tcp{,6} says how many established connections and listening
// sockets each loop holds: with reuse_port every loop has its own
// listener, without it the accepting reactor holds the only one.

// epollSet is what one epoll instance watches.
type epollSet struct {
	Listeners   int `json:"listeners"`   // TCP sockets in LISTEN state
	Established int `json:"established"` // TCP connections
}

// tcpStates maps socket inodes to their TCP state ("01" established,
// "0A" listen) from /proc/net/tcp-format text.
func tcpStates(text string, into map[uint64]string) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] == "sl" {
			continue
		}
		if ino, err := strconv.ParseUint(f[9], 10, 64); err == nil && ino != 0 {
			into[ino] = f[3]
		}
	}
}

// epollTargets returns the inodes an epoll instance's fdinfo lists.
func epollTargets(fdinfo string) []uint64 {
	var out []uint64
	for _, line := range strings.Split(fdinfo, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "tfd:") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "ino:"); ok {
				if ino, err := strconv.ParseUint(v, 16, 64); err == nil {
					out = append(out, ino)
				}
			}
		}
	}
	return out
}

// countSet classifies an epoll instance's targets by TCP state.
func countSet(targets []uint64, states map[uint64]string) epollSet {
	var s epollSet
	for _, ino := range targets {
		switch states[ino] {
		case "01":
			s.Established++
		case "0A":
			s.Listeners++
		}
	}
	return s
}

// readEpollSets returns, for every epoll instance of pid that watches at
// least one TCP socket, its listeners and connections, most connections
// first. It returns nil when /proc cannot tell.
func readEpollSets(pid int) []epollSet {
	states := map[uint64]string{}
	for _, f := range []string{"tcp", "tcp6"} {
		if b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "net", f)); err == nil {
			tcpStates(string(b), states)
		}
	}
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []epollSet
	for _, e := range ents {
		if link, err := os.Readlink(filepath.Join(dir, e.Name())); err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "fdinfo", e.Name()))
		if err != nil {
			continue
		}
		if s := countSet(epollTargets(string(b)), states); s.Listeners+s.Established > 0 {
			out = append(out, s)
		}
	}
	sortSets(out)
	return out
}

// sortSets orders epoll sets by connections, then listeners, descending.
func sortSets(sets []epollSet) {
	sort.SliceStable(sets, func(i, j int) bool {
		if sets[i].Established != sets[j].Established {
			return sets[i].Established > sets[j].Established
		}
		return sets[i].Listeners > sets[j].Listeners
	})
}

// loopConnections returns the connections of each of loops event loops
// from an epoll reading, most first. The accepting reactor (listener,
// no connections, when reuse_port is off) is left out; loops that watch
// no TCP socket at all do not appear in the reading and count zero.
func loopConnections(sets []epollSet, loops int, reusePort bool) []int {
	var out []int
	for _, s := range sets {
		if !reusePort && s.Listeners > 0 && s.Established == 0 {
			continue // the accepting reactor
		}
		out = append(out, s.Established)
	}
	for len(out) < loops {
		out = append(out, 0)
	}
	return out[:loops]
}
