import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Flotta from "../src/Flotta.js"

export const FAKE_CLAUDE = path.join(import.meta.dirname, "fixtures", "fake-claude.mjs")

/** The whole engine over the fake CLI script. */
export const fakeFleet = (options: Flotta.FleetOptions = {}) =>
  Flotta.layer({ executable: { command: process.execPath, prefixArgs: [FAKE_CLAUDE] }, ...options })

/** A fresh directory for one test, removed when its scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "flotta-test-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Whether a process id is still running. */
export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Polls (real time) until a process is gone, up to a deadline. */
export const waitGone = (pid: number, ms = 5000) =>
  Effect.promise(async () => {
    const end = Date.now() + ms
    while (Date.now() < end) {
      if (!isAlive(pid)) return true
      await new Promise((r) => setTimeout(r, 25))
    }
    return !isAlive(pid)
  })
