// Package proc holds what askctl does with the processes it starts (a
// bridge under test, an exec surface's adapter, an agent): process groups,
// dying with askctl, and telling a process from a later one with its pid.
package proc
