//go:build mutation

package bridge_test

import (
	"testing"

	"github.com/askctl/askctl/internal/mutation"
)

// The oracle of `make mutate` (see internal/mutation): under the mutation
// tag, this package's tests are the conformance suite against the bridge
// built from this (mutated) source.

func TestMain(m *testing.M) { mutation.Main(m) }

func TestConformance(t *testing.T) { mutation.Oracle(t) }
