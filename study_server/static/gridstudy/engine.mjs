// The engine in the participant's browser: Pyodide running gridstudy's own `tasks`
// package (the archive the server builds, study_server/engine.py), so that the page
// steps the very code the server replays to check it. The same module loads the engine
// under Node for the tests and the benchmarks: the caller passes Pyodide's
// `loadPyodide` and the archive's bytes, since where they come from differs.

export async function startEngine(loadPyodide, archive, options = {}) {
  const pyodide = await loadPyodide(options);
  pyodide.unpackArchive(new Uint8Array(archive), "zip", { extractDir: "/engine" });
  // the researcher's library, when the archive holds one, is the engine's library too
  pyodide.runPython([
    "import os, sys",
    "if '/engine' not in sys.path: sys.path.insert(0, '/engine')",
    "os.environ['GRIDSTUDY_LIBRARY'] = '/engine/userlib'",
  ].join("\n"));
  const verify = pyodide.pyimport("tasks.worldtest.verify");
  return {
    pyodide,
    // Each job ({problem, actions}) replayed here: its frame hashes and step time.
    replay: (jobs) => JSON.parse(verify.replay_jobs(JSON.stringify(jobs))),
    // An attempt ticked here (tasks.worldtest.verify.LocalPlay): `record` is what the
    // server holds of it ({actions, next}), to rebuild a page that was left.
    play: (problemId, record) => verify.LocalPlay(problemId, JSON.stringify(record)),
  };
}
