/**
 * An SQLite store whose disk fills, or whose files turn read-only, while the fleet runs: a real filesystem
 * that refuses writes (a small tmpfs mounted for the test and filled up; files made immutable with chattr,
 * which even root's open descriptors cannot write through). The fleet keeps answering turns, the store shows `degraded` in
 * its info and the report log, and once the disk takes writes again every acknowledged turn is on it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Schedule, Scope } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Flotta } from "../packages/core/src/Flotta.js"
import * as Sqlite from "../packages/core/src/Sqlite.js"
import * as SqliteStore from "../packages/core/src/SqliteStore.js"
import * as Testing from "../packages/core/src/Testing.js"

let mount: string
beforeAll(() => {
  mount = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-disk-"))
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mount], { stdio: "pipe" })
  } catch (error) {
    throw new Error(
      `test/store-faults.test.ts mounts a 4 MiB tmpfs to fill a real disk, and could not: ${String(error)}`
    )
  }
})
afterAll(() => {
  if (mount === undefined) return
  try {
    execFileSync("umount", ["-l", mount], { stdio: "pipe" })
  } finally {
    fs.rmSync(mount, { recursive: true, force: true })
  }
})

/** Fills the disk: a file grows until the filesystem says it is full. */
const fill = (file: string) => {
  const chunk = Buffer.alloc(64 * 1024, 1)
  const fd = fs.openSync(file, "w")
  try {
    for (;;) fs.writeSync(fd, chunk)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error
  } finally {
    fs.closeSync(fd)
  }
}

const until = (check: Effect.Effect<boolean>, what: string, ms = 30_000) =>
  check.pipe(
    Effect.flatMap((ok) => (ok ? Effect.void : Effect.fail(what))),
    Effect.retry({ schedule: Schedule.spaced("50 millis"), times: ms / 50 }),
    Effect.orElse(() => Effect.dieMessage(`timed out waiting for ${what}`))
  )

const fleetOn = (file: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(Testing.layer({ store: SqliteStore.layer(file) }), scope).pipe(
      Effect.orDie
    )
    return { fleet: Context.get(context, Flotta), close: Scope.close(scope, Exit.void) }
  })

const committedResults = (file: string) => {
  const db = Sqlite.openSync(file, { readOnly: true })
  try {
    return Number(db.prepare("select count(*) as n from flotta_turns where status = 'succeeded'").all()[0]!["n"])
  } finally {
    db.close()
  }
}

describe("a store that refuses writes while the fleet runs", () => {
  for (const fault of ["a full disk", "read-only files"] as const) {
    it.scopedLive(
      `${fault}: turns go on, the store shows degraded, and nothing acknowledged is lost`,
      () =>
        Effect.gen(function*() {
          const dir = fault === "a full disk"
            ? path.join(mount, "full")
            : fs.mkdtempSync(path.join(os.tmpdir(), "flotta-ro-"))
          const file = path.join(dir, "state.db")
          const { close, fleet } = yield* fleetOn(file)
          yield* fleet.spawn("a")
          assert.strictEqual(yield* fleet.ask("a", "before"), "echo: before")
          assert.strictEqual((yield* fleet.store).health.state, "ok")

          const filler = path.join(mount, "filler")
          const files = [file, `${file}-wal`]
          const heal = () => {
            if (fault === "a full disk") fs.rmSync(filler, { force: true })
            else execFileSync("chattr", ["-i", ...files])
          }
          yield* Effect.addFinalizer(() => Effect.sync(heal))
          if (fault === "a full disk") fill(filler)
          else execFileSync("chattr", ["+i", ...files])
          // Enough writes to outgrow the free pages the database file already has.
          for (let i = 0; i < 200; i++) {
            const reply = yield* fleet.ask("a", `during ${i} ${"x".repeat(2000)}`)
            assert.strictEqual(reply.slice(0, 12), "echo: during")
          }
          yield* until(Effect.map(fleet.store, (s) => s.health.state === "degraded"), "the store to show degraded")
          const info = yield* fleet.store
          assert.isAbove(info.health.pending, 0)
          assert.match(info.health.reason ?? "", fault === "a full disk" ? /full/i : /I\/O error/i)
          const log = yield* fleet.reports({ agent: "store", kinds: ["store_degraded"] })
          assert.strictEqual(log.entries.length, 1)

          heal()
          yield* until(Effect.map(fleet.store, (s) => s.health.state === "ok"), "the store to recover", 60_000)
          assert.strictEqual((yield* fleet.reports({ agent: "store", kinds: ["store_recovered"] })).entries.length, 1)
          yield* close
          assert.strictEqual(committedResults(file), 201, "every turn acknowledged to a caller is in the store")
        }),
      120_000
    )
  }
})
