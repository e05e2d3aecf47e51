// Package accesslog writes gale's access log: one line per answered
// request, in the combined (Apache/nginx) or JSON format, to a file that
// is rotated past a size, or to stdout. It does no network I/O and
// imports only codec and config of gale.
//
// # Who owns what
//
// The event loops format lines; one goroutine per Log writes them. Each
// loop appends lines to a buffer of its own with Log.AppendLine, while it
// handles the request, and hands the buffer over with Log.Submit once it
// holds FlushBytes or more, or at the end of a timeout sweep. Submit
// copies the lines and never blocks: when the writer has fallen behind by
// a full queue the lines are dropped and counted, so that a slow disk
// never stalls a loop. The writer goroutine alone owns the file: it
// writes, rotates (renaming path to path.1, path.1 to path.2 and so on up
// to config.AccessLog.Keep) and closes it.
//
// # Concurrency
//
// Open, AppendLine, Submit and Close are safe to call from any goroutine.
// AppendLine shares nothing with other callers but the timestamp text,
// rendered once a second behind an atomic pointer, and allocates nothing
// otherwise. Submit must not be called once Close has begun: Close waits
// for what was submitted to be written, so the loops must have stopped
// first.
//
// A Record is not safe for concurrent use: it belongs to the connection
// (and so the loop) that fills it.
//
// # What a Record may alias, and for how long
//
// A Record's slices alias memory it does not own, for as long as that
// memory holds the request it describes, and no longer. Only two methods
// fill one, and each says what it aliases:
//
//   - FromRequest points it at a request parsed during the current event.
//     Those bytes live in gnet's read buffer or the loop's TLS plaintext
//     buffer, both shared by every connection of the loop: once the event
//     ends they may hold another connection's request. Format the line
//     within the event, or Keep the record first.
//   - Keep copies its bytes into a buffer the caller owns and points it
//     there: it then stays valid while that buffer is not written, for
//     example by a later Keep into it.
//
// The zero Record stands for a request that could not be parsed and
// names nothing: its line shows no method, target, version or fields.
// A request that failed to parse is logged with a zero Record
// (codec.Parse leaves a failed request empty, so FromRequest of it gives
// one too), never with a record left from an earlier request: the bytes
// such a record points at may since hold another connection's request,
// and its line would print them.
package accesslog
