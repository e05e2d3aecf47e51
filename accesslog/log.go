package accesslog

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/bytebufferpool"

	"gale/codec"
	"gale/config"
)

// FlushBytes is how much a loop buffers before handing its lines to the
// writer goroutine with Submit; the loop's timeout sweep hands over
// whatever is left every tick.
const FlushBytes = 32 << 10

// Log formats request lines into buffers the event loops own
// (AppendLine) and writes them from one goroutine (Submit), so no loop
// ever waits on the disk. When the writer falls behind by more than the
// queue holds, lines are dropped and counted rather than stalling a loop.
// Its methods are safe for concurrent use; see the package documentation
// for what each side owns.
type Log struct {
	json     bool
	path     string // "-" = stdout
	maxBytes int64
	keep     int

	queue   chan *bytebufferpool.ByteBuffer
	done    chan struct{}
	reopen  chan struct{} // Reopen's requests, coalesced (capacity 1)
	dropped atomic.Uint64 // lines dropped: queue full, or the write failed
	stamp   atomic.Pointer[logStamp]
	once    sync.Once
	log     *slog.Logger // the process log, for drops and failed reopens

	f        *os.File // owned by the writer goroutine
	size     int64
	reported uint64 // drops the writer has logged
}

type logStamp struct {
	sec  int64
	text string // "30/Nov/2026:07:24:22 +0000" (the combined format; JSON lines carry unix seconds)
}

// Open opens the log c describes (its path "-" is stdout) and starts its
// writer goroutine, which owns the file from then on. Drops and failures
// are reported to log. It is safe to call from any goroutine; the Log
// must be closed with Close.
func Open(c config.AccessLog, log *slog.Logger) (*Log, error) {
	a := &Log{
		json:     c.Format == "json",
		path:     c.Path,
		maxBytes: c.MaxBytes,
		keep:     c.Keep,
		queue:    make(chan *bytebufferpool.ByteBuffer, 256),
		done:     make(chan struct{}),
		reopen:   make(chan struct{}, 1),
		log:      log,
	}
	if a.path == "-" {
		a.f = os.Stdout
	} else {
		if err := a.open(); err != nil {
			return nil, err
		}
	}
	go a.writer()
	return a, nil
}

func (a *Log) open() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	a.f, a.size = f, st.Size()
	return nil
}

// Submit hands a loop's buffered lines to the writer and returns the
// loop's buffer emptied for reuse. The lines are copied: the caller may
// write into lines again at once. Submit never blocks; when the writer's
// queue is full the lines are dropped and counted. It is safe from any
// goroutine, but not once Close has begun.
func (a *Log) Submit(lines []byte) []byte {
	b := bytebufferpool.Get()
	b.B = append(b.B[:0], lines...)
	select {
	case a.queue <- b:
	default:
		a.dropped.Add(uint64(bytes.Count(b.B, newline)))
		bytebufferpool.Put(b)
	}
	return lines[:0]
}

var newline = []byte{'\n'}

// Dropped is how many lines were dropped: the writer had fallen behind
// by more than its queue holds, or writing them failed (a full disk).
func (a *Log) Dropped() uint64 { return a.dropped.Load() }

// Reopen has the writer close the file and open its path again, after
// the lines queued before: after a rotation by another program (logrotate
// renames the file, then signals), new lines go to a new file at the
// path, and each line is written once, to one of the two. It never
// blocks; requests made while one is pending are one. A log to stdout
// ignores it.
func (a *Log) Reopen() {
	select {
	case a.reopen <- struct{}{}:
	default:
	}
}

func (a *Log) writer() {
	defer close(a.done)
	for {
		select {
		case b, ok := <-a.queue:
			if !ok {
				if a.f != nil && a.f != os.Stdout {
					_ = a.f.Close()
				}
				return
			}
			a.write(b)
		case <-a.reopen:
			a.drainQueued()
			a.reopenFile()
		}
	}
}

// drainQueued writes what is queued now, so that lines submitted before a
// reopen was asked go to the old file.
func (a *Log) drainQueued() {
	for n := len(a.queue); n > 0; n-- {
		b, ok := <-a.queue
		if !ok {
			return
		}
		a.write(b)
	}
}

// write writes one buffer of lines, rotating first when it would pass
// max_bytes; lines it cannot write are counted as dropped.
func (a *Log) write(b *bytebufferpool.ByteBuffer) {
	defer bytebufferpool.Put(b)
	if a.path != "-" && a.maxBytes > 0 && a.size+int64(len(b.B)) > a.maxBytes && a.size > 0 {
		a.rotate()
	}
	if a.f == nil {
		a.dropped.Add(uint64(bytes.Count(b.B, newline)))
	} else {
		n, err := a.f.Write(b.B)
		a.size += int64(n)
		if err != nil {
			a.dropped.Add(uint64(bytes.Count(b.B[n:], newline)))
		}
	}
	a.reportDrops()
}

// reportDrops writes one process log line when lines were dropped since
// the last report.
func (a *Log) reportDrops() {
	d := a.dropped.Load()
	if d == a.reported || a.log == nil {
		return
	}
	a.log.Warn("access log: lines dropped (the disk is slow or full)", "path", a.path, "dropped", d-a.reported, "total", d)
	a.reported = d
}

