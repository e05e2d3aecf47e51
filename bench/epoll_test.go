package main

import (
	"net"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestEpollParsing(t *testing.T) {
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:91F1 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2154822 1 0 100 0 0 10 0
   1: 0100007F:91F1 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2154897 1 0 20 4 30 10 -1
   2: 0100007F:91F1 0100007F:C351 01 00000000:00000000 00:00000000 00000000     0        0 2154898 1 0 20 4 30 10 -1
   3: 0100007F:91F1 0100007F:C352 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0
`
	states := map[uint64]string{}
	tcpStates(tcp, states)
	if len(states) != 3 || states[2154822] != "0A" || states[2154898] != "01" {
		t.Fatalf("states %v", states)
	}
	fdinfo := "pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t1038\n" +
		"tfd:        4 events:       1f data:                4  pos:0 ino:20e146 sdev:9\n" + // 2154822, the listener
		"tfd:        7 events:       19 data:                7  pos:0 ino:20e191 sdev:9\n" + // 2154897
		"tfd:        8 events:       19 data:                8  pos:0 ino:20e192 sdev:9\n" + // 2154898
		"tfd:        9 events:       19 data:                9  pos:0 ino:3f0 sdev:e\n" // an eventfd
	got := countSet(epollTargets(fdinfo), states)
	if got != (epollSet{Listeners: 1, Established: 2}) {
		t.Errorf("countSet %+v", got)
	}
	sets := []epollSet{{Listeners: 1}, {Established: 3}, {Listeners: 0, Established: 9}}
	sortSets(sets)
	if sets[0].Established != 9 || sets[2].Listeners != 1 {
		t.Errorf("sorted %v", sets)
	}
	// Without SO_REUSEPORT the accepting reactor is left out, and a loop
	// that watches no socket counts zero.
	if got := loopConnections(sets, 3, false); !reflect.DeepEqual(got, []int{9, 3, 0}) {
		t.Errorf("loops %v", got)
	}
	reuse := []epollSet{{Listeners: 1, Established: 40}, {Listeners: 1, Established: 24}}
	if got := loopConnections(reuse, 2, true); !reflect.DeepEqual(got, []int{40, 24}) {
		t.Errorf("reuse_port loops %v", got)
	}
}

// TestReadEpollSets reads this process's own epoll instance (the Go
// runtime's network poller) while it holds a listener and a connection.
func TestReadEpollSets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sets := readEpollSets(os.Getpid())
	if len(sets) == 0 || sets[0].Listeners < 1 || sets[0].Established < 2 {
		t.Fatalf("epoll sets %+v, want the poller with the listener and both ends of the connection", sets)
	}
}

func TestBalanceTable(t *testing.T) {
	res := sweepRun(3, nil, map[string][][2]float64{
		baselineLabel:   {{100000, 6}, {100000, 6}, {100000, 6}},
		aaLabel:         {{100000, 6}, {100000, 6}, {100000, 6}},
		"event_loops=2": {{100000, 6}, {100000, 6}, {100000, 6}},
	})
	for i, m := range res.Measurements {
		if m.Label == "event_loops=2" {
			res.Measurements[i].EpollSets = []epollSet{{Listeners: 1, Established: 38 + m.Round}, {Listeners: 1, Established: 26 - m.Round}}
		}
	}
	md := renderMarkdown(res)
	if !strings.Contains(md, "| event_loops=2 | 2 | kernel (SO_REUSEPORT) | — | — | — | 40 / 24 | — (needs lock_os_thread: true) |") {
		t.Errorf("balance table missing or wrong:\n%s", md)
	}
	// gale's own counters: medians per rank over rounds, the accepted
	// connections of the same loops, and a round in which the second loop
	// took nothing (it is absent from gale's metrics) counts it as zero.
	for i, m := range res.Measurements {
		if m.Label != "event_loops=2" {
			continue
		}
		runs := [][]loopRun{
			{{Loop: "1", Requests: 6000, Accepted: 40, Share: 0.6}, {Loop: "0", Requests: 4000, Accepted: 24, Share: 0.4}},
			{{Loop: "0", Requests: 5500, Accepted: 30, Share: 0.55}, {Loop: "1", Requests: 4500, Accepted: 34, Share: 0.45}},
			{{Loop: "0", Requests: 9000, Accepted: 64, Share: 1}},
		}
		res.Measurements[i].Loops = runs[m.Round-1]
	}
	md = renderMarkdown(res)
	if !strings.Contains(md, "| event_loops=2 | 2 | kernel (SO_REUSEPORT) | 6,000 / 4,000 | 60% / 40% | 40 / 24 | 40 / 24 | — (needs lock_os_thread: true) |") {
		t.Errorf("balance table from gale's counters missing or wrong:\n%s", md)
	}
}
