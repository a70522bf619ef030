/**
 * What each tool call came to, in the transcript and live: its outcome (ok, error, refused and why), its text cut
 * to a bound with the full size kept, and how long it took; the turn's text, calls and results reach the report
 * log's subscribers and `onActivity` as they happen, and a streaming agent's words too (never kept).
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream, TestClock } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Activity, ToolCall } from "../src/AgentView.js"
import { TOOL_RESULT_MAX_BYTES } from "../src/AgentView.js"
import { Flotta } from "../src/Flotta.js"
import { buildArgs } from "../src/internal/agentOptions.js"
import { bounded } from "../src/internal/toolOutcome.js"
import * as SqliteStore from "../src/SqliteStore.js"
import * as StoreConfig from "../src/StoreConfig.js"
import * as Testing from "../src/Testing.js"
import { eventually, fleetTests } from "./support.js"

/**
 * Prompts: `bash <output>` (a Bash call that prints it, taking 3 s, after a word from the model), `fail` (a Bash call that errors), `big`
 * (one whose output is 10 KiB of "é"), `write` (a Write call), anything else a plain reply.
 */
const model: Testing.Model = ({ prompt }) => {
  const [word = "", ...rest] = prompt.split(" ")
  switch (word) {
    case "bash":
      return Testing.toolUse("Bash", { command: "echo" }, "printed", {
        say: "Let me print it.",
        output: rest.join(" "),
        takes: "3 seconds"
      })
    case "fail":
      return Testing.toolUse("Bash", { command: "false" }, "it failed", { error: "Exit code 1" })
    case "big":
      return Testing.toolUse("Bash", { command: "cat big" }, "read it", { output: "é".repeat(5120) })
    case "write":
      return Testing.toolUse("Write", { file_path: "x.txt", content: "hi" }, (d) => `write: ${d.behavior}`)
    default:
      return `the plan: ${prompt}, in words`
  }
}

const layer = (options: Testing.Options = {}) => Testing.layer({ model, ...options })
const test = fleetTests(layer())

/** The outcome of the one tool call of `agent`'s last turn. */
const lastCall = (fleet: Flotta, agent: string) =>
  Effect.map(fleet.transcript(agent), (turns): ToolCall => {
    const calls = turns[turns.length - 1]!.toolCalls
    assert.strictEqual(calls.length, 1)
    return calls[0]!
  })

describe("tool results in the transcript", () => {
  test("a call that ran: ok, what it printed, and how long it took", (fleet) =>
    Effect.gen(function*() {
      yield* fleet.spawn("a", { permission: "full" })
      const turn = yield* Effect.fork(fleet.ask("a", "bash hello world"))
      yield* TestClock.adjust("3 seconds")
      assert.strictEqual(yield* Fiber.join(turn), "printed")
      const call = yield* lastCall(fleet, "a")
      assert.strictEqual(call.name, "Bash")
      assert.deepStrictEqual(call.outcome, {
        status: "ok",
        text: "hello world",
        bytes: 11,
        truncated: false,
        durationMs: 3000
      })
    }))

  test("a call that failed is an error, with the tool's words", (fleet) =>
    Effect.gen(function*() {
      yield* fleet.spawn("a", { permission: "full" })
      yield* fleet.ask("a", "fail")
      const call = yield* lastCall(fleet, "a")
      assert.strictEqual(call.outcome?.status, "error")
      assert.strictEqual(call.outcome?.text, "Exit code 1")
      assert.isUndefined(call.outcome?.refusal)
    }))

  test("a long result is cut to the bound on a character's edge, and says its full size", (fleet) =>
    Effect.gen(function*() {
      yield* fleet.spawn("a", { permission: "full" })
      yield* fleet.ask("a", "big")
      const outcome = (yield* lastCall(fleet, "a")).outcome!
      assert.strictEqual(outcome.bytes, 10240)
      assert.isTrue(outcome.truncated)
      assert.strictEqual(Buffer.byteLength(outcome.text), TOOL_RESULT_MAX_BYTES)
      assert.strictEqual(outcome.text, "é".repeat(TOOL_RESULT_MAX_BYTES / 2))
      // An odd bound falls inside a two-byte character: the cut stops before it, never in it.
      assert.deepStrictEqual(bounded("éé", 3), { text: "é", bytes: 4, truncated: true })
    }))

  test("a read-only agent's Write was never offered: refused, not_offered, with no permission asked", (fleet) =>
    Effect.gen(function*() {
      yield* fleet.spawn("reader")
      assert.strictEqual(yield* fleet.ask("reader", "write"), "write: deny")
      const [turn] = yield* fleet.transcript("reader")
      assert.deepStrictEqual(turn!.permissions, [])
      const outcome = turn!.toolCalls[0]!.outcome!
      assert.strictEqual(outcome.status, "refused")
      assert.strictEqual(outcome.refusal?.reason, "not_offered")
      assert.match(outcome.refusal!.message, /No such tool available: Write/)
    }))

  test("the policy's refusal says policy, with its message, joined to the call by its id", (fleet) =>
    Effect.gen(function*() {
      yield* fleet.spawn("w", { permission: (tool) => ({ behavior: "deny", message: `no ${tool} today` }) })
      yield* fleet.ask("w", "write")
      const [turn] = yield* fleet.transcript("w")
      const call = turn!.toolCalls[0]!
      assert.strictEqual(turn!.permissions[0]!.toolUseId, call.id)
      assert.deepStrictEqual(call.outcome?.refusal, { reason: "policy", message: "no Write today" })
    }))

  it.effect("a human's denial names who and what they said; an approval that ran out is expired", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("h", { permission: { allow: ["Read"], ask: ["Write"] } })
      const denied = yield* fleet.prompt("h", "write")
      const approval = (yield* eventually(fleet.approvals({ agent: "h" }), (list) => list.length > 0))[0]!
      yield* fleet.decide(approval.id, { behavior: "deny", message: "not on a Friday", by: "cli" })
      yield* fleet.wait("h", denied)
      const refusal = (yield* lastCall(fleet, "h")).outcome?.refusal
      assert.deepInclude(refusal, { reason: "human", by: "cli" })
      assert.match(refusal!.message, /not on a Friday/)

      const late = yield* fleet.prompt("h", "write")
      yield* eventually(fleet.approvals({ agent: "h" }), (list) => list.length > 0)
      yield* TestClock.adjust("10 minutes")
      yield* fleet.wait("h", late)
      const expired = (yield* lastCall(fleet, "h")).outcome!
      assert.strictEqual(expired.status, "refused")
      assert.strictEqual(expired.refusal?.reason, "expired")
      assert.strictEqual(expired.refusal?.by, "timeout")
      assert.strictEqual(expired.durationMs, 600_000, "the wait for a human is part of the call")
    }).pipe(Effect.provide(layer({ approvalTimeout: "10 minutes" }))))
})

