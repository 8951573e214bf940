package fakeclaude

import (
	"fmt"
	"strings"

	"github.com/askctl/askctl/claudecli"
)

// Flags are the CLI's flags (package claudecli reads them as the real CLI
// does) and fakeclaude's own two.
type Flags struct {
	claudecli.Flags
	Scenario   string // --scenario: the scenario to play (else FAKECLAUDE_SCENARIO)
	Transcript string // --transcript: the transcript file (else FAKECLAUDE_TRANSCRIPT)
}

// ParseArgs reads the arguments after the program name: fakeclaude's own
// flags, in either form, and the CLI's.
func ParseArgs(args []string) (Flags, error) {
	var f Flags
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i], "=")
		var dst *string
		switch name {
		case "--scenario":
			dst = &f.Scenario
		case "--transcript":
			dst = &f.Transcript
		default:
			rest = append(rest, args[i])
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return f, fmt.Errorf("flag %s needs a value", name)
			}
			i++
			val = args[i]
		}
		*dst = val
	}
	cf, err := claudecli.ParseArgs(rest)
	f.Flags = cf
	return f, err
}
