/**
 * The approval tools in process (the SDK client on the handler's fetch, no socket), in both protocol eras, over
 * the in-memory Claude (no process) with every timer on the TestClock: a Write under `ask` waits, is listed,
 * and is allowed or denied over MCP (decided by `mcp`); late, unknown and malformed decisions are errors with
 * advice; an approval that runs out of time is expired; the pending ones are a resource too.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Approval } from "@flotta/core/Approvals"
import * as Testing from "@flotta/core/Testing"
import type { CallToolResult, Client } from "@modelcontextprotocol/client"
import { Effect, TestClock } from "effect"
import type { Era } from "./support.js"
import { armed, call, connect, ERAS, fleet, handler, script, structured, until } from "./support.js"

/** An approval as the tools answer it (JSON: the core's own shape). */
type ApprovalOut = Approval

interface WaitOut {
  readonly done: boolean
  readonly result?: { readonly text: string }
}

/** The shared script, plus `write <path>`: a Write tool call, then what the host decided. */
const model: Testing.Model = (input) => {
  const [word, file = "out.txt"] = input.prompt.split(" ")
  if (word !== "write") return script(input)
  return Testing.toolUse(
    "Write",
    { file_path: file, content: "hi\n" },
    (d) => (d.behavior === "allow" ? `wrote ${String(d.input["file_path"])}` : `not written: ${d.message}`)
  )
}

const GUARDED = { allow: ["Read"], ask: ["Write"] }

const session = (era: Era) => Effect.flatMap(handler(), (h) => connect(h.fetch, era))

const errorOf = (result: CallToolResult) => {
  assert.isTrue(result.isError, `expected an isError result, got ${JSON.stringify(result.content)}`)
  return {
    ...(result.structuredContent as { error: { _tag: string; message: string } }).error,
    text: result.content.map((b) => (b.type === "text" ? b.text : "")).join("\n")
  }
}

const approvals = (client: Client, args: Record<string, unknown> = {}) =>
  call(client, "flotta_approvals", args).pipe(
    Effect.map((r) => structured<{ approvals: ReadonlyArray<ApprovalOut> }>(r).approvals)
  )

/** The agent's first pending approval, once its tool call has asked. */
const pendingOf = (client: Client, agent: string) =>
  until(approvals(client, { agent }), (list) => list.length > 0, `an approval for ${agent}`).pipe(
    Effect.map((list) => list[0]!)
  )

const waitTurn = (client: Client, name: string, turnId: string) =>
  call(client, "flotta_wait", { name, turnId }).pipe(Effect.map((r) => structured<WaitOut>(r)))

