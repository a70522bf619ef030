/**
 * How fast the `flotta` command answers, and what its install weighs, on the packed install: `flotta` packed with
 * `npm pack` (its prepack bundles the workspace) and installed globally with this machine's npm, as a user would.
 * Each command is timed as a whole process, the commands alternating, against `node -e 1` measured in the same
 * run; with `FLOTTA_BENCH_BASELINE` set to an older install's prefix (its `bin/flotta`), against that too.
 *   npx tsx bench/startup.ts                         (BENCH_RUNS=15 of each)
 *   FLOTTA_BENCH_BASELINE=/tmp/base/global npx tsx bench/startup.ts
 * Targets (issue 33): `--version` and `--help` at most 0.25 s; a client command (`flotta list`) at most 0.5 s
 * beside the server's own time for the same calls; `flotta run --simulate` at most 0.5 s of its own before the
 * claude child starts; the global install at most 600 MB, one copy of each dependency.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fmtMs, fmtRatio, isMain, main, median, ROOT, type Row, row, targetRow } from "./lib.js"

const RUNS = Number(process.env["BENCH_RUNS"] ?? 15)
const BASELINE = process.env["FLOTTA_BENCH_BASELINE"]
const MB = 1024 * 1024

/** Wall time of one process, start to exit, in ms. */
const timed = (command: string, args: ReadonlyArray<string>, options: { cwd: string; env?: NodeJS.ProcessEnv }) =>
  new Promise<number>((resolve, reject) => {
    const started = performance.now()
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: "ignore" })
    child.once("error", reject)
    child.once(
      "exit",
      (code) =>
        code === 0 ? resolve(performance.now() - started) : reject(new Error(`${command} ${args.join(" ")}: ${code}`))
    )
  })

/** Runs each probe RUNS times, alternating, after one warm-up each; the median of each. */
const medians = async (probes: ReadonlyArray<() => Promise<number>>) => {
  for (const probe of probes) await probe()
  const times = probes.map(() => [] as Array<number>)
  for (let i = 0; i < RUNS; i++) {
    for (const [j, probe] of probes.entries()) times[j]!.push(await probe())
  }
  return times.map(median)
}

/** The bytes of the files under `root` (a hard link counted once), and how many copies of `effect` it holds. */
const weigh = (root: string) => {
  const seen = new Set<number>()
  let bytes = 0
  let effects = 0
  const walk = (at: string) => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      const file = path.join(at, entry.name)
      if (entry.isDirectory()) {
        if (entry.name === "effect" && path.basename(at) === "node_modules") effects++
        walk(file)
      } else if (entry.isFile()) {
        const stat = fs.statSync(file)
        if (seen.has(stat.ino)) continue
        seen.add(stat.ino)
        bytes += stat.size
      }
    }
  }
  walk(root)
  return { bytes, effects }
}

/** An ES module loader hook that notes each file it resolves, synchronously (a process may exit at any time). */
const loader = (log: string) =>
  `import { appendFileSync } from "node:fs"
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  if (resolved.url.startsWith("file:") && /\\.[cm]?js$/.test(resolved.url)) appendFileSync(${
    JSON.stringify(log)
  }, resolved.url + "\\n")
  return resolved
}
`
/** The JavaScript files a command loads, each once (the hook sees ES modules; the bundle has no require of its own). */
const countLoaded = (bin: string, args: ReadonlyArray<string>, cwd: string, hook: string, log: string) => {
  fs.rmSync(log, { force: true })
  spawnSync(process.execPath, ["--import", hook, bin, ...args], { cwd, encoding: "utf8" })
  return fs.existsSync(log) ? new Set(fs.readFileSync(log, "utf8").split("\n").filter((l) => l.length > 0)).size : 0
}

