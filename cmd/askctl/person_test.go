package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/surface"
)

// TestSurfaceErrExits: a surface's refusal maps to the exit status its code
// names, through bridgeapi's one table; a bridge that fails (internal) or
// says what askctl does not know is an error, not a rejected answer.
func TestSurfaceErrExits(t *testing.T) {
	tests := []struct {
		code string
		want error // nil: none of the sentinels
	}{
		{"not_found", bridgeapi.ErrNotFound},
		{"404", bridgeapi.ErrNotFound},
		{"resolved", bridgeapi.ErrResolved},
		{"session_taken", bridgeapi.ErrResolved},
		{"invalid", bridgeapi.ErrInvalid},
		{"bad_request", bridgeapi.ErrInvalid},
		{"unauthorized", bridgeapi.ErrUnauthorized},
		{"forbidden_host", bridgeapi.ErrUnauthorized},
		{"401", bridgeapi.ErrUnauthorized},
		{"internal", nil},
		{"unreachable", nil},
	}
	sentinels := []error{bridgeapi.ErrNotFound, bridgeapi.ErrResolved, bridgeapi.ErrInvalid, bridgeapi.ErrUnauthorized}
	for _, tt := range tests {
		err := surfaceErr(fmt.Errorf("answering: %w", &surface.Rejected{Code: tt.code, Message: "boom"}))
		for _, s := range sentinels {
			if got := errors.Is(err, s); got != (s == tt.want) {
				t.Errorf("code %s: errors.Is(%v, %v) = %v", tt.code, err, s, got)
			}
		}
	}
}
