/**
 * The SQLite store never aborts the process: core's Sqlite client under a workload that kills a process using
 * better-sqlite3 12 on Node 24.19 and later (thousands of distinct statements through a small prepare cache,
 * forced GCs, idle time between bursts, in the host and in worker threads; test/fixtures/sqlite-stress.ts). It
 * must exit 0 on whichever driver this Node uses.
 *
 * The control: on Node 24.19 and later, where better-sqlite3 12 loads (the repository's own, built for this Node
 * by the install, or the copy FLOTTA_STRESS_BETTER_SQLITE3 names), the same workload on better-sqlite3 must abort
 * with the native assertion, in the host alone and in the workers alone; otherwise the output says why it did not
 * run.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as path from "node:path"

const ROOT = path.join(import.meta.dirname, "..")
const FIXTURE = path.join(ROOT, "test", "fixtures", "sqlite-stress.ts")
const ASSERTION = "RemoveEnvironmentCleanupHook"

interface Ran {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

const stress = (args: ReadonlyArray<string>) =>
  new Promise<Ran>((resolve, reject) => {
    const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", FIXTURE, ...args], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += String(chunk)))
    child.stderr.on("data", (chunk) => (stderr += String(chunk)))
    child.on("error", reject)
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
  })

const lastJson = (ran: Ran) => {
  const line = ran.stdout.trim().split("\n").at(-1) ?? ""
  try {
    return JSON.parse(line) as Record<string, unknown>
  } catch {
    return undefined
  }
}

const [major, minor] = process.versions.node.split(".").map(Number) as [number, number]
const abortsHere = major > 24 || (major === 24 && minor >= 19)
const hasNodeSqlite = process.getBuiltinModule?.("node:sqlite") !== undefined

describe("the SQLite client under GC pressure", () => {
  it(
    "runs thousands of short-lived statements, forced GCs and idle time in the host and in workers, and exits 0",
    async () => {
      const ran = await stress([])
      assert.isNull(ran.signal, `the stress run died by ${ran.signal}: ${ran.stderr.slice(-3000)}`)
      assert.strictEqual(ran.code, 0, ran.stderr.slice(-3000))
      assert.notInclude(ran.stderr, ASSERTION)
      const summary = lastJson(ran)!
      if (hasNodeSqlite) assert.strictEqual(summary["driver"], "node:sqlite")
      else assert.match(String(summary["driver"]), /^better-sqlite3 12\./)
      assert.isAtLeast(Number(summary["statements"]), 20_000)
      const workers = summary["workers"] as Record<string, { readonly statements: number; readonly exitCode: number }>
      assert.strictEqual(workers["closed"]!.exitCode, 0, "the worker that closed its database exited by itself")
      assert.strictEqual(workers["terminated"]!.exitCode, 1, "the worker with its database open was terminated")
      assert.isAbove(workers["closed"]!.statements, 0)
      assert.isAbove(workers["terminated"]!.statements, 0)
      console.log(
        `stress on ${summary["driver"]} (Node ${process.versions.node}): ${summary["statements"]} statements in ` +
          `${summary["seconds"]} s, host and 2 workers`
      )

      if (!abortsHere) {
        console.log(
          `control not run: Node ${process.versions.node} is older than 24.19, where better-sqlite3 12 aborts`
        )
        return
      }
      const from = process.env["FLOTTA_STRESS_BETTER_SQLITE3"] ?? "better-sqlite3"
      for (const parts of ["host", "workers"]) {
        const control = await stress(["--driver", from, "--parts", parts])
        const unavailable = lastJson(control)?.["unavailable"]
        if (control.code === 3 && unavailable !== undefined) {
          console.log(`control not run: better-sqlite3 does not load on Node ${process.versions.node}: ${unavailable}`)
          return
        }
        assert.strictEqual(
          control.signal,
          "SIGABRT",
          `the same workload (${parts}) on better-sqlite3 12 should abort on Node ${process.versions.node}; ` +
            `it exited ${control.code}: ${control.stdout.slice(-500)} ${control.stderr.slice(-1500)}`
        )
        assert.include(control.stderr, ASSERTION)
        assert.include(control.stderr, "Statement::~Statement")
        console.log(`control (${parts}): better-sqlite3 12 aborted with the ${ASSERTION} assertion, as expected`)
      }
    },
    180_000
  )
})
