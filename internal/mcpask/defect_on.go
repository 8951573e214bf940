//go:build askctl_broken

package mcpask

import "os"

// A server built with -tags askctl_broken has the one defect named by
// ASKCTL_DEFECT (bridge/defect_on.go lists them), for the conformance
// suite's own tests. Never shipped.
func defect(name string) bool { return os.Getenv("ASKCTL_DEFECT") == name }

// labelOptional is ask_user's input schema with an option's label left
// optional: an option may be offered blank.
func labelOptional() any {
	option := map[string]any{"type": "object", "properties": map[string]any{
		"label": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"}}}
	return map[string]any{"type": "object", "required": []string{"question"}, "properties": map[string]any{
		"question":    map[string]any{"type": "string"},
		"options":     map[string]any{"type": "array", "items": option},
		"multiSelect": map[string]any{"type": "boolean"},
	}}
}
