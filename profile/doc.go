// Package profile reads a bridge profile: the small JSON file that says how
// to run one bridge under test (start, ready, how it spawns its claude),
// how to reach its user surface (a surface.Spec), what it claims to do
// (capabilities, policy), and how long to wait for it (limits). Load and
// Parse check it and name the file, line and field of each problem;
// Expanded fills in the harness's ${NAME} variables.
//
// The harness runs a profile's bridge; askctl answer --bridge reads only
// its surface. Neither the profile nor the surface links the harness.
package profile
