/**
 * Test support. The unit ring runs the fleet over `Testing` (the in-memory Claude, no process): `scripted` is
 * its model for these tests, `eventually` waits for a condition without real time. `fakeFleet` and the process
 * helpers below serve the ring against the fake CLI script (test/core-fake-cli.test.ts and friends).
 */
import { NodeContext } from "@effect/platform-node"
import { it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type * as Agent from "../src/Agent.js"
import * as Flotta from "../src/Flotta.js"
import * as SqliteStore from "../src/SqliteStore.js"
import * as Testing from "../src/Testing.js"

/**
 * A small command language for prompts: `hang`, `slow <ms> <words>`, `crash [code]`, `error <status>`,
 * `tool <Name> [json]` (then `allowed <Name> <input>` or `denied <Name>: <why>`), `recall` (the earlier
 * prompts), anything else `echo: <prompt>`.
 */
export const scripted: Testing.Model = ({ history, prompt }) => {
  const [word = "", ...rest] = prompt.split(" ")
  switch (word) {
    case "hang":
      return Testing.hang()
    case "slow":
      return Testing.delay(`${Number(rest[0])} millis`, `slow done ${rest.slice(1).join(" ")}`.trim())
    case "crash":
      return Testing.crash({ exitCode: rest[0] === undefined ? 1 : Number(rest[0]) })
    case "error":
      return Testing.apiError(Number(rest[0]))
    case "tool": {
      const [tool = "Read", ...json] = rest
      const input = json.length === 0 ? {} : JSON.parse(json.join(" ")) as Record<string, unknown>
      return Testing.toolUse(
        tool,
        input,
        (d) => (d.behavior === "allow" ? `allowed ${tool} ${JSON.stringify(d.input)}` : `denied ${tool}: ${d.message}`)
      )
    }
    case "recall":
      return `earlier: ${history.join(" | ")}`
    default:
      return `echo: ${prompt}`
  }
}

/** The fleet over the in-memory Claude with the `scripted` model. */
export const memoryFleet = (options: Testing.Options = {}) => Testing.layer({ model: scripted, ...options })

/** The fleet with these agents spawned in order, all with the same options: how most tests start. */
export const withAgents = (names: string | ReadonlyArray<string>, options: Agent.AgentOptions = {}) =>
  Effect.gen(function*() {
    const fleet = yield* Flotta.Flotta
    for (const name of typeof names === "string" ? [names] : names) yield* fleet.spawn(name, options)
    return fleet
  })

/**
 * Tests each on a fleet of its own, built from `layer` for that test alone; a test's body is given the fleet. What
 * most tests here open and close with (`it.effect`, `yield* Flotta`, `Effect.provide`), said once.
 */
export const fleetTests =
  <LE>(layer: Layer.Layer<Flotta.Flotta, LE>) =>
  <A, E>(title: string, body: (fleet: Flotta.Flotta) => Effect.Effect<A, E, Flotta.Flotta>) =>
    it.effect(title, () => Effect.flatMap(Flotta.Flotta, body).pipe(Effect.provide(layer)))

/** What outlives one host, for a test of restarts: the session files (a disk) and the store's file. */
export interface Shared {
  readonly disk: Testing.Disk
  readonly file: string
}

/** A new disk and store file for a test of restarts. */
export const shared = (prefix = "flotta-host"): Shared => ({
  disk: Testing.disk(),
  file: path.join(fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`)), "state.db")
})

/** One host's life over `where`: the fleet built (with `options`), `body` run on it, then a graceful stop. */
export const host =
  (where: Shared, options: Testing.Options = {}) => <A, E>(body: (fleet: Flotta.Flotta) => Effect.Effect<A, E>) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        Testing.layer({ model: scripted, ...options, disk: where.disk, store: SqliteStore.layer(where.file) }),
        scope
      ).pipe(Effect.orDie)
      const exit = yield* Effect.exit(body(Context.get(context, Flotta.Flotta)))
      yield* Scope.close(scope, Exit.void)
      return yield* exit
    })

/** The typed failure of an exit, or its tag `success` / `defect`. */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isFailure(exit) && exit.cause._tag === "Fail") return exit.cause.error
  throw new Error(`expected a typed failure, got ${String(exit)}`)
}

export const tagOf = <A, E>(exit: Exit.Exit<A, E>): string =>
  Exit.isSuccess(exit)
    ? "success"
    : exit.cause._tag === "Fail"
    ? (exit.cause.error as { readonly _tag: string })._tag
    : `defect: ${String(exit.cause)}`

/** Lets other fibers run until a view satisfies a predicate (no clock: safe under TestClock). */
export const eventually = <A, E, R>(view: Effect.Effect<A, E, R>, predicate: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 10_000; i++) {
      const value = yield* view
      if (predicate(value)) return value
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage("the condition never held")
  })

// ------------------------------------------------------------------------------- the fake CLI script ring

export const FAKE_CLAUDE = path.join(import.meta.dirname, "fixtures", "fake-claude.mjs")

/** The whole engine over the fake CLI script (real processes). */
export const fakeFleet = (options: Flotta.FleetOptions = {}) =>
  Flotta.layer({ executable: { command: process.execPath, prefixArgs: [FAKE_CLAUDE] }, ...options }).pipe(
    Layer.provide(NodeContext.layer)
  )

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
