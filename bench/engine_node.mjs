// Replays jobs through the browser engine under Node: reads the engine archive's path
// and a JSON list of jobs ({problem, actions}) on stdin, prints the engine's answer
// (frame hashes, median step time) and its load time as one JSON object.
// Used by tests/tasks/test_browser_engine.py and python -m bench.browser_engine.
//   node bench/engine_node.mjs ARCHIVE < jobs.json

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, "package.json"));
const { loadPyodide } = require("pyodide");
const { startEngine } = await import(join(root, "study_server/static/gridstudy/engine.mjs"));

// An error is printed as its message alone (a Python traceback, or Node's own): Node
// would otherwise print a line of Pyodide's minified source.
try {
  const archive = readFileSync(process.argv[2]);
  const jobs = JSON.parse(readFileSync(0, "utf8"));
  const began = performance.now();
  const engine = await startEngine(loadPyodide, archive);
  const loaded = performance.now() - began;
  const results = engine.replay(jobs);
  process.stdout.write(JSON.stringify({ load_ms: Math.round(loaded), results }) + "\n");
} catch (error) {
  process.stderr.write(`${error.message ?? error}\n`);
  process.exit(1);
}
