/**
 * Run overhead: a one-shot run through flotta (`fleet.run`: a duplex child, initialize, one turn, close) against
 * the same task as the raw CLI command line (`claude -p ... --output-format json`), both on the real pinned CLI
 * and the fake Messages API, alternating in one run. Target: under 5 % above the raw run.
 *   npx tsx bench/run-overhead.ts        (BENCH_RUNS=15 of each)
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createFleet } from "../packages/core/src/Client.js"
import { offlineEnv, startFakeMessagesApi } from "../test/support/FakeMessagesApi.js"
import { CLAUDE, fmtMs, fmtRatio, isMain, main, median, row, targetRow } from "./lib.js"

const RUNS = Number(process.env["BENCH_RUNS"] ?? 15)
const PROMPT = "ECHO hi"
const EXPECTED = "ECHO: hi"

/** The raw command line, as a user would type it (stdin closed so -p does not wait for piped input). */
const rawRun = (cwd: string, env: Record<string, string>) =>
  new Promise<number>((resolve, reject) => {
    const started = performance.now()
    const child = execFile(
      CLAUDE,
      ["-p", PROMPT, "--output-format", "json", "--tools", "Read,Glob,Grep", "--allowedTools", "Read,Glob,Grep"],
      { cwd, env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout) => {
        if (error !== null) return reject(error)
        const result = JSON.parse(stdout) as { readonly result?: string }
        if (result.result !== EXPECTED) return reject(new Error(`raw run answered ${stdout}`))
        resolve(performance.now() - started)
      }
    )
    child.stdin?.end()
  })

export const run = () =>
  main("run-overhead", "Run overhead (real CLI, one-shot run vs the raw command line)", async () => {
    const api = await startFakeMessagesApi()
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-bench-run-"))
    const env = offlineEnv(api, root)
    const cwd = path.join(root, "work")
    fs.mkdirSync(cwd)
    const fleet = createFleet({ claudePath: CLAUDE, env })
    const flottaRun = async () => {
      const started = performance.now()
      const result = await fleet.run({ prompt: PROMPT, cwd })
      if (result.text !== EXPECTED) throw new Error(`flotta run answered ${result.text}`)
      return performance.now() - started
    }
    try {
      // Warm the page cache and the CLI's config directory for both.
      await rawRun(cwd, env)
      await flottaRun()
      const raw: Array<number> = []
      const flotta: Array<number> = []
      for (let i = 0; i < RUNS; i++) {
        raw.push(await rawRun(cwd, env))
        flotta.push(await flottaRun())
      }
      const rawP50 = median(raw)
      const flottaP50 = median(flotta)
      const overhead = flottaP50 / rawP50 - 1
      const pass = overhead < 0.05
      return {
        method: `${RUNS} runs of each, alternating, after one warm-up each: wall time from spawn to the answer ` +
          `(flotta: fleet.run, which starts a duplex session, sends initialize and one turn, then closes it; raw: ` +
          `\`claude -p "${PROMPT}" --output-format json\` with the same read-only tool flags).`,
        rows: [
          row("raw CLI run p50 (baseline)", fmtMs(rawP50, 1), "", "1.00×"),
          row("flotta run p50", fmtMs(flottaP50, 1), `${fmtMs(rawP50, 1)} raw`, fmtRatio(flottaP50, rawP50)),
          targetRow(
            "flotta run overhead p50",
            `${(overhead * 100).toFixed(1)} %`,
            `${fmtMs(rawP50, 1)} raw`,
            fmtRatio(flottaP50, rawP50),
            "< 5 %",
            pass
          )
        ],
        notes: [
          `Means: raw ${fmtMs(raw.reduce((a, b) => a + b, 0) / RUNS, 1)}, flotta ` +
          `${fmtMs(flotta.reduce((a, b) => a + b, 0) / RUNS, 1)}.`,
          ...(pass ? [] : [
            `MISS: a flotta run takes ${(overhead * 100).toFixed(1)} % longer than the raw command line. ` +
            "Part is the duplex session's own cost (initialize, then stdin EOF and the exit wait at close) that a " +
            "one-shot `-p` run does not pay."
          ])
        ]
      }
    } finally {
      await fleet.shutdown()
      await api.close()
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

if (isMain(import.meta.url)) await run()
