package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
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
