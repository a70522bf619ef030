/**
 * A serve's refusals as a person at a shell reads them, and the store's health as a running serve sees it, read
 * from its report log over MCP (a client stand-in answers the tools; no socket, no process).
 */
import { assert, describe, it } from "@effect/vitest"
import type { Client } from "@modelcontextprotocol/client"
import { Effect, Option, Schema } from "effect"
import * as Connection from "../src/Connection.js"

/** A client whose `flotta_reports` pages through `entries`, `limit` at a time, recording what it was asked. */
const fakeClient = (entries: ReadonlyArray<{ kind: string; data: unknown }>, asked: Array<unknown> = []) =>
  ({
    callTool: ({ arguments: args }: { arguments: { cursor: number; limit: number } }) => {
      asked.push(args)
      const page = entries.slice(args.cursor, args.cursor + args.limit).map((e, i) => ({
        seq: args.cursor + i + 1,
        at: "2026-01-01T00:00:00.000Z",
        agent: "store",
        ...e
      }))
      return Promise.resolve({ content: [], structuredContent: { entries: page, next: args.cursor + page.length } })
    }
  }) as unknown as Client

const degraded = {
  state: "degraded",
  reason: "SQLITE_READONLY: attempt to write a readonly database",
  since: "2026-01-01T00:00:00.000Z",
  pending: 3,
  lost: 0
} as const

describe("the store's health from a running serve", () => {
  it.effect("degraded when its latest health entry says so; asks only for the store's own entries", () =>
    Effect.gen(function*() {
      const asked: Array<unknown> = []
      const health = yield* Connection.liveStoreHealth(
        fakeClient([{ kind: "store_degraded", data: degraded }], asked)
      )
      assert.deepStrictEqual(health, Option.some(degraded))
      assert.deepStrictEqual(asked[0], {
        agent: "store",
        kinds: ["store_degraded", "store_recovered"],
        cursor: 0,
        limit: 10_000
      })
    }))

  it.effect("ok (none) once it recovered, with no entries, or when the serve cannot say", () =>
    Effect.gen(function*() {
      const recovered = [{ kind: "store_degraded", data: degraded }, { kind: "store_recovered", data: {} }]
      assert.isTrue(Option.isNone(yield* Connection.liveStoreHealth(fakeClient(recovered))))
      assert.isTrue(Option.isNone(yield* Connection.liveStoreHealth(fakeClient([]))))
      const broken = { callTool: () => Promise.reject(new Error("gone")) } as unknown as Client
      assert.isTrue(Option.isNone(yield* Connection.liveStoreHealth(broken)))
    }))
})

describe("a serve's refusal", () => {
  it.effect("keeps the fleet's tag (its exit code) and gives advice for the shell, not the server's MCP advice", () =>
    Effect.gen(function*() {
      const refusing = {
        callTool: () =>
          Promise.resolve({
            isError: true,
            content: [{ type: "text", text: "AgentNotFound: no agent named \"ghost\". Call flotta_list ..." }],
            structuredContent: { error: { _tag: "AgentNotFound", message: "no agent named \"ghost\"" } }
          })
      } as unknown as Client
      const refused = yield* Effect.flip(Connection.call(refusing, "flotta_info", { name: "ghost" }, Schema.Unknown))
      assert.strictEqual(refused._tag, "ToolFailed")
      if (refused._tag === "ToolFailed") {
        assert.strictEqual(refused.error._tag, "AgentNotFound")
        assert.strictEqual(
          refused.message,
          "AgentNotFound: no agent named \"ghost\". `flotta list` shows the live agents; `flotta spawn NAME` starts one."
        )
      }
      assert.strictEqual(
        Connection.describeRefusal({ _tag: "TurnFailed", message: "turn t1 of \"a\" failed (HTTP 500)" }),
        "TurnFailed: turn t1 of \"a\" failed (HTTP 500)."
      )
    }))
})
