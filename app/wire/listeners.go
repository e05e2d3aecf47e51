package wire

import (
	"fmt"

	"gale/config"
)

// Speaks returns an error when a listener speaking protos could answer
// no connection under cfg: it has no h1, and HTTP/2 is not offered (h2On
// false). config refuses this for a file; the check here covers, on
// reload, the protocols a running listener keeps. where names the
// listener: its place in the file and its address, as config's messages
// do.
func Speaks(cfg *config.Config, h2On bool, where string, protos config.Protocols) error {
	if h2On || protos.H1() {
		return nil
	}
	return fmt.Errorf("%s: protocols %s need HTTP/2, and server.http2.enabled is false; add h1 to the listener's protocols", where, protos)
}

// ListenerWhere names listener l of cfg for messages: "FILE:LINE:COL:
// listen ADDRESS".
func ListenerWhere(cfg *config.Config, l *config.Listener) string {
	where := fmt.Sprintf("%d:%d", l.Pos.Line, l.Pos.Col)
	if cfg.File != "" {
		where = cfg.File + ":" + where
	}
	return where + ": listen " + l.Address
}
