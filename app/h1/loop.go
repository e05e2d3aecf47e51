package h1

import (
	"gale/app/wire"
)

// Loop is the HTTP/1.1 state of one event loop: the loop's services
// (wire.Loop) and the buffers of the response sinks of its connections.
// Touched only on that loop.
type Loop struct {
	*wire.Loop
	sinkBuf   []byte         // response bytes a sink gathered, until its Flush (sink.go)
	sinkOwner *responseSink  // the sink whose bytes sinkBuf holds
	sinkSegs  []wire.Segment // body pieces a sink references in place, between sinkBuf's bytes
	sinkIov   [][]byte       // scratch for the sink's writev
}
