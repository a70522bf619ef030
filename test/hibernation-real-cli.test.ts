/**
 * Hibernation with the real claude CLI, offline against the simulator: a fleet of five sessions under `maxLive: 2`
 * never runs more than two claude processes (counted from /proc throughout), each session taught its own fact
 * recalls it after sleeping (woken with `--resume`), a sleeping session forks, and a restart of the host over
 * SQLite brings a sleeper back asleep, with no process, until a prompt wakes it with its memory.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Flotta from "../packages/core/src/Flotta.js"
import { CLAUDE, hostOf, useOfflineApi } from "./support/realCli.js"

const offline = useOfflineApi("flotta-sleep")

const realFleet = (options: Flotta.FleetOptions = {}) =>
  Flotta.layer({ claudePath: CLAUDE, env: offline.env, maxLive: 2, ...options }).pipe(Layer.provide(NodeContext.layer))

/** The claude processes this test process runs now (its children whose program is the claude binary). */
const claudeChildren = () =>
  fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      return parent === process.pid && fs.readlinkSync(`/proc/${pid}/exe`).includes("claude")
    } catch {
      return false
    }
  }).length

/** Counts the claude processes every 20 ms while `body` runs; the most it saw, and the body's value. */
const sampled = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const seen = { most: claudeChildren() }
      const timer = setInterval(() => (seen.most = Math.max(seen.most, claudeChildren())), 20)
      return { seen, timer }
    }),
    ({ seen }) => Effect.map(body, (value) => ({ value, most: seen.most })),
    ({ timer }) => Effect.sync(() => clearInterval(timer))
  )

describe("hibernation with the real claude CLI", () => {
  it.scopedLive(
    "five sessions under maxLive 2: never more than two claude processes, and each recalls its fact",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        const names = ["s1", "s2", "s3", "s4", "s5"]
        const { most } = yield* sampled(Effect.gen(function*() {
          for (const name of names) {
            yield* fleet.spawn(name, { cwd: offline.workdir(`sleep-${name}`) })
            assert.strictEqual(yield* fleet.ask(name, `REMEMBER the code of ${name}`), "OK, I will remember that.")
          }
          const asleep = (yield* fleet.list()).filter((a) => a.status === "hibernated").map((a) => a.name)
          assert.deepStrictEqual(asleep, ["s1", "s2", "s3"])
          for (const name of names) {
            assert.strictEqual(yield* fleet.ask(name, "RECALL"), `The fact is: the code of ${name}`)
          }
          // A sleeper forks: the fork starts from its session file, and the sleeper sleeps on.
          assert.strictEqual((yield* fleet.info("s1")).status, "hibernated", "s1 is asleep when it forks")
          yield* fleet.fork("s1", "s1-fork")
          assert.strictEqual(yield* fleet.ask("s1-fork", "RECALL"), "The fact is: the code of s1")
          assert.deepInclude(yield* fleet.info("s1"), { status: "hibernated", pid: null })
        }))
        assert.isAtMost(most, 2, "claude processes at once")
        assert.isAtLeast(most, 1)
        const woken = (yield* fleet.reports({ agent: "s1", kinds: ["hibernated", "woken"] })).entries
        assert.deepStrictEqual(woken.slice(0, 2).map((e) => e.kind), ["hibernated", "woken"])
        assert.strictEqual((yield* fleet.processes).max, 2)
      }).pipe(Effect.provide(realFleet())),
    { timeout: 300_000 }
  )
})

/** One host's life over a store file. */
const host = (file: string) => hostOf(realFleet({ store: { sqlite: file } }))

describe("hibernation across a restart of the host, with the real claude CLI", () => {
  it.live(
    "a sleeper comes back asleep with no process, and a prompt wakes it with its memory",
    () =>
      Effect.gen(function*() {
        const file = path.join(offline.workdir("sleep-restart"), "state.db")
        yield* host(file)((fleet) =>
          Effect.gen(function*() {
            for (const name of ["r1", "r2", "r3"]) {
              yield* fleet.spawn(name, { cwd: offline.workdir(`sleep-${name}`) })
              yield* fleet.ask(name, `REMEMBER the word of ${name}`)
            }
            assert.strictEqual((yield* fleet.info("r1")).status, "hibernated")
          })
        )
        yield* host(file)((fleet) =>
          Effect.gen(function*() {
            const r1 = yield* fleet.info("r1")
            assert.deepInclude(r1, { status: "hibernated", pid: null, alive: false })
            assert.strictEqual(claudeChildren(), 2, "only the two that were awake started")
            assert.strictEqual(yield* fleet.ask("r1", "RECALL"), "The fact is: the word of r1")
            assert.strictEqual((yield* fleet.info("r1")).status, "idle")
          })
        )
      }),
    { timeout: 300_000 }
  )
})
