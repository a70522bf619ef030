/**
 * A restart of the host over a durable store, with the in-memory Claude and its session files shared between
 * two builds of the fleet (as the disk outlives a host): who comes back, with what, and what does not.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import type { AgentOptions } from "../src/AgentOptions.js"
import { StoredOptions } from "../src/AgentOptions.js"
import * as StoreConfig from "../src/StoreConfig.js"
import * as Testing from "../src/Testing.js"
import type { Shared } from "./support.js"
import { host as hostOf, shared as newShared } from "./support.js"

const failure = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error as { _tag: string; message: string } : undefined

const model: Testing.Model = ({ history, prompt }) =>
  prompt === "slow" ? Testing.delay("1 hour", "late") : `${prompt}|${history.join(",")}`

/** One host's life over the shared disk and store file, with this file's model. */
const host = (where: Shared, options: Testing.Options = {}) => hostOf(where, { model, ...options })

const shared = () => newShared("flotta-restore")

describe("a restart of the host over a durable store", () => {
  it.effect("every agent comes back under its name with its memory; the queued turn runs; the one in flight is HostRestarted", () =>
    Effect.gen(function*() {
      const where = shared()
      const before = yield* host(where)((fleet) =>
        Effect.gen(function*() {
          yield* fleet.spawn("a", { model: "m1", appendSystemPrompt: "be brief" })
          assert.strictEqual(yield* fleet.ask("a", "the code is 42"), "the code is 42|")
          const slow = yield* fleet.prompt("a", "slow")
          const queued = yield* fleet.prompt("a", "what is the code?")
          assert.deepStrictEqual([slow, queued], ["t2", "t3"])
          assert.strictEqual((yield* fleet.status("a")).queued, 1)
          return (yield* fleet.reports({ last: 1 })).next
        })
      )
      yield* host(where)((fleet) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(fleet.restored.restored.map((r) => [r.name, r.queued]), [["a", 1]])
          assert.deepStrictEqual(fleet.restored.interruptedTurns, [{ name: "a", turnId: "t2" }])
          const info = yield* fleet.info("a")
          assert.strictEqual(info.model, "m1")
          // The queued turn runs on the resumed session: it sees the whole conversation, the slow one included.
          const t3 = yield* fleet.wait("a", "t3")
          assert.strictEqual(t3.text, "what is the code?|the code is 42,slow")
          const t2 = failure(yield* Effect.exit(fleet.result("a", "t2")))
          assert.strictEqual(t2?._tag, "HostRestarted")
          assert.include(t2?.message, "not sent again")
          assert.strictEqual((yield* fleet.result("a", "t1")).text, "the code is 42|")
          const transcript = yield* fleet.transcript("a")
          assert.deepStrictEqual(transcript.map((t) => [t.turnId, t.status, t.error?._tag ?? null]), [
            ["t1", "succeeded", null],
            ["t2", "failed", "HostRestarted"],
            ["t3", "succeeded", null]
          ])
          // New turns number on from the old ones, and the report cursor continues.
          assert.strictEqual(yield* fleet.prompt("a", "next"), "t4")
          const after = yield* fleet.reports({ since: before, limit: 1000 })
          assert.isAbove(after.entries[0]!.seq, before)
          // The first host's stop left the agent stopped (to come back), not closed.
          const stops = (yield* fleet.reports({ agent: "a", kinds: ["stopped", "closed"], limit: 100 })).entries
          assert.deepStrictEqual(stops.map((e) => e.kind), ["stopped"])
          const kinds = after.entries.filter((e) => e.agent === "a").map((e) => e.kind)
          assert.includeMembers(kinds, ["error", "spawned", "restored", "result"])
          assert.strictEqual(
            after.entries.find((e) => e.kind === "error")?.turnId,
            "t2",
            "the in-flight turn's end is in the log"
          )
        })
      )
    }))

  it.effect("an agent that cannot come back is closed with the reason, and never holds up the others", () =>
    Effect.gen(function*() {
      const where = shared()
      yield* host(where)((fleet) =>
        Effect.gen(function*() {
          yield* fleet.spawn("good")
          yield* fleet.spawn("lost")
          yield* fleet.spawn("policy", { permission: () => ({ behavior: "allow" }) })
          yield* fleet.ask("good", "hi")
          yield* fleet.ask("lost", "hi")
          yield* fleet.prompt("lost", "slow")
          yield* fleet.prompt("lost", "never")
          yield* fleet.spawn("bye")
          yield* fleet.close("bye")
        })
      )
      yield* host(where, {
        failStart: ({ agent, resume }) => (agent === "lost" && resume ? "No conversation found" : undefined)
      })((fleet) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(fleet.restored.restored.map((r) => r.name), ["good"])
          const closed = Object.fromEntries(fleet.restored.closed.map((c) => [c.name, c.reason]))
          assert.deepStrictEqual(Object.keys(closed).sort(), ["lost", "policy"])
          assert.include(closed["lost"], "could not be restored")
          assert.include(closed["policy"], "permission was given as a function")
          assert.strictEqual(yield* fleet.ask("good", "again"), "again|hi")
          assert.deepStrictEqual((yield* fleet.list()).map((a) => a.name), ["good"])
          // Its queued turn ended with the reason; its closing is in the log.
          const closedEntries = (yield* fleet.reports({ agent: "lost", kinds: ["closed"], limit: 100 })).entries
          assert.include(JSON.stringify(closedEntries.at(-1)?.data), "could not be restored")
          const errors = (yield* fleet.reports({ agent: "lost", kinds: ["error"], limit: 100 })).entries
          assert.deepStrictEqual(errors.map((e) => e.turnId), ["t2", "t3"])
          // The name spawned again numbers its turns on: the closed agent's transcript stays as it was.
          yield* fleet.spawn("lost")
          assert.strictEqual(yield* fleet.prompt("lost", "fresh"), "t4")
        })
      )
    }))

  it.effect("an async run in flight ends as HostRestarted; a finished one keeps its result", () =>
    Effect.gen(function*() {
      const where = shared()
      yield* host(where)((fleet) =>
        Effect.gen(function*() {
          const done = yield* fleet.runAsync({ name: "quick", prompt: "quick" })
          yield* fleet.awaitRun(done)
          yield* fleet.runAsync({ name: "job", prompt: "slow" })
          assert.strictEqual(failure(yield* Effect.exit(fleet.runResult("job")))?._tag, "TurnPending")
        })
      )
      yield* host(where)((fleet) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(fleet.restored.interruptedRuns, ["job"])
          assert.deepStrictEqual(fleet.restored.restored, [])
          const job = failure(yield* Effect.exit(fleet.runResult("job")))
          assert.strictEqual(job?._tag, "HostRestarted")
          const quick = yield* fleet.runResult("quick")
          assert.strictEqual(quick.kind === "run" ? quick.text : null, "quick|")
          assert.strictEqual(failure(yield* Effect.exit(fleet.runResult("nope")))?._tag, "RunNotFound")
          // Each says once that it finished: the quick one when it did, the other after the restart (the stop
          // that interrupted it says nothing, as it kept nothing).
          const finished = (yield* fleet.reports({ kinds: ["run_finished"] })).entries
          assert.deepStrictEqual(
            finished.map((e) => [e.agent, (e.data as { ok: boolean }).ok]),
            [["quick", true], ["job", false]]
          )
          assert.deepStrictEqual(finished[1]!.data, {
            ok: false,
            costUsd: 0,
            error: { _tag: "HostRestarted", message: job!.message }
          })
        })
      )
    }))

  it.effect("every kept option comes back after a restart, stream and labels included", () =>
    Effect.gen(function*() {
      const where = shared()
      const given = {
        cwd: "/w",
        model: "opus",
        permission: { allow: ["Read"], ask: ["Write"] },
        systemPrompt: "be brief",
        appendSystemPrompt: "and exact",
        timeout: 42_000,
        env: { TEAM: "a" },
        role: "manager",
        extraArgs: ["--verbose"],
        expectStructuredOutput: false,
        sandbox: { network: { allow: ["github.com"] } },
        autoCompactAt: 80,
        stream: true,
        maxBudgetUsd: 2.5,
        budgetPer: "day",
        labels: { team: "a" }
      } satisfies AgentOptions
      const { cwd: _cwd, permission, timeout, ...kept } = given
      const expected = { ...kept, cwd: "/w", permission, timeoutMs: timeout }
      // Every option the store keeps is set above: one added to the Schema and not here fails this test.
      assert.deepStrictEqual(Object.keys(expected).sort(), Object.keys(StoredOptions.fields).sort())
      yield* host(where)((fleet) =>
        Effect.gen(function*() {
          yield* fleet.spawn("a", given)
          yield* fleet.ask("a", "before")
        })
      )
      // Restarted twice: the second host's row is written from the options the first restart gave back.
      yield* host(where)((fleet) => Effect.asVoid(fleet.info("a")))
      const row = yield* Effect.scoped(
        Effect.flatMap(StoreConfig.open({ sqlite: where.file }), (store) => store.agent("a"))
      )
      assert.deepStrictEqual(Option.getOrThrow(row).options, expected)
    }))
})
