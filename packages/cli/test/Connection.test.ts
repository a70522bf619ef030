/**
 * A serve's refusals as a person at a shell reads them, and the store's health as a running serve sees it, read
 * from its report log over MCP (a client stand-in answers the tools; no socket, no process).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import * as Connection from "../src/Connection.js"
import * as ExitCode from "../src/ExitCode.js"
import * as McpClient from "../src/McpClient.js"

/** A client whose `flotta_reports` pages through `entries`, `limit` at a time, recording what it was asked. */
const fakeClient = (entries: ReadonlyArray<{ kind: string; data: unknown }>, asked: Array<unknown> = []) =>
  stub((_tool, args) => {
    const { cursor, limit } = args as { cursor: number; limit: number }
    asked.push(args)
    const page = entries.slice(cursor, cursor + limit).map((e, i) => ({
      seq: cursor + i + 1,
      at: "2026-01-01T00:00:00.000Z",
      agent: "store",
      ...e
    }))
    return Effect.succeed({ content: [], structuredContent: { entries: page, next: cursor + page.length } })
  })

/** A client whose tools answer with `answer`. */
const stub = (
  answer: (tool: string, args: Record<string, unknown>) => Effect.Effect<unknown, McpClient.McpFailure>
): McpClient.McpClient => ({
  url: "http://127.0.0.1:4099/mcp",
  request: () => Effect.succeed({}),
  callTool: answer
})

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
      const broken = stub(() => Effect.fail(new McpClient.McpUnreachable({ reason: "gone" })))
      assert.isTrue(Option.isNone(yield* Connection.liveStoreHealth(broken)))
    }))
})

describe("a serve's refusal", () => {
  it.effect("keeps the fleet's tag (its exit code) and gives advice for the shell, not the server's MCP advice", () =>
    Effect.gen(function*() {
      const refusing = stub(() =>
        Effect.succeed({
          isError: true,
          content: [{ type: "text", text: "AgentNotFound: no agent named \"ghost\". Call flotta_list ..." }],
          structuredContent: { error: { _tag: "AgentNotFound", message: "no agent named \"ghost\"" } }
        })
      )
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

describe("a request the server refused", () => {
  const url = "http://127.0.0.1:4099/mcp"
  const answered = (status: number, text: string, statusText: string) =>
    new McpClient.McpHttpError({ status, statusText, text })

  it("is Unauthorized on 401 or 403 (with the serve's reason, or the status text), with an exit code of its own", () => {
    const body = JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "send the token" }, id: null })
    const refused = Connection.failureOf(url, true)(answered(401, body, "Unauthorized"))
    assert.strictEqual(refused._tag, "Unauthorized")
    assert.strictEqual(
      refused.message,
      `the flotta server at ${url} refused the token (HTTP 401: send the token): check --token, FLOTTA_MCP_TOKEN or ` +
        "the config's mcp.token"
    )
    const forbidden = Connection.failureOf(url, false)(answered(403, "<html>no</html>", "Forbidden"))
    assert.strictEqual(
      forbidden.message,
      `the flotta server at ${url} needs a token, and none was sent (HTTP 403: Forbidden): check --token, ` +
        "FLOTTA_MCP_TOKEN or the config's mcp.token"
    )
    assert.strictEqual(ExitCode.exitCodeFor("Unauthorized"), 17)
    assert.notStrictEqual(ExitCode.exitCodeFor("Unauthorized"), ExitCode.exitCodeFor("ServerUnreachable"))
  })

  it("is ServerUnreachable for any other answer, or none", () => {
    assert.strictEqual(
      Connection.failureOf(url, true)(answered(404, "Not Found", "Not Found"))._tag,
      "ServerUnreachable"
    )
    const none = Connection.failureOf(url, true)(new McpClient.McpUnreachable({ reason: "connect ECONNREFUSED" }))
    assert.strictEqual(none._tag, "ServerUnreachable")
    assert.include(none.message, `no flotta server answered at ${url} (connect ECONNREFUSED)`)
  })
})
