/**
 * A session's own life over MCP, in process (the SDK client on the handler's fetch, no socket), in both protocol
 * eras, over the in-memory Claude: `flotta_fork` gives a new agent the source's conversation up to a turn, and
 * its failures are typed results that name what was wrong.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AgentInfo } from "@flotta/core/AgentView"
import * as Testing from "@flotta/core/Testing"
import type { CallToolResult } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import type { Era } from "./support.js"
import { call, connect, ERAS, fleet, handler, structured } from "./support.js"

/** Answers with the prompt and what its conversation holds. */
const memory: Testing.Model = ({ history, prompt }) => `${prompt} | knows: ${history.join(", ")}`

const session = (era: Era) => Effect.flatMap(handler(), (h) => connect(h.fetch, era))

const errorOf = (result: CallToolResult) => {
  assert.isTrue(result.isError, `expected an isError result, got ${JSON.stringify(result.content)}`)
  return (result.structuredContent as { error: { _tag: string; message: string } }).error
}

const ask = (client: Parameters<typeof call>[0], name: string, text: string) =>
  call(client, "flotta_ask", { name, text }).pipe(
    Effect.map((r) => structured<{ result: { text: string } }>(r).result.text)
  )

for (const era of ERAS) {
  describe(`a session's life over MCP, ${era.era} era`, () => {
    it.scoped("flotta_fork: the fork has the source's conversation up to the turn, and options of its own", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* call(client, "flotta_spawn", { name: "scout", model: "opus" })
        yield* ask(client, "scout", "PELICAN")
        yield* ask(client, "scout", "OTTER")
        const whole = structured<AgentInfo>(yield* call(client, "flotta_fork", { source: "scout", name: "twin" }))
        assert.deepInclude(whole, { name: "twin", model: "opus", status: "idle" })
        assert.deepInclude(whole.forkedFrom!, { agent: "scout", turnId: "t2" })
        assert.strictEqual(yield* ask(client, "twin", "x"), "x | knows: PELICAN, OTTER")
        const early = structured<AgentInfo>(
          yield* call(client, "flotta_fork", {
            source: "scout",
            name: "early",
            at: "t1",
            model: "haiku",
            turnTimeoutSeconds: 30
          })
        )
        assert.strictEqual(early.model, "haiku")
        assert.strictEqual(yield* ask(client, "early", "y"), "y | knows: PELICAN")
        const transcript = structured<{ turns: ReadonlyArray<{ marks?: ReadonlyArray<{ _tag: string }> }> }>(
          yield* call(client, "flotta_transcript", { name: "early" })
        )
        assert.deepStrictEqual(transcript.turns[0]?.marks?.map((m) => m._tag), ["Forked"])
      }).pipe(Effect.provide(fleet({ model: memory }))))

    it.scoped("flotta_hibernate and flotta_wake: the session sleeps with no process and wakes with its memory", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* call(client, "flotta_spawn", { name: "sleeper" })
        yield* ask(client, "sleeper", "PELICAN")
        const slept = structured<{ hibernated: boolean; status: { status: string } }>(
          yield* call(client, "flotta_hibernate", { name: "sleeper" })
        )
        assert.deepStrictEqual([slept.hibernated, slept.status.status], [true, "hibernated"])
        const again = structured<{ hibernated: boolean }>(yield* call(client, "flotta_hibernate", { name: "sleeper" }))
        assert.isFalse(again.hibernated)
        const listed = structured<{ agents: ReadonlyArray<AgentInfo> }>(yield* call(client, "flotta_list"))
        assert.deepInclude(listed.agents[0]!, { name: "sleeper", status: "hibernated", alive: false })
        const woken = structured<{ woken: boolean; info: AgentInfo }>(
          yield* call(client, "flotta_wake", { name: "sleeper" })
        )
        assert.deepStrictEqual([woken.woken, woken.info.status, woken.info.alive], [true, "idle", true])
        yield* call(client, "flotta_hibernate", { name: "sleeper" })
        assert.strictEqual(yield* ask(client, "sleeper", "what"), "what | knows: PELICAN", "a prompt wakes it")
        assert.strictEqual(errorOf(yield* call(client, "flotta_wake", { name: "ghost" }))._tag, "AgentNotFound")
      }).pipe(Effect.provide(fleet({ model: memory }))))

    it.scoped("flotta_compact and flotta_clear: the turn's compaction and context; a new conversation", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* call(client, "flotta_spawn", { name: "long", autoCompactAt: 90 })
        for (const fact of ["PELICAN", "OTTER", "HERON"]) yield* ask(client, "long", `${fact} ${"words ".repeat(40)}`)
        const before = structured<AgentInfo>(yield* call(client, "flotta_info", { name: "long" })).context!
        const compacted = structured<{
          done: boolean
          result: {
            compaction: { trigger: string; preTokens: number; postTokens: number }
            context: { tokens: number }
          }
        }>(yield* call(client, "flotta_compact", { name: "long", instructions: "keep the birds" }))
        assert.isTrue(compacted.done)
        assert.deepInclude(compacted.result.compaction, { trigger: "manual", preTokens: before.tokens - 5 })
        assert.isBelow(compacted.result.context.tokens, before.tokens)
        const status = structured<{ context: { tokens: number } }>(
          yield* call(client, "flotta_status", { name: "long" })
        )
        assert.strictEqual(status.context.tokens, compacted.result.context.tokens)
        const cleared = structured<{ done: boolean }>(yield* call(client, "flotta_clear", { name: "long" }))
        assert.isTrue(cleared.done)
        assert.strictEqual(yield* ask(client, "long", "what"), "what | knows: ")
        const bad = yield* call(client, "flotta_spawn", { name: "bad", autoCompactAt: 120 })
        assert.isTrue(bad.isError)
      }).pipe(Effect.provide(fleet({ model: memory }))))

    it.scoped("flotta_fork's failures: unknown source or turn, a taken name, a bad argument", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* call(client, "flotta_spawn", { name: "scout" })
        assert.strictEqual(
          errorOf(yield* call(client, "flotta_fork", { source: "scout", name: "twin" }))._tag,
          "CannotFork"
        )
        yield* ask(client, "scout", "one")
        const cases = [
          [{ source: "ghost", name: "twin" }, "AgentNotFound"],
          [{ source: "scout", name: "twin", at: "t7" }, "NoResult"],
          [{ source: "scout", name: "scout" }, "AgentAlreadyExists"]
        ] as const
        for (const [args, tag] of cases) assert.strictEqual(errorOf(yield* call(client, "flotta_fork", args))._tag, tag)
        const bad = yield* call(client, "flotta_fork", { source: "scout", name: "twin", unknown: 1 })
        assert.isTrue(bad.isError)
        assert.include(JSON.stringify(bad.content), "unknown")
      }).pipe(Effect.provide(fleet({ model: memory }))))
  })
}
