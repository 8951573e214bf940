package learn_test

import (
	"testing"

	"github.com/askctl/askctl/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
