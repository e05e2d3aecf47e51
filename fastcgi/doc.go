// Package fastcgi is the FastCGI protocol (version 1) over byte slices:
// records framed in place, the name-value pairs of FCGI_PARAMS, the
// application's FCGI_END_REQUEST, and the CGI response head (RFC 3875
// section 6) that a responder writes on FCGI_STDOUT. It does no I/O and
// imports nothing of gale but codec, so it can be fuzzed and benchmarked
// alone, like package codec (whose Header type it shares).
//
// Parsing is strict and bounded: a record's length is what its header
// says (at most 65535 content and 255 padding bytes), a version other
// than 1 or a record type the web server never receives is an error, and
// the CGI head is bounded in bytes and fields. Every result that aliases
// input says so; nothing here keeps a reference to the buffers it is
// given.
//
// The web server side only is covered (gale is the client): it writes
// FCGI_BEGIN_REQUEST, FCGI_PARAMS, FCGI_STDIN and FCGI_ABORT_REQUEST, and
// reads FCGI_STDOUT, FCGI_STDERR, FCGI_END_REQUEST and the management
// records FCGI_GET_VALUES_RESULT and FCGI_UNKNOWN_TYPE.
package fastcgi