describe("tool results in the store", () => {
  it.effect("a durable store keeps each call's outcome with its turn, as the file gives it back", () =>
    Effect.gen(function*() {
      const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-results-")), "fleet.db")
      const durable = layer({ store: SqliteStore.layer(file) })
      yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        yield* fleet.spawn("kept", { permission: "full" })
        yield* fleet.ask("kept", "big")
      }).pipe(Effect.provide(durable))
      const outcome = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* StoreConfig.open({ sqlite: file })
        const [row] = yield* store.turns("kept")
        return row!.record.toolCalls[0]!.outcome
      }))
      assert.deepInclude(outcome!, { status: "ok", bytes: 10240, truncated: true })
      assert.strictEqual(Buffer.byteLength(outcome!.text), TOOL_RESULT_MAX_BYTES)
    }))
})

describe("a turn as it happens", () => {
  it.scoped("its text, calls and results reach subscribers while the turn runs, and are kept in order", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const seen: Array<Activity> = []
      yield* fleet.spawn("live", { permission: "full", onActivity: (a) => seen.push(a) })
      const feed = yield* fleet.subscribe({ agent: "live" })
      const entries = yield* Effect.fork(Stream.runCollect(Stream.take(feed, 3)))
      const turnId = yield* fleet.prompt("live", "bash hi")
      // The call is out and its result has not come (it takes 3 s): the subscriber already has the call.
      const early = Chunk.toArray(yield* Fiber.join(entries)).map((n) => n._tag === "Entry" ? n.entry : undefined)
      assert.deepStrictEqual(early.map((e) => e?.kind), ["turn_started", "assistant_text", "tool_call"])
      assert.deepStrictEqual(early[1]!.data, { text: "Let me print it." })
      assert.deepInclude(early[2]!.data as object, { tool: "Bash", input: { command: "echo" } })
      assert.strictEqual((yield* fleet.status("live")).status, "working")
      assert.deepStrictEqual(seen.map((a) => a._tag), ["Text", "Tool"])
      yield* TestClock.adjust("3 seconds")
      yield* fleet.wait("live", turnId)
      const kinds = (yield* fleet.reports({ agent: "live" })).entries.map((e) => e.kind)
      assert.deepStrictEqual(kinds, [
        "spawned",
        "turn_started",
        "assistant_text",
        "tool_call",
        "permission",
        "tool_result",
        "result"
      ])
      const result = (yield* fleet.reports({ agent: "live", kinds: ["tool_result"] })).entries[0]!
      assert.deepInclude(result.data as object, { tool: "Bash", status: "ok", text: "hi", bytes: 2, durationMs: 3000 })
      // The answer after the call is the result's: told once, in the `result` entry.
      assert.deepStrictEqual(seen.map((a) => a._tag), ["Text", "Tool", "ToolResult", "Text"])
    }).pipe(Effect.provide(layer())))
})

