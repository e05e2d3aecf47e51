// Package serve is what every protocol engine (package h1, h2conn, h3)
// does with an exchange regardless of its protocol, written once: the
// dispatch of a request to the answer it gets (Dispatch). An engine parses
// its protocol, fills the exchange's handlers.Ctx (the request view, the
// response sink, the request body source and its handlers.Exchange), calls
// in here, and renders what comes back in its own framing.
//
// Everything here runs on the exchange's event loop and allocates
// nothing.
package serve
