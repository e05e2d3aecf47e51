package main

import (
	"log/slog"
	"sync"

	"gale/admin"
	"gale/app"
	"gale/config"
	"gale/sdnotify"
)

// lifecycle is the running server as serve keeps it: the file SIGHUP
// re-reads, the source of the running config, and the reloads, applied
// one at a time whether a signal or the admin API asked.
type lifecycle struct {
	srv  *app.Server
	log  *slog.Logger
	file string        // the file SIGHUP re-reads; "" = started without one
	stop chan struct{} // the admin API's POST /stop (buffered, 1)

	mu  sync.Mutex // serialises reloads
	src []byte     // the running config's YAML; nil = built from flags
}

func newLifecycle(srv *app.Server, log *slog.Logger, file string, src []byte) *lifecycle {
	return &lifecycle{srv: srv, log: log, file: file, src: src, stop: make(chan struct{}, 1)}
}

// reloadFile re-reads the config file and applies it (SIGHUP).
func (lc *lifecycle) reloadFile() {
	if lc.file == "" {
		lc.log.Warn("reload: no config file to re-read (started without -c)")
		return
	}
	data, err := config.ReadFile(lc.file)
	if err != nil {
		notify(lc.log, sdnotify.Reloading)
		defer notify(lc.log, sdnotify.Ready)
		lc.srv.ReloadRejected()
		lc.log.Error("reload: keeping the running config", "err", err.Error())
		return
	}
	_, _ = lc.load(data, lc.file)
}

// load validates data (named file) and applies it as the running config,
// telling the service manager and the log as a SIGHUP reload does. On
// any error the running config stays.
func (lc *lifecycle) load(data []byte, file string) (notes []string, err error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	notify(lc.log, sdnotify.Reloading)
	defer notify(lc.log, sdnotify.Ready)
	cfg, err := config.Parse(data, file)
	if err != nil {
		lc.srv.ReloadRejected()
		lc.log.Error("reload: keeping the running config", "err", err.Error())
		return nil, err
	}
	notes, err = lc.srv.Reload(cfg)
	if err != nil {
		lc.log.Error("reload: keeping the running config", "err", err.Error())
		return nil, err
	}
	lc.src = data
	for _, n := range notes {
		lc.log.Warn("reload: " + n)
	}
	lc.log.Info("reloaded", "file", file, "routes", len(cfg.Routes))
	return notes, nil
}

// source returns the running config's YAML (nil when built from flags).
func (lc *lifecycle) source() []byte {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.src
}

// requestStop asks serve for a graceful stop (the admin API's POST /stop).
func (lc *lifecycle) requestStop() {
	select {
	case lc.stop <- struct{}{}:
	default:
	}
}

// startAdmin binds the admin API of cfg (none when not configured) and
// serves it on a goroutine of its own. The returned function closes it.
func (lc *lifecycle) startAdmin(cfg *config.Config) (func(), error) {
	if cfg.Admin.Network == "" {
		return func() {}, nil
	}
	ln, err := admin.Listen(cfg.Admin)
	if err != nil {
		return nil, err
	}
	api := admin.New(ln, admin.Backend{Server: lc.srv, Load: lc.load, Source: lc.source, Stop: lc.requestStop, Version: versionString()})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := api.Serve(); err != nil {
			lc.log.Warn("admin listener", "err", err)
		}
	}()
	lc.log.Info("admin API", "listen", cfg.Admin.Listen)
	return func() {
		_ = api.Close()
		<-done
	}, nil
}
