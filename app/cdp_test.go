package app

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// A headless Chromium driven through the DevTools protocol (CDP) over its
// WebSocket: enough of it to load pages and watch their network traffic.

// chromiumPath returns Debian's Chromium, or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("headless Chromium: not in -short")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (Debian package chromium)")
	return ""
}

// cdpMsg is one CDP message: a command's reply (ID) or an event (Method).
type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// browser is a running headless Chromium and a CDP connection to it.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	ws      *websocket.Conn
	mu      sync.Mutex
	nextID  int
	replies map[int]chan cdpMsg
	events  chan cdpMsg // every event, in order; the reader stops when it is full
}

// startBrowser runs Chromium headless as this machine's documentation
// says (no sandbox as root, no GPU, nothing fetched from the network by
// itself, a new empty profile), with extra flags (--disable-quic, or
// QUIC forced on for an origin), and connects to its DevTools endpoint.
// Cleanup closes it and ends its process group.
func startBrowser(t *testing.T, extra ...string) *browser {
	t.Helper()
	path := chromiumPath(t)
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-breakpad", "--disable-crash-reporter",
		"--user-data-dir=" + t.TempDir(),
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"--remote-allow-origins=http://127.0.0.1",
	}, extra...)
	cmd := exec.Command(path, append(args, "about:blank")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers end with it
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	b := &browser{t: t, cmd: cmd, replies: map[int]chan cdpMsg{}, events: make(chan cdpMsg, 1<<14)}
	t.Cleanup(b.close)
	endpoint := make(chan string, 1)
	go func() { // the endpoint line, then drain stderr until Chromium exits
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case endpoint <- m[1]:
				default:
				}
			}
		}
		close(endpoint)
	}()
	var url string
	select {
	case u, ok := <-endpoint:
		if !ok {
			t.Fatal("chromium exited before its DevTools endpoint was up")
		}
		url = u
	case <-time.After(20 * time.Second):
		t.Fatal("chromium: no DevTools endpoint within 20s")
	}
	ws, err := websocket.Dial(url, "", "http://127.0.0.1")
	if err != nil {
		t.Fatalf("DevTools websocket: %v", err)
	}
	b.ws = ws
	go b.read()
	return b
}

// read delivers replies to their callers and queues events.
func (b *browser) read() {
	for {
		var m cdpMsg
		if err := websocket.JSON.Receive(b.ws, &m); err != nil {
			close(b.events)
			return
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.replies[m.ID]
			delete(b.replies, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		select {
		case b.events <- m:
		default:
			close(b.events) // a test that stops reading events: stop rather than block
			return
		}
	}
}

// call sends a command (to the browser, or to a page's session) and
// returns its result, failing the test on an error or after ten seconds.
func (b *browser) call(session, method string, params any) json.RawMessage {
	b.t.Helper()
	res, err := b.try(session, method, params)
	if err != nil {
		b.t.Fatalf("CDP %s: %v", method, err)
	}
	return res
}

func (b *browser) try(session, method string, params any) (json.RawMessage, error) {
	if params == nil {
		params = struct{}{}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan cdpMsg, 1)
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	b.replies[id] = ch
	b.mu.Unlock()
	if err := websocket.JSON.Send(b.ws, cdpMsg{ID: id, Method: method, SessionID: session, Params: raw}); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%d %s", m.Error.Code, m.Error.Message)
		}
		return m.Result, nil
	case <-time.After(10 * time.Second):
		return nil, errors.New("no reply within 10s")
	}
}

// openPage opens a blank tab and returns its session, with the Network
// and Page domains enabled.
func (b *browser) openPage() string {
	b.t.Helper()
	var target struct{ TargetID string }
	if err := json.Unmarshal(b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}), &target); err != nil {
		b.t.Fatal(err)
	}
	var att struct{ SessionID string }
	if err := json.Unmarshal(b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &att); err != nil {
		b.t.Fatal(err)
	}
	b.call(att.SessionID, "Network.enable", nil)
	b.call(att.SessionID, "Page.enable", nil)
	return att.SessionID
}

// pageResponse is what the page's network saw of one request.
type pageResponse struct {
	URL      string
	Status   int // the status that came over the wire (a revalidated navigation reports its cached 200 elsewhere)
	Protocol string
	Encoding string // the Content-Encoding of the response the page used
	Cached   bool   // served from Chromium's cache without a request
}

// load runs a command (a navigation or a reload) in session and returns
// the responses the page received until its load event, in order.
func (b *browser) load(session string, method string, params any) []pageResponse {
	b.t.Helper()
	b.drain()
	b.call(session, method, params)
	var out []pageResponse
	var ids []string
	cached := map[string]bool{}
	wire := map[string]int{} // requestId -> status on the wire (Network.responseReceivedExtraInfo)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-b.events:
			if !ok {
				b.t.Fatal("CDP connection lost")
			}
			if m.SessionID != session {
				continue
			}
			switch m.Method {
			case "Page.loadEventFired":
				for i, id := range ids {
					if s, ok := wire[id]; ok {
						out[i].Status = s
					}
				}
				return out
			case "Network.requestServedFromCache":
				var p struct{ RequestID string }
				_ = json.Unmarshal(m.Params, &p)
				cached[p.RequestID] = true
			case "Network.responseReceivedExtraInfo":
				var p struct {
					RequestID  string
					StatusCode int
				}
				_ = json.Unmarshal(m.Params, &p)
				wire[p.RequestID] = p.StatusCode
			case "Network.responseReceived":
				var p struct {
					RequestID string
					Response  struct {
						URL, Protocol string
						Status        int
						Headers       map[string]string
						FromDiskCache bool
					}
				}
				if err := json.Unmarshal(m.Params, &p); err != nil {
					b.t.Fatal(err)
				}
				r := pageResponse{URL: p.Response.URL, Status: p.Response.Status, Protocol: p.Response.Protocol,
					Cached: cached[p.RequestID] || p.Response.FromDiskCache}
				for k, v := range p.Response.Headers {
					if strings.EqualFold(k, "content-encoding") {
						r.Encoding = v
					}
				}
				out = append(out, r)
				ids = append(ids, p.RequestID)
			}
		case <-deadline:
			b.t.Fatalf("%s: no load event within 20s (%d responses)", method, len(out))
		}
	}
}

// drain drops the events queued so far.
func (b *browser) drain() {
	for {
		select {
		case _, ok := <-b.events:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// close asks Chromium to exit, waits for it at most five seconds, then
// ends what is left of its process group.
func (b *browser) close() {
	if b.ws != nil {
		_, _ = b.try("", "Browser.close", nil)
		_ = b.ws.Close()
	}
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) // and any helper of its group still there
	<-done
}