describe("streaming", () => {
  it.scoped("stream: true tells each piece of text live, before the message; the log keeps none of them", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const seen: Array<Activity> = []
      yield* fleet.spawn("s", { stream: true, onActivity: (a) => seen.push(a) })
      yield* fleet.spawn("quiet", { onActivity: (a) => seen.push(a) })
      const feed = yield* fleet.subscribe({ kinds: ["text_delta", "assistant_text"] })
      const live = yield* Effect.fork(Stream.runCollect(Stream.take(feed, 5)))
      assert.strictEqual(yield* fleet.ask("quiet", "go"), "the plan: go, in words")
      assert.strictEqual(yield* fleet.ask("s", "go"), "the plan: go, in words")
      const entries = Chunk.toArray(yield* Fiber.join(live)).flatMap((n) => n._tag === "Entry" ? [n.entry] : [])
      // Only the streaming agent's words: a plain answer is told once, by the `result` entry.
      assert.deepStrictEqual(entries.map((e) => [e.agent, e.kind]), [
        ["s", "text_delta"],
        ["s", "text_delta"],
        ["s", "text_delta"],
        ["s", "text_delta"],
        ["s", "text_delta"]
      ])
      const deltas = entries.filter((e) => e.kind === "text_delta")
      assert.strictEqual(deltas.map((e) => (e.data as { text: string }).text).join(""), "the plan: go, in words")
      // Told live, never kept: a delta carries the seq of the entry before it.
      const kept = (yield* fleet.reports({ agent: "s" })).entries
      assert.notInclude(kept.map((e) => e.kind), "text_delta")
      const turnStarted = kept.find((e) => e.kind === "turn_started")!
      assert.strictEqual(deltas[0]!.seq, turnStarted.seq)
      assert.deepStrictEqual(seen.filter((a) => a._tag === "TextDelta").length, 5)
      assert.isTrue(seen.every((a) => a._tag !== "TextDelta" || a.turnId === "t1"))
      // The CLI is asked for partial messages only for a streaming agent.
      const session = { id: "s1", resume: false }
      assert.include(buildArgs({ stream: true }, "full", session), "--include-partial-messages")
      assert.notInclude(buildArgs({}, "full", session), "--include-partial-messages")
    }).pipe(Effect.provide(layer())))
})

describe("keptOnly", () => {
  it.scoped("a subscriber of kept entries only is never told a streaming agent's words", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("s", { stream: true })
      const kept = yield* fleet.subscribe({ agent: "s", keptOnly: true })
      const all = yield* fleet.subscribe({ agent: "s" })
      const untilResult = (feed: typeof kept) =>
        Effect.fork(Stream.runCollect(Stream.takeUntil(feed, (n) => n._tag === "Entry" && n.entry.kind === "result")))
      const [keptFiber, allFiber] = [yield* untilResult(kept), yield* untilResult(all)]
      yield* fleet.ask("s", "go")
      const kinds = (chunk: Chunk.Chunk<{ _tag: string }>) =>
        Chunk.toArray(chunk).flatMap((n) => (n as { entry?: { kind: string } }).entry?.kind ?? [])
      assert.deepStrictEqual(kinds(yield* Fiber.join(keptFiber)), ["turn_started", "result"])
      assert.include(kinds(yield* Fiber.join(allFiber)), "text_delta")
    }).pipe(Effect.provide(layer())))
})

describe("follow(name)", () => {
  it.scoped("one agent's feed, from now on; a name that is not live is AgentNotFound", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("one", { permission: "full" })
      yield* fleet.spawn("other", { permission: "full" })
      const feed = yield* fleet.follow("one")
      const got = yield* Effect.fork(Stream.runCollect(Stream.take(feed, 5)))
      yield* Effect.fork(fleet.ask("other", "fail"))
      yield* fleet.ask("one", "fail")
      const entries = Chunk.toArray(yield* Fiber.join(got)).flatMap((n) => n._tag === "Entry" ? [n.entry] : [])
      assert.isTrue(entries.every((e) => e.agent === "one"))
      assert.deepStrictEqual(entries.map((e) => e.kind), [
        "turn_started",
        "tool_call",
        "permission",
        "tool_result",
        "result"
      ])
      const missing = yield* Effect.flip(fleet.follow("nobody"))
      assert.strictEqual(missing._tag, "AgentNotFound")
    }).pipe(Effect.provide(layer())))
})
