/**
 * Hibernation over the in-memory Claude, under TestClock: a fleet never runs more than `maxLive` processes (the
 * session idle the longest sleeps first, a busy one never does, a start waits for room), a sleeping session wakes
 * for a prompt or a broadcast with its memory, `hibernate` and `wake` by hand, `hibernateAfter`, forks of a
 * sleeping session, and a restart of the host that keeps sleepers asleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { Flotta } from "../src/Flotta.js"
import * as Testing from "../src/Testing.js"
import { eventually, failureOf, host, shared } from "./support.js"

/** Answers with what its conversation holds; `slow` takes a minute. */
const memory: Testing.Model = ({ history, prompt }) =>
  prompt === "slow" ? Testing.delay("1 minute", "slow done") : `${prompt} | knows: ${history.join(", ")}`

const fleet = (options: Testing.Options = {}) => Testing.layer({ model: memory, ...options })

const statusOf = (f: Flotta) =>
  Effect.map(f.list(), (agents) => Object.fromEntries(agents.map((a) => [a.name, a.status])))

describe("hibernation", () => {
  it.effect("a fleet over maxLive never runs more than maxLive processes, and every sleeper keeps its memory", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const names = Array.from({ length: 8 }, (_, i) => `a${i}`)
      let most = 0
      const sample = Effect.map(f.processes, (p) => (most = Math.max(most, p.live)))
      for (const name of names) {
        yield* f.spawn(name)
        yield* sample
        yield* f.ask(name, `fact of ${name}`)
        yield* sample
      }
      assert.strictEqual(most, 3)
      const statuses = yield* statusOf(f)
      assert.strictEqual(Object.values(statuses).filter((s) => s === "hibernated").length, 5)
      assert.deepStrictEqual(["a5", "a6", "a7"].map((n) => statuses[n]), ["idle", "idle", "idle"])
      for (const name of names) {
        assert.strictEqual(yield* f.ask(name, "what"), `what | knows: fact of ${name}`)
        yield* sample
      }
      assert.strictEqual(most, 3, "never more than maxLive, through every wake")
      const sleeper = yield* f.info("a0")
      assert.deepInclude(sleeper, { status: "hibernated", alive: false, pid: null })
      const kinds = (yield* f.reports({ agent: "a0", kinds: ["hibernated", "woken"] })).entries.map((e) => e.kind)
      assert.deepStrictEqual(kinds.slice(0, 3), ["hibernated", "woken", "hibernated"])
      const [slept] = (yield* f.reports({ agent: "a0", kinds: ["hibernated"] })).entries
      assert.match((slept!.data as { reason: string }).reason, /maxLive/)
    }).pipe(Effect.provide(fleet({ maxLive: 3 }))))

  it.effect("the session idle the longest sleeps first; a busy one never does, and a start waits for room", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      for (const name of ["a", "b"]) yield* f.spawn(name)
      yield* TestClock.adjust("1 second")
      yield* f.ask("a", "used last") // a is now the most recently used: b has been idle the longest
      yield* f.spawn("c")
      assert.deepStrictEqual(yield* statusOf(f), { a: "idle", b: "hibernated", c: "idle" })

      // Both live ones busy: a start (d) waits until one of them is idle, then takes its room.
      const slowA = yield* f.prompt("a", "slow")
      const slowC = yield* f.prompt("c", "slow")
      const d = yield* Effect.fork(f.spawn("d"))
      yield* TestClock.adjust("30 seconds")
      assert.strictEqual((yield* f.processes).live, 2)
      assert.isUndefined((yield* statusOf(f))["d"], "d waits: nobody is idle")
      yield* TestClock.adjust("30 seconds")
      yield* Fiber.join(d)
      yield* f.wait("a", slowA)
      yield* f.wait("c", slowC)
      const after = yield* statusOf(f)
      assert.strictEqual(after["d"], "idle")
      assert.strictEqual(Object.values(after).filter((s) => s !== "hibernated").length, 2)
    }).pipe(Effect.provide(fleet({ maxLive: 2 }))))

  it.effect("hibernate and wake by hand; what cannot hibernate says why", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("s")
      yield* f.ask("s", "remember me")
      assert.isTrue(yield* f.hibernate("s"))
      assert.isFalse(yield* f.hibernate("s"), "asleep already")
      assert.deepInclude(yield* f.info("s"), { status: "hibernated", alive: false })
      assert.strictEqual((yield* f.processes).live, 0)
      assert.isTrue(yield* f.wake("s"))
      assert.deepInclude(yield* f.info("s"), { status: "idle", alive: true })
      assert.isFalse(yield* f.wake("s"), "awake already")
      assert.strictEqual(yield* f.ask("s", "who"), "who | knows: remember me")
      const woken = (yield* f.reports({ agent: "s", kinds: ["woken"] })).entries[0]?.data
      assert.deepInclude(woken as object, { reason: "by request" })

      const busy = yield* f.prompt("s", "slow")
      const working = failureOf(yield* Effect.exit(f.hibernate("s")))
      assert.strictEqual(working._tag, "CannotHibernate")
      assert.include(working.message, `working on ${busy}`)
      yield* f.runAsync({ name: "job", prompt: "slow" })
      yield* eventually(f.list(), (agents) => agents.some((a) => a.name === "job"))
      assert.strictEqual(failureOf(yield* Effect.exit(f.hibernate("job")))._tag, "CannotHibernate")
      assert.strictEqual(failureOf(yield* Effect.exit(f.hibernate("nobody")))._tag, "AgentNotFound")
    }).pipe(Effect.provide(fleet())))

  it.effect("hibernateAfter: a session idle that long sleeps; a prompt and a broadcast wake sleepers", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("one")
      yield* f.spawn("two")
      yield* f.ask("one", "hello")
      yield* TestClock.adjust("9 minutes")
      yield* f.ask("two", "still here")
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(yield* statusOf(f), { one: "hibernated", two: "idle" })
      const [slept] = (yield* f.reports({ agent: "one", kinds: ["hibernated"] })).entries
      assert.deepInclude(slept!.data as object, { reason: "idle for 10m (hibernateAfter)", idleMs: 600_000 })
      yield* TestClock.adjust("10 minutes")
      assert.deepStrictEqual(yield* statusOf(f), { one: "hibernated", two: "hibernated" })
      const answers = yield* f.broadcast("roll call")
      assert.deepStrictEqual(answers.map((a) => a.ok ? a.text : a.error._tag), [
        "roll call | knows: hello",
        "roll call | knows: still here"
      ])
      assert.deepStrictEqual(yield* statusOf(f), { one: "idle", two: "idle" })
    }).pipe(Effect.provide(fleet({ hibernateAfter: "10 minutes" }))))

  it.effect("a broadcast past maxLive wakes every sleeper through admission, in order, and never passes maxLive", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      const names = ["b1", "b2", "b3", "b4", "b5", "b6"]
      for (const name of names) {
        yield* f.spawn(name)
        yield* f.ask(name, `fact of ${name}`)
      }
      assert.strictEqual(Object.values(yield* statusOf(f)).filter((s) => s === "hibernated").length, 4)
      const before = (yield* f.reports({ kinds: ["woken"] })).entries.length
      let most = 0
      const sampler = yield* Effect.fork(Effect.forever(Effect.zipRight(
        Effect.map(f.processes, (p) => (most = Math.max(most, p.live))),
        Effect.yieldNow()
      )))
      const answers = yield* f.broadcast("roll call")
      yield* Fiber.interrupt(sampler)
      assert.deepStrictEqual(
        answers.map((a) => a.ok ? a.text : a.error._tag),
        names.map((name) => `roll call | knows: fact of ${name}`),
        "every sleeper answers with its memory"
      )
      assert.strictEqual(most, 2, "never more than maxLive")
      const woken = (yield* f.reports({ kinds: ["woken"] })).entries.slice(before).map((e) => e.agent)
      assert.deepStrictEqual(woken, ["b1", "b2", "b3", "b4"], "woken in the order the broadcast admitted them")
    }).pipe(Effect.provide(fleet({ maxLive: 2 }))))

  it.effect("a sleeping session forks, and the fork has its memory", () =>
    Effect.gen(function*() {
      const f = yield* Flotta
      yield* f.spawn("deep")
      yield* f.ask("deep", "PELICAN")
      yield* f.hibernate("deep")
      const twin = yield* f.fork("deep", "twin")
      assert.strictEqual(twin.forkedFrom?.agent, "deep")
      assert.strictEqual(yield* f.ask("twin", "what"), "what | knows: PELICAN")
      assert.strictEqual((yield* f.info("deep")).status, "hibernated", "the source sleeps on")
    }).pipe(Effect.provide(fleet())))
})

describe("hibernation across a restart of the host", () => {
  it.effect("a sleeper comes back asleep, with no process, and wakes with its memory", () =>
    Effect.gen(function*() {
      const where = shared("flotta-sleep")
      yield* host(where, { model: memory, maxLive: 2 })((f) =>
        Effect.gen(function*() {
          for (const name of ["x", "y", "z"]) {
            yield* f.spawn(name)
            yield* f.ask(name, `I am ${name}`)
          }
          assert.strictEqual((yield* statusOf(f))["x"], "hibernated")
        })
      )
      yield* host(where, { model: memory, maxLive: 2 })((f) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(f.restored.restored.map((r) => r.name).sort(), ["x", "y", "z"])
          assert.deepStrictEqual(yield* statusOf(f), { x: "hibernated", y: "idle", z: "idle" })
          assert.strictEqual((yield* f.processes).live, 2)
          assert.strictEqual(yield* f.ask("x", "who"), "who | knows: I am x")
          assert.strictEqual((yield* f.processes).live, 2, "x woke into the room y left")
        })
      )
    }))
})
