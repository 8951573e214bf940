package protocol_test

import (
	"fmt"

	"github.com/askctl/askctl/protocol"
)

// AskResultText is what the model is told after an allow: the canonical
// wording when every answer is a label (multiSelect labels joined with ", "),
// the neutral wording otherwise.
func ExampleAskResultText() {
	qs := []protocol.Question{
		{Question: "Which sections?", Header: "Sections", MultiSelect: true, Options: []protocol.Option{{Label: "Intro", Description: "a"}, {Label: "Outro", Description: "c"}}},
	}
	fmt.Println(protocol.AskResultText(qs, map[string]protocol.AnswerValue{"Which sections?": protocol.AnswerValue(protocol.JoinLabels([]string{"Intro", "Outro"}))}, nil))
	fmt.Println(protocol.AskResultText(qs, map[string]protocol.AnswerValue{"Which sections?": "Intro,Outro"}, nil))
	fmt.Println(protocol.AskResultText(qs, map[string]protocol.AnswerValue{"q_0": "Intro"}, nil))
	// Output:
	// Your questions have been answered: "Which sections?"="Intro, Outro". You can now continue with these answers in mind.
	// The user answered: "Which sections?"="Intro,Outro". Read the answers carefully — they may request clarification, changes, or that you not proceed — and follow what they actually say.
	// The user did not answer the questions.
}
