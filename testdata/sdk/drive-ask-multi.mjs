// Drives an agent executable with the official TypeScript Agent SDK, the way
// a bridge does: query() with pathToClaudeCodeExecutable and a canUseTool that
// answers the ask-multi questions. Prints one JSON object: every SDK message,
// what canUseTool saw, and any error; exits 1 when there was an error (the
// agent failed, or exited non-zero), else 0.
//
// usage: node drive-ask-multi.mjs PATH-TO-AGENT [SESSION-ID-TO-RESUME]
import { query } from '@anthropic-ai/claude-agent-sdk';

const agent = process.argv[2];
const resume = process.argv[3];
const seen = [];
const messages = [];
let error = null;
try {
  const q = query({
    prompt: 'Ask me how to format.',
    options: {
      pathToClaudeCodeExecutable: agent,
      model: 'claude-sonnet-4-5',
      ...(resume ? { resume } : {}),
      env: { ...process.env },
      stderr: (s) => process.stderr.write(s),
      canUseTool: async (toolName, input, ctx) => {
        seen.push({ toolName, input, toolUseID: ctx.toolUseID, requiresUserInteraction: ctx.requiresUserInteraction });
        if (toolName !== 'AskUserQuestion') {
          return { behavior: 'deny', message: 'only AskUserQuestion is expected' };
        }
        return {
          behavior: 'allow',
          updatedInput: {
            questions: input.questions,
            answers: { 'How should I format the output?': 'Summary', 'Which sections?': ['Intro', 'Outro'].join(', ') },
          },
        };
      },
    },
  });
  for await (const m of q) messages.push(m);
} catch (e) {
  error = String(e && e.stack || e);
}
process.stdout.write(JSON.stringify({ seen, messages, error }) + '\n');
if (error) {
  process.stderr.write('drive-ask-multi: ' + error.split('\n')[0] + '\n');
  process.exitCode = 1;
}
