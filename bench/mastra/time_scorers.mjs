// Times the published @mastra/evals code scorers for bench/micro.py (row heuristics_vs_mastra).
//
// usage: node time_scorers.mjs, then one JSON request per line on stdin, one JSON answer per line
// on stdout (so the Python side can time its own scorers between two cells, back to back):
//   request: {"id": "tone short", "scorer": "tone", "pairs": [{"input": "...", "output": "..."}],
//             "repeats": 5, "target_seconds": 0.03}
//   answer:  {"id": "tone short", "scores": [1, 0.96], "seconds_per_call": 4.1e-4, "calls": 64}
//
// Each pair becomes the run tests/fixtures/mastra_parity/mastra_reference.mjs builds: one user
// message, one assistant message. The scorer is built once; its runs are scored once for the
// scores, then in batches (every pair, `calls` times) until a batch lasts about target_seconds,
// which also warms the JIT; the answer is the best of `repeats` batches, per `await scorer.run(run)`.
import readline from "node:readline";
import {
  createCompletenessScorer,
  createContentSimilarityScorer,
  createKeywordCoverageScorer,
  createTextualDifferenceScorer,
  createToneScorer,
} from "@mastra/evals/scorers/prebuilt";
import { createTestMessage } from "@mastra/evals/scorers/utils";

const FACTORIES = {
  completeness: createCompletenessScorer,
  "content-similarity": createContentSimilarityScorer,
  "keyword-coverage": createKeywordCoverageScorer,
  "textual-difference": createTextualDifferenceScorer,
  tone: createToneScorer,
};

const runOf = (pair) => ({
  input: {
    inputMessages: [createTestMessage({ id: "u1", role: "user", content: pair.input })],
    rememberedMessages: [],
    systemMessages: [],
    taggedSystemMessages: {},
  },
  output: [createTestMessage({ id: "a1", role: "assistant", content: pair.output })],
});

async function batch(scorer, runs, calls) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) for (const run of runs) await scorer.run(run);
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function timeCell(request) {
  const factory = FACTORIES[request.scorer];
  if (!factory) throw new Error(`unknown scorer ${request.scorer}`);
  const scorer = factory();
  const runs = request.pairs.map(runOf);
  const scores = [];
  for (const run of runs) scores.push((await scorer.run(run)).score);
  const target = request.target_seconds;
  let calls = 1;
  let elapsed = await batch(scorer, runs, calls);
  while (elapsed < target / 2) {
    calls *= 2;
    elapsed = await batch(scorer, runs, calls);
  }
  let best = Infinity;
  for (let r = 0; r < request.repeats; r++) best = Math.min(best, await batch(scorer, runs, calls));
  return { id: request.id, scores, seconds_per_call: best / (calls * runs.length), calls };
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  let answer;
  try {
    answer = await timeCell(JSON.parse(line));
  } catch (error) {
    answer = { error: String(error?.stack ?? error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
