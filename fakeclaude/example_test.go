package fakeclaude_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/tidwall/gjson"
)

// Run plays a scenario in-process over any reader and writer. Here the SDK
// side answers the ask-single question and prints what the model is told.
func ExampleRun() {
	sc, _ := scenarios.Builtin("ask-single")
	flags, _ := fakeclaude.ParseArgs([]string{"--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--permission-prompt-tool", "stdio"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		out := fakeclaude.Run(context.Background(), fakeclaude.Options{Scenario: sc, Flags: flags}, inR, outW)
		outW.Close()
		exit <- out.Code
	}()
	io.WriteString(inW, `{"type":"user","message":{"role":"user","content":"Set up storage"},"parent_tool_use_id":null,"session_id":""}`+"\n")
	dec := protocol.NewDecoder(outR)
	for {
		l, err := dec.Next()
		if err != nil {
			break
		}
		m := gjson.ParseBytes(l.Raw)
		switch {
		case m.Get("request.subtype").String() == "can_use_tool":
			questions := m.Get("request.input.questions").Raw
			io.WriteString(inW, `{"type":"control_response","response":{"subtype":"success","request_id":"`+m.Get("request_id").String()+
				`","response":{"behavior":"allow","updatedInput":{"questions":`+questions+`,"answers":{"Which database should I use?":"Postgres"}}}}}`+"\n")
		case l.Type == "user":
			fmt.Println(m.Get("message.content.0.content").String())
		case l.Type == "result":
			fmt.Println(m.Get("subtype").String(), strings.TrimSpace(m.Get("result").String()))
			inW.Close()
		}
	}
	fmt.Println("exit", <-exit)
	// Output:
	// Your questions have been answered: "Which database should I use?"="Postgres". You can now continue with these answers in mind.
	// success Using Postgres.
	// exit 0
}
