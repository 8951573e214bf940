//go:build !askctl_broken

package mcpask

// defect is always false in askctl as shipped (defect_on.go).
func defect(string) bool { return false }

func labelOptional() any { return nil }