// reopenFile closes the file and opens its path again (writer only).
func (a *Log) reopenFile() {
	if a.path == "-" {
		return
	}
	if a.f != nil {
		_ = a.f.Close()
		a.f = nil
	}
	if err := a.open(); err != nil && a.log != nil {
		a.log.Error("access log: reopen failed; lines are dropped until the next reopen", "path", a.path, "err", err.Error())
	}
}

// rotate renames path to path.1 (shifting older ones up to keep) and
// opens a fresh file.
func (a *Log) rotate() {
	_ = a.f.Close()
	a.f = nil
	for i := a.keep; i >= 1; i-- {
		src := a.path
		if i > 1 {
			src = a.path + "." + strconv.Itoa(i-1)
		}
		dst := a.path + "." + strconv.Itoa(i)
		if i == a.keep {
			_ = os.Remove(dst)
		}
		_ = os.Rename(src, dst)
	}
	if a.keep == 0 {
		_ = os.Remove(a.path)
	}
	if err := a.open(); err != nil {
		if a.log != nil {
			a.log.Error("access log: rotation could not open a new file; lines are dropped until a reopen", "path", a.path, "err", err.Error())
		} else {
			fmt.Fprintf(os.Stderr, "gale: access log %s: %v\n", filepath.Base(a.path), err)
		}
	}
}

// Close stops the writer after everything queued was written and closes
// the file, and returns once that is done. Every Submit must have
// returned, and no more may come: the loops must have stopped. Calling
// Close again does nothing.
func (a *Log) Close() {
	a.once.Do(func() {
		close(a.queue)
		<-a.done
	})
}

func (a *Log) timestamp(now int64) string {
	sec := now / int64(time.Second)
	if s := a.stamp.Load(); s != nil && s.sec == sec {
		return s.text
	}
	s := &logStamp{sec: sec, text: time.Unix(sec, 0).Format("02/Jan/2006:15:04:05 -0700")}
	a.stamp.Store(s)
	return s.text
}

// AppendLine appends one request's line in the configured format to
// dst, the caller's own buffer, and returns it: the request rec describes
// (whose slices must be valid now), from remote, answered with status and
// bodyBytes at now (Unix nanoseconds). A request that could not be parsed
// (rec without a method) is "-" in the combined format and empty strings
// in JSON, whose layout is Caddy's (caddy.go). Quotes, backslashes and
// bytes outside printable ASCII are escaped, so a client cannot forge
// lines.
//
// AppendLine reads rec only while it runs and keeps nothing of it or of
// dst. It is safe from any goroutine, and allocates nothing but, once a
// second, the combined format's timestamp text.
func (a *Log) AppendLine(dst []byte, remote netip.Addr, rec *Record, status int, bodyBytes int64, now int64) []byte {
	remote = remote.Unmap() // the form access rules judge: an IPv4 client is named as IPv4
	if a.json {
		return appendJSON(dst, remote, rec, status, bodyBytes, now)
	}
	dst = remote.AppendTo(dst)
	dst = append(dst, " - - ["...)
	dst = append(dst, a.timestamp(now)...)
	dst = append(dst, "] \""...)
	if len(rec.method) > 0 {
		dst = appendEscaped(dst, rec.method, false)
		dst = append(dst, ' ')
		dst = appendEscaped(dst, rec.target, false)
		dst = append(dst, ' ')
		dst = appendProto(dst, rec.version)
	} else {
		dst = append(dst, '-')
	}
	dst = append(dst, "\" "...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, bodyBytes, 10)
	dst = append(dst, " \""...)
	dst = appendOrDash(dst, rec.referer)
	dst = append(dst, "\" \""...)
	dst = appendOrDash(dst, rec.userAgent)
	return append(dst, "\"\n"...)
}

func appendProto(dst []byte, v codec.Version) []byte {
	switch v {
	case codec.HTTP10:
		return append(dst, "HTTP/1.0"...)
	case codec.HTTP20:
		return append(dst, "HTTP/2.0"...)
	case codec.HTTP30:
		return append(dst, "HTTP/3.0"...)
	}
	return append(dst, "HTTP/1.1"...)
}

func appendOrDash(dst, v []byte) []byte {
	if len(v) == 0 {
		return append(dst, '-')
	}
	return appendEscaped(dst, v, false)
}

const hexDigits = "0123456789abcdef"

// appendEscaped appends v with quotes, backslashes and bytes outside
// printable ASCII escaped, so a client cannot forge log lines.
func appendEscaped(dst, v []byte, json bool) []byte {
	for _, c := range v {
		dst = appendEscapedByte(dst, c, json)
	}
	return dst
}

// appendEscapedByte appends c, escaped as appendEscaped does.
func appendEscapedByte(dst []byte, c byte, json bool) []byte {
	switch {
	case c == '"' || c == '\\':
		return append(dst, '\\', c)
	case c < 0x20 || c >= 0x7f:
		if json {
			return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		return append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
	}
	return append(dst, c)
}
