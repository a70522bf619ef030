/**
 * A host that dies (kill -9) or is stopped (SIGTERM) mid-turn, and starts again over the same SQLite store,
 * with the real claude CLI against the simulator: the agent comes back under its name and remembers the fact
 * it was taught, the queued question runs, the turn in flight ends as HostRestarted, the report cursor goes
 * on. After kill -9 the dead host's child is still waiting on its turn (a CLI with nothing to write does not
 * notice that its pipes are gone): the new host ends it before anything resumes.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import type { RestoreReport } from "../packages/core/src/Restore.js"
import * as Sqlite from "../packages/core/src/Sqlite.js"
import type { StoreInfo } from "../packages/core/src/Store.js"
import { CLAUDE, isAlive, ROOT, useOfflineApi, waitUntil } from "./support/realCli.js"

const offline = useOfflineApi("flotta-restart")
const HOST = path.join(ROOT, "test", "fixtures", "durable-host.mjs")

interface Host {
  readonly child: ChildProcess
  readonly lines: Array<Record<string, unknown>>
  readonly stderr: Array<string>
  readonly line: <T>(key: string, ms: number) => Promise<T>
}

/** What a test started: killed after it, so a test that fails midway leaves no host and no child behind. */
const started = { hosts: new Set<ChildProcess>(), children: new Set<number>() }
afterEach(() => {
  for (const host of started.hosts) host.kill("SIGKILL")
  for (const pid of started.children) if (isAlive(pid)) process.kill(pid, "SIGKILL")
  started.hosts.clear()
  started.children.clear()
})

const startHost = (dir: string, phase: "teach" | "resume"): Host => {
  const child = spawn(process.execPath, [HOST, CLAUDE, dir, path.join(dir, "state.db"), phase], {
    cwd: ROOT,
    env: { ...process.env, ...offline.env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const lines: Array<Record<string, unknown>> = []
  const stderr: Array<string> = []
  readline.createInterface({ input: child.stdout! }).on("line", (l) => {
    try {
      lines.push(JSON.parse(l))
    } catch {
      stderr.push(l)
    }
  })
  child.stderr!.on("data", (d) => stderr.push(String(d)))
  const line = async <T>(key: string, ms: number): Promise<T> => {
    await waitUntil(
      () => lines.some((l) => key in l) || child.exitCode !== null,
      ms,
      `"${key}" from the ${phase} host (stderr: ${stderr.join("").slice(-2000)})`
    )
    const found = lines.find((l) => key in l)
    if (found === undefined) {
      throw new Error(`the ${phase} host exited without "${key}": ${stderr.join("").slice(-2000)}`)
    }
    return found[key] as T
  }
  started.hosts.add(child)
  return { child, lines, stderr, line }
}

const turnStatus = (db: string, turnId: string) => {
  const database = Sqlite.openSync(db, { readOnly: true })
  try {
    const row = database.prepare("select status from flotta_turns where agent = 'mem' and turn_id = ?").all([turnId])[0]
    return row?.["status"] as string | undefined
  } catch {
    return undefined
  } finally {
    database.close()
  }
}

describe("a restart of the host with the real claude CLI", () => {
  for (const signal of ["SIGKILL", "SIGTERM"] as const) {
    it(`after ${signal} mid-turn, the fleet comes back whole`, async () => {
      const dir = path.join(offline.root, signal.toLowerCase())
      fs.mkdirSync(dir, { recursive: true })
      const teach = startHost(dir, "teach")
      const orphan = await teach.line<number>("pid", 90_000)
      started.children.add(orphan)
      assert.strictEqual(await teach.line("taught", 90_000), "OK, I will remember that.")
      const cursor = await teach.line<number>("cursor", 30_000)
      await teach.line("ready", 30_000)
      // The hanging turn is at the model, and the store has it as running: now the host goes.
      const marker = `HANG ${signal.toLowerCase()}`
      await waitUntil(
        () => offline.api.requests.some((r) => JSON.stringify(r.body).includes(marker)),
        60_000,
        "the hanging turn to reach the model"
      )
      await waitUntil(() => turnStatus(path.join(dir, "state.db"), "t2") === "running", 30_000, "t2 in the store")
      teach.child.kill(signal)
      await waitUntil(() => teach.child.exitCode !== null || teach.child.signalCode !== null, 30_000, "the host to go")
      if (signal === "SIGKILL") {
        assert.isTrue(
          isAlive(orphan),
          `kill -9 leaves the child running its turn (${teach.stderr.join("").slice(-1500)})`
        )
      } else assert.isFalse(isAlive(orphan), "a graceful stop takes its children with it")

      const resume = startHost(dir, "resume")
      const restored = await resume.line<RestoreReport>("restored", 120_000)
      assert.deepStrictEqual(restored.restored.map((r) => [r.name, r.queued]), [["mem", 1]])
      assert.deepStrictEqual(restored.interruptedTurns, [{ name: "mem", turnId: "t2" }])
      if (signal === "SIGKILL") {
        assert.deepStrictEqual(restored.orphansEnded, [{ name: "mem", pid: orphan }])
      }
      assert.isFalse(isAlive(orphan), "no orphan outlives the restart")
      const info = await resume.line<{ pid: number }>("info", 30_000)
      assert.notStrictEqual(info.pid, orphan)
      assert.strictEqual(await resume.line("recall", 120_000), "The fact is: the code is 42")
      const inFlight = await resume.line<{ _tag: string }>("inFlight", 30_000)
      assert.strictEqual(inFlight._tag, "HostRestarted")
      assert.deepStrictEqual(await resume.line("transcript", 30_000), [
        ["t1", "succeeded", null],
        ["t2", "failed", "HostRestarted"],
        ["t3", "succeeded", null]
      ])
      const reports = await resume.line<Array<[number, string, string | null]>>("reports", 30_000)
      const seqs = reports.map(([seq]) => seq)
      assert.deepStrictEqual(seqs, [...seqs].sort((a, b) => a - b), "one cursor, in order")
      const after = reports.filter(([seq]) => seq > cursor)
      assert.includeDeepMembers(after.map(([, kind, turnId]) => [kind, turnId]), [
        ["error", "t2"],
        ["restored", null],
        ["result", "t3"]
      ])
      const store = await resume.line<StoreInfo>("store", 30_000)
      assert.strictEqual(store.kind, "sqlite")
      assert.strictEqual(store.health.state, "ok")
      await resume.line("done", 60_000)
      await waitUntil(() => resume.child.exitCode !== null, 30_000, "the resumed host to exit")
      // Everything ended as it should: nothing for afterEach to kill (the old pid may belong to another process).
      started.children.clear()
    }, 420_000)
  }
})