/** A serve of `bin` in `cwd` on a free port; resolves once it says it is up. */
const startServe = (bin: string, cwd: string, port: number) =>
  new Promise<ChildProcess>((resolve, reject) => {
    fs.writeFileSync(
      path.join(cwd, "flotta.config.json"),
      JSON.stringify({ agents: [{ name: "scout" }], mcp: { port }, store: "memory" })
    )
    const child = spawn(bin, ["serve", "--simulate"], { cwd, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr!.on("data", (d) => {
      stderr += d
      if (stderr.includes("flotta serve:")) resolve(child)
    })
    child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${stderr}`)))
  })

/** The server's own time for what `flotta list` asks of it: initialize, the tool call, the session's end. */
const serverTime = async (port: number) => {
  const url = `http://127.0.0.1:${port}/mcp`
  const started = performance.now()
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" }
  const init = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "0" } }
    })
  })
  await init.text()
  const session = init.headers.get("mcp-session-id")
  const withSession = session === null ? headers : { ...headers, "mcp-session-id": session }
  await (await fetch(url, {
    method: "POST",
    headers: withSession,
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
  })).text()
  const call = await fetch(url, {
    method: "POST",
    headers: withSession,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "flotta_list", arguments: {} }
    })
  })
  const text = await call.text()
  if (!text.includes("scout")) throw new Error(`flotta_list answered ${text}`)
  if (session !== null) await (await fetch(url, { method: "DELETE", headers: withSession })).text()
  return performance.now() - started
}

/** Time from the command's start to its claude child's start: the wrapper writes when it is started. */
const ownTimeBeforeChild = (bin: string, cwd: string, wrapper: string, mark: string) => async () => {
  fs.rmSync(mark, { force: true })
  const started = Date.now()
  await timed(bin, ["run", "--simulate", "hi"], { cwd, env: { ...process.env, FLOTTA_CLAUDE_PATH: wrapper } })
  return Number(fs.readFileSync(mark, "utf8").trim()) - started
}

