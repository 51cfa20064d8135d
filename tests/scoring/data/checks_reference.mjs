/**
 * Reference results for tests/scoring/test_checks.py, from the published Mastra quick checks.
 *
 * Run in a directory where the packages are installed:
 *
 *   npm install @mastra/evals@1.10.2 @mastra/core
 *   node checks_reference.mjs checks_cases.json > checks_reference.json
 *
 * checks_cases.json is {"cases": [...]}. Each case names a `check` (a key of `checks`: includes,
 * calledTool, ...), its positional `args` (for `matches`: the pattern source and its flags, given to
 * `new RegExp`), its `options`, and the run's output `messages`: each {role, text, parts?, tools?}
 * becomes a Mastra stored message (format 2) whose text part and `content` are `text` (or whose text
 * parts are `parts`), and whose legacy `toolInvocations` are `tools` ({name, state, result, args};
 * call ids `call-<message>-<invocation>`). The output maps each case id to {scorer (its id, name
 * and description), score, reason, preprocess} (the real scorer's preprocess step result), or to
 * {error} when the scorer threw. Tested with Node 20, @mastra/evals 1.10.2, @mastra/core 1.71.0.
 */
import { readFileSync } from 'node:fs';
import { checks } from '@mastra/evals/checks';

function messageOf(message, messageIndex) {
  const text = message.text ?? '';
  const parts = (message.parts ?? [text]).map(partText => ({ type: 'text', text: partText }));
  const toolInvocations = (message.tools ?? []).map((tool, i) => ({
    toolCallId: `call-${messageIndex}-${i}`,
    toolName: tool.name,
    args: tool.args ?? {},
    result: tool.result,
    state: tool.state ?? 'result',
  }));
  return {
    id: `m${messageIndex}`,
    role: message.role ?? 'assistant',
    createdAt: new Date(0),
    content: { format: 2, parts, content: text, toolInvocations },
  };
}

function scorerOf(testCase) {
  const args = testCase.args ?? [];
  if (testCase.check === 'matches') {
    return checks.matches(new RegExp(args[0], args[1] ?? ''), testCase.options);
  }
  return checks[testCase.check](...args, ...(testCase.options ? [testCase.options] : []));
}

const { cases } = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const reference = {};
for (const testCase of cases) {
  try {
    const scorer = scorerOf(testCase);
    const result = await scorer.run({
      input: { inputMessages: [], rememberedMessages: [], systemMessages: [], taggedSystemMessages: {} },
      output: testCase.messages.map(messageOf),
    });
    reference[testCase.id] = {
      scorer: { id: scorer.id, name: scorer.name, description: scorer.description },
      score: result.score,
      reason: result.reason ?? null,
      preprocess: result.preprocessStepResult,
    };
  } catch (error) {
    reference[testCase.id] = { error: String(error?.message ?? error) };
  }
}
console.log(JSON.stringify(reference, null, 1));
