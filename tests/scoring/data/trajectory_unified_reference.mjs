/**
 * Reference numbers for tests/scoring/test_trajectory_unified.py, from the published Mastra scorer.
 *
 * Run in a directory where the packages are installed:
 *
 *   npm install @mastra/evals@1.10.2 @mastra/core
 *   node trajectory_unified_reference.mjs cases.json > trajectory_unified_reference.json
 *
 * cases.json is trajectory_unified_cases.json: {"cases": [...]}. Each case gives either
 * `trajectory` (a Mastra Trajectory, scored as given) or `tools` (tool invocations on one assistant
 * message, turned into a Trajectory by core's extractTrajectory, as Mastra's live scoring does; a
 * case's `durationMs` becomes the trajectory's totalDurationMs, as our AgentRun's end - start time),
 * plus `defaults` and `weights` (createTrajectoryScorerCode's options) and `expectedTrajectory` (the
 * run's per-item expectation). The output maps each case id to {score, reason, preprocess} (the
 * preprocess step result without its echoed config) or to {error} when the scorer threw.
 */
import { readFileSync } from 'node:fs';
import { extractTrajectory } from '@mastra/core/evals';
import { createTrajectoryScorerCode } from '@mastra/evals/scorers/prebuilt';

function trajectoryOf(testCase) {
  if (testCase.trajectory) return testCase.trajectory;
  const toolInvocations = testCase.tools.map((tool, i) => ({
    toolCallId: `call-${i}`,
    toolName: tool.name,
    args: tool.args ?? {},
    result: tool.result ?? {},
    state: tool.state ?? 'result',
  }));
  const message = {
    id: 'a1',
    role: 'assistant',
    createdAt: new Date(0),
    content: { format: 2, parts: [{ type: 'text', text: 'done' }], toolInvocations },
  };
  const { steps } = extractTrajectory([message]);
  return testCase.durationMs === undefined ? { steps } : { steps, totalDurationMs: testCase.durationMs };
}

const { cases } = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const reference = {};
for (const testCase of cases) {
  const scorer = createTrajectoryScorerCode({ defaults: testCase.defaults, weights: testCase.weights });
  try {
    const result = await scorer.run({
      input: [],
      output: trajectoryOf(testCase),
      expectedTrajectory: testCase.expectedTrajectory,
    });
    const { config: _config, ...preprocess } = result.preprocessStepResult;
    reference[testCase.id] = { score: result.score, reason: result.reason, preprocess };
  } catch (error) {
    reference[testCase.id] = { error: String(error?.message ?? error) };
  }
}
console.log(JSON.stringify(reference, null, 1));
