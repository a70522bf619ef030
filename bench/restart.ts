/**
 * A restart of a host with 100 real sessions: the host (bench/support/restart-host.ts) starts them over an
 * SQLite store and teaches each a fact; it is killed with SIGKILL; a new host opens the store. Measured: the
 * time from the new host's start until every agent is back (`--resume`, admitted a few at a time), against
 * the time the first host took to start the same sessions fresh, in the same run.
 *   npx tsx bench/restart.ts        (BENCH_RESTART_AGENTS=100)
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as readline from "node:readline"
import * as Sqlite from "../packages/core/src/Sqlite.js"
import { fmtRatio, fmtS, isMain, main, ROOT, row } from "./lib.js"

const AGENTS = Number(process.env["BENCH_RESTART_AGENTS"] ?? 100)

const host = (args: ReadonlyArray<string>) => {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(ROOT, "bench/support/restart-host.ts"), ...args],
    {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"]
    }
  )
  const lines: Array<Record<string, unknown>> = []
  readline.createInterface({ input: child.stdout }).on("line", (line) => {
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>)
    } catch {
      // a log line
    }
  })
  const wait = async <T>(key: string, ms: number): Promise<T> => {
    const end = Date.now() + ms
    for (;;) {
      const found = lines.find((l) => key in l)
      if (found !== undefined) return found[key] as T
      if (child.exitCode !== null || Date.now() > end) throw new Error(`the host gave no "${key}"`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  return { child, wait }
}

const startApi = async () => {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/support/fake-api.ts")], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "inherit"]
  })
  const first = await readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]().next()
  const { url } = JSON.parse(String(first.value)) as { readonly url: string }
  return { url, stop: () => child.stdin.end() }
}

const committedTurns = (db: string) => {
  try {
    const database = Sqlite.openSync(db, { readOnly: true })
    try {
      return Number(
        database.prepare("select count(*) as n from flotta_turns where status = 'succeeded'").all()[0]!["n"]
      )
    } finally {
      database.close()
    }
  } catch {
    return 0
  }
}

export const run = () =>
  main("restart", `Restart of the host (${AGENTS} real claude sessions, SQLite store, kill -9)`, async () => {
    const notes: Array<string> = []
    const api = await startApi()
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-bench-restart-"))
    const db = path.join(root, "state.db")
    try {
      const first = host(["spawn", db, root, api.url, String(AGENTS)])
      const spawnMs = await first.wait<number>("spawnMs", 900_000)
      await first.wait("taught", 900_000)
      // Everything the first host acknowledged is committed (within milliseconds); then it dies.
      for (let i = 0; committedTurns(db) < AGENTS && i < 600; i++) await new Promise((r) => setTimeout(r, 100))
      first.child.kill("SIGKILL")
      await new Promise((r) => first.child.once("exit", r))

      const second = host(["resume", db, root, api.url, String(AGENTS)])
      const restoreMs = await second.wait<number>("restoreMs", 900_000)
      const restored = await second.wait<number>("restored", 1_000)
      const closed = await second.wait<ReadonlyArray<unknown>>("closed", 1_000)
      const remembered = await second.wait<number>("remembered", 900_000)
      await second.wait("done", 300_000)
      if (restored !== AGENTS) notes.push(`MISS: ${restored} of ${AGENTS} came back; closed: ${JSON.stringify(closed)}`)
      if (remembered !== AGENTS) notes.push(`MISS: ${remembered} of ${AGENTS} remembered their fact.`)
      notes.push(
        `All ${restored} came back and ${remembered} of ${AGENTS} recalled the fact they were taught before the ` +
          "kill. The restore time includes the new host's start (Node, the store, its migrations check)."
      )
      return {
        method: `A host process starts ${AGENTS} real sessions (offline, the fake Messages API in its own ` +
          `process) over an SQLite store, teaches each a fact, and is killed with SIGKILL once the store has every ` +
          "turn. A new host opens the store: timed from its process start until `restored()` answers (every " +
          "agent resumed with `--resume`, default admission). Baseline: the first host's time to start the same " +
          `${AGENTS} sessions fresh, in the same run. Then each resumed agent is asked to RECALL its fact.`,
        rows: [
          row(`start ${AGENTS} fresh sessions (baseline)`, fmtS(spawnMs), "", "1.00×"),
          row(
            `all ${AGENTS} resumed after kill -9`,
            fmtS(restoreMs),
            `${fmtS(spawnMs)} fresh`,
            fmtRatio(restoreMs, spawnMs)
          )
        ],
        notes
      }
    } finally {
      api.stop()
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

if (isMain(import.meta.url)) void run()
