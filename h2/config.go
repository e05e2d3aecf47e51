package h2

import "gale/config"

// Defaults for the zero fields of Config.
const (
	DefaultMaxConcurrentStreams = 128
	DefaultInitialStreamWindow  = 1 << 16 // 64 KiB
	DefaultInitialConnWindow    = 1 << 20 // 1 MiB
	DefaultMaxFrameSize         = MinMaxFrameSize
	DefaultMaxHeaderListSize    = config.DefaultHeaderBytes // as limits.header_bytes
	DefaultHeaderTableSize      = 4096                      // the protocol's initial value (RFC 9113 section 6.5.2)
	DefaultMaxRequests          = 10000
)

// Config holds the limits a Conn advertises in its SETTINGS frame (RFC 9113
// section 6.5.2) and enforces. Zero fields take the default documented on
// each; out-of-range values are clamped to the nearest valid one. A Config
// is only read by the Conns initialised with it: one value may be shared
// by all event loops.
type Config struct {
	MaxConcurrentStreams uint32 // SETTINGS_MAX_CONCURRENT_STREAMS; 0 = 128, at most 1024; one more stream is refused with RST_STREAM REFUSED_STREAM (section 5.1.2)
	InitialStreamWindow  uint32 // SETTINGS_INITIAL_WINDOW_SIZE, our receive window per stream; 0 = 64 KiB; at most 2^31-1
	InitialConnWindow    uint32 // our connection receive window, raised from 65535 by a WINDOW_UPDATE on stream 0 after SETTINGS; 0 = 1 MiB; at least 65535, at most 2^31-1
	MaxFrameSize         uint32 // SETTINGS_MAX_FRAME_SIZE, the largest frame payload we accept; 0 = 16384; clamped to 16384..16777215 (section 4.2)
	MaxHeaderListSize    uint32 // SETTINGS_MAX_HEADER_LIST_SIZE, the decoded size (RFC 7541 section 4.1) of a request's field list; 0 = 16 KiB; larger: Stream.TooLarge (the engine answers 431)
	HeaderTableSize      uint32 // SETTINGS_HEADER_TABLE_SIZE, our decoder's dynamic table; 0 = 4096
	MaxRequests          uint32 // streams one connection carries before a graceful GOAWAY; 0 = 10000
	MaxBodyBytes         int64  // largest request body (limits.body_bytes); 0 = config.DefaultBodyBytes; a stream whose DATA exceeds it is answered 413 (when no response started) and reset
}

// withDefaults returns a copy of *c (the zero Config when c is nil) with
// the defaults filled in and the values clamped.
func (c *Config) withDefaults() Config {
	var v Config
	if c != nil {
		v = *c
	}
	v.MaxConcurrentStreams = orDefault(v.MaxConcurrentStreams, DefaultMaxConcurrentStreams)
	v.MaxConcurrentStreams = min(v.MaxConcurrentStreams, maxStreamsLimit)
	v.InitialStreamWindow = min(orDefault(v.InitialStreamWindow, DefaultInitialStreamWindow), maxWindow)
	v.InitialConnWindow = min(max(orDefault(v.InitialConnWindow, DefaultInitialConnWindow), initialWindow), maxWindow)
	v.MaxFrameSize = min(max(orDefault(v.MaxFrameSize, DefaultMaxFrameSize), MinMaxFrameSize), MaxMaxFrameSize)
	v.MaxHeaderListSize = orDefault(v.MaxHeaderListSize, DefaultMaxHeaderListSize)
	v.HeaderTableSize = orDefault(v.HeaderTableSize, DefaultHeaderTableSize)
	v.MaxRequests = orDefault(v.MaxRequests, DefaultMaxRequests)
	if v.MaxBodyBytes <= 0 {
		v.MaxBodyBytes = config.DefaultBodyBytes
	}
	return v
}

// maxStreamsLimit bounds MaxConcurrentStreams, so that a Conn's stream pool
// stays small.
const maxStreamsLimit = 1024

func orDefault(v, d uint32) uint32 {
	if v == 0 {
		return d
	}
	return v
}
