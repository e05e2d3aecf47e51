package acme

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapToSlog returns a zap logger whose entries go to log, so that
// certmagic's messages (obtaining, renewing, a CA's reason for a failure)
// appear in gale's log with its level and format. Messages are prefixed
// "acme: ".
func zapToSlog(log *slog.Logger) *zap.Logger {
	return zap.New(&slogCore{log: log})
}

// slogCore is a zapcore.Core writing to an slog.Logger.
type slogCore struct {
	log    *slog.Logger
	fields []zapcore.Field
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return c.log.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fs []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, fields: append(slices.Clip(c.fields), fs...)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fs {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	args := make([]any, 0, 2*len(keys)+2)
	if name := strings.TrimLeft(e.LoggerName, "."); name != "" {
		args = append(args, "logger", name)
	}
	for _, k := range keys {
		args = append(args, k, enc.Fields[k])
	}
	c.log.Log(context.Background(), slogLevel(e.Level), "acme: "+e.Message, args...)
	return nil
}

func (c *slogCore) Sync() error { return nil }
