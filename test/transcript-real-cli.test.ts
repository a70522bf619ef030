/**
 * What each tool call came to, with the real claude CLI offline against the simulator: a Bash call's output and
 * a Bash call that fails, a read-only agent's Write that the CLI never offered, a human's denial; the turn's
 * calls and results reach a subscriber as they happen; and `stream: true` tells the model's words as the CLI
 * streams them (`--include-partial-messages`), never kept in the log.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Layer, Option, Stream } from "effect"
import type { ToolCall } from "../packages/core/src/AgentView.js"
import * as Flotta from "../packages/core/src/Flotta.js"
import { CLAUDE, useOfflineApi } from "./support/realCli.js"
import { waitFor } from "./support/waiting.js"

const offline = useOfflineApi("flotta-transcript")

const realFleet = () => Flotta.layer({ claudePath: CLAUDE, env: offline.env }).pipe(Layer.provide(NodeContext.layer))

/** The one tool call of `agent`'s last turn. */
const lastCall = (fleet: Flotta.Flotta, agent: string) =>
  Effect.map(fleet.transcript(agent), (turns): ToolCall => {
    const calls = turns[turns.length - 1]!.toolCalls
    assert.strictEqual(calls.length, 1, JSON.stringify(calls))
    return calls[0]!
  })

describe("tool results with the real claude CLI", () => {
  it.scopedLive(
    "a Bash call's output, a Bash call that fails, and each reaches a subscriber before the turn ends",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        yield* fleet.spawn("shell", { cwd: offline.workdir("bash"), permission: "full" })
        const feed = yield* fleet.subscribe({ agent: "shell" })
        const live = yield* Effect.fork(Stream.runCollect(Stream.take(
          Stream.filterMap(feed, (n) => (n._tag === "Entry" ? Option.some(n.entry) : Option.none())),
          4
        )))
        const reply = yield* fleet.ask("shell", "BASH echo hello-flotta")
        assert.match(reply, /^BASH_RESULT: hello-flotta/)
        const ok = yield* lastCall(fleet, "shell")
        assert.strictEqual(ok.name, "Bash")
        assert.strictEqual(ok.outcome?.status, "ok")
        assert.strictEqual(ok.outcome?.text.trim(), "hello-flotta")
        assert.strictEqual(ok.outcome?.bytes, Buffer.byteLength(ok.outcome!.text))
        assert.isAtLeast(ok.outcome!.durationMs, 0)
        const entries = Chunk.toArray(yield* Fiber.join(live))
        assert.deepStrictEqual(entries.map((e) => e.kind), [
          "turn_started",
          "tool_call",
          "tool_result",
          "result"
        ])
        assert.deepInclude(entries[2]!.data as object, { id: ok.id, tool: "Bash", status: "ok" })

        yield* fleet.ask("shell", "BASH echo broken >&2; exit 3")
        const failed = yield* lastCall(fleet, "shell")
        assert.strictEqual(failed.outcome?.status, "error", JSON.stringify(failed.outcome))
        assert.match(failed.outcome!.text, /3/)
        assert.match(failed.outcome!.text, /broken/)
        assert.isUndefined(failed.outcome?.refusal)
      }).pipe(Effect.provide(realFleet())),
    { timeout: 180_000 }
  )

  it.scopedLive(
    "a read-only agent's Write was never offered; a human's denial names who and what they said",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        const cwd = offline.workdir("refusals")
        yield* fleet.spawn("reader", { cwd })
        const refused = yield* fleet.ask("reader", `WRITE ${cwd}/x.txt never`)
        assert.match(refused, /^DENIED: /)
        const [turn] = yield* fleet.transcript("reader")
        assert.deepStrictEqual(turn!.permissions, [], "the CLI never asked: the tool was not offered")
        const notOffered = turn!.toolCalls[0]!.outcome!
        assert.strictEqual(notOffered.status, "refused")
        assert.strictEqual(notOffered.refusal?.reason, "not_offered")
        assert.match(notOffered.refusal!.message, /No such tool available: Write/)

        yield* fleet.spawn("asker", { cwd, permission: { allow: ["Read"], ask: ["Write"] } })
        const turnId = yield* fleet.prompt("asker", `WRITE ${cwd}/y.txt never`)
        const [pending] = yield* waitFor(fleet.approvals({ agent: "asker" }), (l) => l.length > 0, "the approval")
        yield* fleet.decide(pending!.id, { behavior: "deny", message: "not on a Friday", by: "dashboard" })
        assert.match((yield* fleet.wait("asker", turnId)).text, /^DENIED: .*not on a Friday/)
        const denied = yield* lastCall(fleet, "asker")
        assert.strictEqual(denied.outcome?.status, "refused")
        assert.deepInclude(denied.outcome!.refusal!, { reason: "human", by: "dashboard" })
        assert.match(denied.outcome!.refusal!.message, /not on a Friday/)
        assert.strictEqual((yield* fleet.transcript("asker"))[0]!.permissions[0]!.toolUseId, denied.id)
      }).pipe(Effect.provide(realFleet())),
    { timeout: 180_000 }
  )

  it.scopedLive(
    "stream: true tells the words as the CLI streams them; the log keeps only the turn's result",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        yield* fleet.spawn("streamer", { cwd: offline.workdir("stream"), stream: true })
        const feed = yield* fleet.subscribe({ agent: "streamer", kinds: ["text_delta", "result"] })
        const live = yield* Effect.fork(Stream.runCollect(Stream.takeUntil(
          Stream.filterMap(feed, (n) => (n._tag === "Entry" ? Option.some(n.entry) : Option.none())),
          (e) => e.kind === "result"
        )))
        const reply = yield* fleet.ask("streamer", "SLOW 1500 one two three four five")
        assert.strictEqual(reply, "SLOW DONE one two three four five")
        const entries = Chunk.toArray(yield* Fiber.join(live))
        const deltas = entries.filter((e) => e.kind === "text_delta")
        assert.isAtLeast(deltas.length, 2, "the text came in pieces")
        assert.strictEqual(deltas.map((e) => (e.data as { text: string }).text).join(""), reply)
        const kept = (yield* fleet.reports({ agent: "streamer" })).entries.map((e) => e.kind)
        assert.notInclude(kept, "text_delta")
      }).pipe(Effect.provide(realFleet())),
    { timeout: 180_000 }
  )
})