for (const era of ERAS) {
  describe(`approval tools (${era.era} era)`, () => {
    it.scoped("a Write under ask waits; listed, waiting_approval, allowed over MCP: the turn goes on", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        assert.deepStrictEqual(yield* approvals(client), [])
        yield* call(client, "flotta_spawn", { name: "w", permission: GUARDED })
        const { turnId } = structured<{ turnId: string }>(
          yield* call(client, "flotta_prompt", { name: "w", text: "write notes.md" })
        )
        const pending = yield* pendingOf(client, "w")
        assert.deepInclude(pending, { agent: "w", turnId, tool: "Write", status: "pending", decidedBy: null })
        assert.deepStrictEqual(pending.input, { file_path: "notes.md", content: "hi\n" })
        const status = structured<{ status: string }>(yield* call(client, "flotta_status", { name: "w" }))
        assert.strictEqual(status.status, "waiting_approval")
        assert.deepStrictEqual((yield* approvals(client, { agent: "someone-else" })).length, 0)

        const decided = structured<ApprovalOut>(
          yield* call(client, "flotta_decide", { id: pending.id, behavior: "allow", message: "fine by me" })
        )
        assert.deepInclude(decided, { id: pending.id, status: "allowed", decidedBy: "mcp", message: "fine by me" })
        assert.strictEqual((yield* waitTurn(client, "w", turnId)).result?.text, "wrote notes.md")
        assert.deepStrictEqual(yield* approvals(client), [])
        const all = yield* approvals(client, { all: true })
        assert.deepStrictEqual(all.map((a) => [a.id, a.status, a.decidedBy]), [[pending.id, "allowed", "mcp"]])

        // A second decision on it, and an unknown id: typed errors with advice.
        const again = errorOf(yield* call(client, "flotta_decide", { id: pending.id, behavior: "deny" }))
        assert.strictEqual(again._tag, "ApprovalExpired")
        assert.match(again.message, /no longer pending: it was allowed already, by mcp/)
        assert.include(again.text, "flotta_approvals { all: true }")
        const unknown = errorOf(yield* call(client, "flotta_decide", { id: "ap_nothing", behavior: "allow" }))
        assert.strictEqual(unknown._tag, "ApprovalNotFound")
        assert.include(unknown.text, "Call flotta_approvals to see the pending approvals")
      }).pipe(Effect.provide(fleet({ model }))))

    it.scoped("denied with a message over MCP: the model sees it; always allows the tool from then on", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* call(client, "flotta_spawn", { name: "d", permission: "ask" })
        const first = structured<{ turnId: string }>(
          yield* call(client, "flotta_prompt", { name: "d", text: "write secrets.txt" })
        )
        const denied = yield* pendingOf(client, "d")
        const deniedView = structured<ApprovalOut>(
          yield* call(client, "flotta_decide", { id: denied.id, behavior: "deny", message: "not that file", by: "cli" })
        )
        assert.deepInclude(deniedView, { status: "denied", decidedBy: "cli", message: "not that file" })
        assert.match((yield* waitTurn(client, "d", first.turnId)).result?.text ?? "", /^not written: .*not that file/)

        const second = structured<{ turnId: string }>(
          yield* call(client, "flotta_prompt", { name: "d", text: "write a.txt" })
        )
        const asked = yield* pendingOf(client, "d")
        const always = structured<ApprovalOut>(
          yield* call(client, "flotta_decide", {
            id: asked.id,
            behavior: "allow",
            always: true,
            updatedInput: { file_path: "b.txt", content: "changed\n" }
          })
        )
        assert.strictEqual(always.status, "allowed")
        assert.strictEqual((yield* waitTurn(client, "d", second.turnId)).result?.text, "wrote b.txt")
        // Write is allowed now: the next one runs without asking.
        const third = structured<{ turnId: string }>(
          yield* call(client, "flotta_prompt", { name: "d", text: "write c.txt" })
        )
        assert.strictEqual((yield* waitTurn(client, "d", third.turnId)).result?.text, "wrote c.txt")
        const info = structured<{ permission: unknown }>(yield* call(client, "flotta_info", { name: "d" }))
        assert.deepInclude(info.permission as object, { allow: ["Read", "Glob", "Grep", "Write"] })
      }).pipe(Effect.provide(fleet({ model }))))

    it.scoped("one nobody decides expires as a deny; deciding it afterwards is ApprovalExpired", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* call(client, "flotta_spawn", { name: "late", permission: GUARDED })
        const { turnId } = structured<{ turnId: string }>(
          yield* call(client, "flotta_prompt", { name: "late", text: "write late.txt" })
        )
        const pending = yield* pendingOf(client, "late")
        assert.strictEqual(Date.parse(pending.expiresAt) - Date.parse(pending.requestedAt), 60_000)
        yield* armed("1 minute") // the approval's own timer
        yield* TestClock.adjust("61 seconds")
        const waited = yield* waitTurn(client, "late", turnId)
        assert.match(waited.result?.text ?? "", /^not written: Nobody approved this Write call in time/)
        const [ended] = yield* approvals(client, { all: true })
        assert.deepInclude(ended!, { id: pending.id, status: "expired", decidedBy: "timeout" })
        const late = errorOf(yield* call(client, "flotta_decide", { id: pending.id, behavior: "allow" }))
        assert.strictEqual(late._tag, "ApprovalExpired")
        assert.match(late.message, /it expired at/)
      }).pipe(Effect.provide(fleet({ model, approvalTimeout: "1 minute" }))))

    it.scoped("arguments are checked: a behavior other than allow or deny, and unknown fields, are refused", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        const maybe = yield* call(client, "flotta_decide", { id: "ap_x", behavior: "maybe" })
        assert.isTrue(maybe.isError)
        assert.match(JSON.stringify(maybe.content), /behavior/)
        const reserved = yield* call(client, "flotta_decide", { id: "ap_x", behavior: "allow", by: "timeout" })
        assert.isTrue(reserved.isError)
        assert.match(JSON.stringify(reserved.content), /names how an approval ends without a decision/)
        const extra = yield* call(client, "flotta_approvals", { agnet: "w" })
        assert.isTrue(extra.isError)
        assert.match(JSON.stringify(extra.content), /agnet/)
      }).pipe(Effect.provide(fleet({ model }))))

    it.scoped("the pending approvals are the resource flotta://approvals", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* call(client, "flotta_spawn", { name: "r", permission: GUARDED })
        yield* call(client, "flotta_prompt", { name: "r", text: "write r.txt" })
        const pending = yield* pendingOf(client, "r")
        const { resources } = yield* Effect.promise(() => client.listResources())
        assert.include(resources.map((r) => r.uri), "flotta://approvals")
        const read = yield* Effect.promise(() => client.readResource({ uri: "flotta://approvals" }))
        const body = JSON.parse((read.contents[0] as { text: string }).text) as { approvals: Array<ApprovalOut> }
        assert.deepStrictEqual(body.approvals.map((a) => a.id), [pending.id])
      }).pipe(Effect.provide(fleet({ model }))))
  })
}
