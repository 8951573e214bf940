// Package protocol holds the wire types of Claude Code's stream-json SDK transport
// and its control protocol, as the real CLI 2.1.330 speaks them.
//
// The transport is newline-delimited JSON over the CLI's stdin and stdout: one
// object a line, dispatched on "type". The SDK side writes "user" messages and
// "control_request"s (initialize, interrupt, …); the CLI writes "system",
// "assistant", "user" (tool results), "result", its own "control_request"s
// (can_use_tool) and "control_response"s. A control_response carries its
// request_id inside "response", not at the top level.
//
// The package is the one way askctl builds and reads messages:
//
//   - types for the messages askctl reads or writes: the control protocol
//     ([ControlRequest], [ControlResponse], [ControlCancelRequest],
//     [CanUseTool], [PermissionResult]), the AskUserQuestion input and answers
//     ([AskInput], [Question], [AnswerValue]), and the stream ([UserInput],
//     [SystemInit], [ContentBlock]);
//   - constructors for what the SDK side writes ([InitializeRequest],
//     [Prompt], [InterruptRequest], [SuccessResponse], [ErrorResponse],
//     [Allow], [Deny]) and [Reply], the one mapping between a person's answer
//     and the wire, both ways ([Reply.Result], [ReadReply]);
//   - a strict line [Decoder] whose errors name the line and the field
//     ([LineError]);
//   - the exact tool_result texts the real CLI gives the model for allow, deny and
//     deny+interrupt ([AskResultText], [DenyInterruptText]), and the multiSelect
//     joining rule ([JoinLabels]).
//
// The captures in shared/fixtures (copied to testdata) are the ground truth; where
// the written protocol notes and a capture disagree, the capture wins.
//
// It is public: a bridge written in Go imports it to build and read the CLI's
// messages, and to apply the answer rules (FindQuestion, MergeAnswers) as the
// reference bridge does.
package protocol
