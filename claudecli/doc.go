// Package claudecli holds the facts about the real claude CLI, in one
// place: its flags ([ParseArgs], [SDKArgs]), where it keeps session files
// ([SessionFile], [LatestSession]), its MCP configuration
// ([ParseMCPConfig]; connecting as the CLI does is package mcpclient), how
// a CLI process is launched and ended ([Launch], [Process.Kill]), the
// environment it runs in against a fake model API ([RealEnv]), and
// finding or installing the pinned release ([Find], [Install]).
//
// fakeclaude reads these facts from here rather than keeping its own, and
// the reference bridge launches "a CLI" through [Launch] without knowing
// whether it is the real one or the fake: which program, with what
// environment, is its caller's configuration.
package claudecli