export const run = () =>
  main("startup", "Command start-up and install size (the packed flotta, installed globally)", async () => {
    const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-bench-startup-")))
    const serves: Array<ChildProcess> = []
    try {
      const tarballs = path.join(work, "tarballs")
      fs.mkdirSync(tarballs)
      execFileSync("npm", ["pack", "--workspace", "packages/flotta", "--pack-destination", tarballs], {
        cwd: ROOT,
        stdio: "ignore"
      })
      const tarball = path.join(tarballs, fs.readdirSync(tarballs)[0]!)
      const prefix = path.join(work, "global")
      execFileSync("npm", ["install", "-g", "--prefix", prefix, "--no-audit", "--no-fund", tarball], {
        stdio: "ignore"
      })
      const bin = path.join(prefix, "bin", "flotta")
      const project = path.join(work, "project")
      fs.mkdirSync(project)
      const hook = path.join(work, "hook.mjs")
      const loaded = path.join(work, "loaded.txt")
      fs.writeFileSync(path.join(work, "loader.mjs"), loader(loaded))
      fs.writeFileSync(
        hook,
        `import { register } from "node:module"\nregister(${
          JSON.stringify(path.join(work, "loader.mjs"))
        }, import.meta.url)\n`
      )
      const node = () => timed(process.execPath, ["-e", "1"], { cwd: project })
      const baseline = BASELINE === undefined ? undefined : path.join(BASELINE, "bin", "flotta")
      const rows: Array<Row> = []
      const notes: Array<string> = []

      // --version and --help: the command, node -e 1, and the baseline's.
      for (const args of [["--version"], ["--help"]]) {
        const probes = [() => timed(bin, args, { cwd: project }), node]
        if (baseline !== undefined) probes.push(() => timed(baseline, args, { cwd: project }))
        const [mine = 0, bare = 0, before] = await medians(probes)
        rows.push(targetRow(
          `flotta ${args[0]}`,
          fmtMs(mine, 0),
          `node -e 1: ${fmtMs(bare, 0)}`,
          fmtRatio(mine, bare),
          "≤ 250 ms",
          mine <= 250
        ))
        if (before !== undefined) {
          rows.push(
            row(`flotta ${args[0]}, before (baseline install)`, fmtMs(before, 0), "", `${fmtRatio(mine, before)} of it`)
          )
        }
      }
      const files = countLoaded(bin, ["--version"], project, hook, loaded)
      const baseFiles = baseline === undefined ? undefined : countLoaded(baseline, ["--version"], project, hook, loaded)
      rows.push(row(
        "JavaScript files loaded by --version",
        String(files),
        baseFiles === undefined ? "" : `before: ${baseFiles}`
      ))

      // A client command against a running serve, beside the server's own time for the same calls.
      const port = 40_000 + Math.floor(Math.random() * 20_000)
      serves.push(await startServe(bin, project, port))
      const [list = 0, server = 0, bare = 0] = await medians([
        () => timed(bin, ["list"], { cwd: project }),
        () => serverTime(port),
        node
      ])
      rows.push(targetRow(
        "flotta list, its own time (the whole command − the server's time)",
        fmtMs(list - server, 0),
        `server: ${fmtMs(server, 0)}; node -e 1: ${fmtMs(bare, 0)}`,
        fmtRatio(list - server, bare),
        "≤ 500 ms",
        list - server <= 500
      ))
      if (baseline !== undefined) {
        const baseProject = path.join(work, "baseline-project")
        fs.mkdirSync(baseProject)
        const basePort = port + 1
        serves.push(await startServe(baseline, baseProject, basePort))
        const [before = 0, baseServer = 0] = await medians([
          () => timed(baseline, ["list"], { cwd: baseProject }),
          () => serverTime(basePort)
        ])
        rows.push(row(
          "flotta list, before (baseline install)",
          fmtMs(before - baseServer, 0),
          `server: ${fmtMs(baseServer, 0)}`,
          `${fmtRatio(list - server, before - baseServer)} of it`
        ))
      }
      for (const serve of serves.splice(0)) serve.kill("SIGTERM")

      // flotta run --simulate: its own time before the claude child starts (a wrapper notes when it starts).
      const mark = path.join(work, "child-started")
      const wrapper = path.join(work, "claude-wrapper.sh")
      const claude = path.join(prefix, "lib", "node_modules", "flotta", "node_modules", "@anthropic-ai")
      const real = path.join(claude, fs.readdirSync(claude).find((d) => d.startsWith("claude-code-"))!, "claude")
      fs.writeFileSync(wrapper, `#!/bin/sh\ndate +%s%3N > ${mark}\nexec ${real} "$@"\n`)
      fs.chmodSync(wrapper, 0o755)
      const probes = [ownTimeBeforeChild(bin, project, wrapper, mark), node]
      if (baseline !== undefined) probes.push(ownTimeBeforeChild(baseline, project, wrapper, mark))
      const [runOwn = 0, bareRun = 0, runBefore] = await medians(probes)
      rows.push(targetRow(
        "flotta run --simulate: its own time before the claude child starts",
        fmtMs(runOwn, 0),
        `node -e 1: ${fmtMs(bareRun, 0)}`,
        fmtRatio(runOwn, bareRun),
        "≤ 500 ms",
        runOwn <= 500
      ))
      if (runBefore !== undefined) {
        rows.push(row(
          "flotta run --simulate before the child, before (baseline install)",
          fmtMs(runBefore, 0),
          "",
          `${fmtRatio(runOwn, runBefore)} of it`
        ))
      }

      // The install.
      const installed = weigh(prefix)
      const binary = fs.statSync(real).size
      const before = BASELINE === undefined ? undefined : weigh(BASELINE)
      rows.push(targetRow(
        "global install size",
        `${(installed.bytes / MB).toFixed(0)} MB`,
        `the claude binary: ${(binary / MB).toFixed(0)} MB`,
        fmtRatio(installed.bytes, binary),
        "≤ 600 MB",
        installed.bytes <= 600 * MB
      ))
      rows.push(targetRow(
        "copies of effect installed",
        String(installed.effects),
        before === undefined ? "" : `before: ${before.effects}`,
        "",
        "1",
        installed.effects === 1
      ))
      if (before !== undefined) {
        rows.push(
          row(
            "global install size, before (baseline install)",
            `${(before.bytes / MB).toFixed(0)} MB`,
            "",
            `${fmtRatio(installed.bytes, before.bytes)} of it`
          )
        )
      }
      notes.push(
        `Each figure is the median of ${RUNS} runs, the probes alternating; wall times of whole processes on ` +
          `Node ${process.version} (the compile cache of Node 22 and later makes a second start faster still).`
      )
      if (BASELINE === undefined) {
        notes.push("No baseline install given (FLOTTA_BENCH_BASELINE): ratios against node -e 1 only.")
      }
      return {
        method: "Global install of the packed tarball; commands timed as whole processes against `node -e 1` " +
          "(and an older install's, when given) in the same run.",
        rows,
        notes
      }
    } finally {
      for (const serve of serves) serve.kill("SIGTERM")
      fs.rmSync(work, { recursive: true, force: true })
    }
  })

if (isMain(import.meta.url)) await run()
