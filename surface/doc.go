// Package surface is the person's side of a bridge: the adapters that
// reach a bridge's user surface as a person (or a script) would, and say
// what the person was told.
//
// A profile's surface section is a Spec; New returns its adapter. The kinds
// are ws and control-ws (a WebSocket per session), http (an HTTP API with a
// server-sent event stream), exec (a program of the bridge author's that
// speaks JSON lines), and browser (a web page in Chromium, in package
// surface/browser, which registers itself: import it for that kind).
//
// What a surface can do beyond Surface and Conn is told by the interfaces
// it implements: Interrupter, Resumer, Permitter, Prober, Warmer,
// RestartWatcher and Overseer. An operation a surface lacks returns an
// *Unsupported error naming it.
//
// askctl answer, skip, pending and watch use this package alone; the
// harness (package harness) builds the conformance suite's cases on it.
package surface
