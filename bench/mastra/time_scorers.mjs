// Times the published @mastra/evals code scorers for bench/micro.py (row heuristics_vs_mastra).
//
// usage: node time_scorers.mjs, then one JSON request per line on stdin, one JSON answer per line
// on stdout (so the Python side can time its own scorers between two cells, back to back):
//   request: {"id": "tone short", "scorer": "tone", "pairs": [{"input": "...", "output": "..."}],
//             "target_seconds": 0.005, "cell_seconds": 0.4, "min_repeats": 3, "max_repeats": 40}
//   answer:  {"id": "tone short", "scores": [1, 0.96], "seconds_per_call": 4.1e-4, "calls": 8, "repeats": 30}
//
// Each pair becomes the run tests/fixtures/mastra_parity/mastra_reference.mjs builds: one user
// message, one assistant message. The scorer is built once; its runs are scored once for the
// scores, then timed as bench/micro.py's best_per_call times ours: passes over every run double
// until a batch lasts target_seconds (warming the JIT up), then as many batches as fit in
// cell_seconds (min_repeats to max_repeats); the answer is the best batch, per `await scorer.run(run)`.
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
  let calls = 1;
  let best = await batch(scorer, runs, calls);
  while (best < request.target_seconds) {
    calls *= 2;
    best = await batch(scorer, runs, calls);
  }
  const wanted = Math.round(request.cell_seconds / best);
  const repeats = Math.min(request.max_repeats, Math.max(request.min_repeats, wanted));
  for (let r = 0; r < repeats; r++) best = Math.min(best, await batch(scorer, runs, calls));
  return { id: request.id, scores, seconds_per_call: best / (calls * runs.length), calls, repeats };
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
