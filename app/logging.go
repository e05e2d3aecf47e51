package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"gale/config"
)

// NewLogger builds the process logger described by cfg, writing to w.
func NewLogger(cfg config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	switch strings.ToLower(cfg.Level) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		opts.ReplaceAttr = caddyFields
		return slog.New(slog.NewJSONHandler(w, opts)).With("logger", "gale")
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// caddyFields gives the JSON server log the field names and values of the
// JSON access log (Caddy's layout, which log tools read): "ts" in unix
// seconds with nanoseconds for slog's "time", and the level in lower case
// ("info", "warn"; gnet's fatal is "fatal"). "msg" is shared as it is, and
// "logger" ("gale" here, "http.log.access" there) tells the two apart.
func caddyFields(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		return slog.Any("ts", unixSeconds(a.Value.Time().UnixNano()))
	case slog.LevelKey:
		l, _ := a.Value.Any().(slog.Level)
		return slog.String(slog.LevelKey, levelName(l))
	}
	return a
}

func levelName(l slog.Level) string {
	if l > slog.LevelError {
		return "fatal"
	}
	return strings.ToLower(l.String())
}

// unixSeconds is a time in unix nanoseconds written in JSON as seconds
// with nine decimals, as the access log writes "ts".
type unixSeconds int64

// MarshalJSON implements json.Marshaler.
func (t unixSeconds) MarshalJSON() ([]byte, error) {
	ns := int64(t)
	b := strconv.AppendInt(nil, ns/1e9, 10)
	frac := strconv.AppendInt(nil, 1e9+ns%1e9, 10) // "1" and nine digits
	b = append(b, '.')
	return append(b, frac[1:]...), nil
}

// gnetLogger routes gnet's own log lines through our logger. Each method
// checks the level first so that disabled levels cost no formatting.
type gnetLogger struct{ l *slog.Logger }

func (g gnetLogger) logf(level slog.Level, format string, args ...any) {
	ctx := context.Background()
	if !g.l.Enabled(ctx, level) {
		return
	}
	g.l.Log(ctx, level, fmt.Sprintf(format, args...), "component", "gnet")
}

func (g gnetLogger) Debugf(format string, args ...any) { g.logf(slog.LevelDebug, format, args...) }
func (g gnetLogger) Infof(format string, args ...any)  { g.logf(slog.LevelDebug, format, args...) } // gnet's info lines are start-up chatter
func (g gnetLogger) Warnf(format string, args ...any)  { g.logf(slog.LevelWarn, format, args...) }
func (g gnetLogger) Errorf(format string, args ...any) { g.logf(slog.LevelError, format, args...) }
func (g gnetLogger) Fatalf(format string, args ...any) { g.logf(slog.LevelError+4, format, args...) }
