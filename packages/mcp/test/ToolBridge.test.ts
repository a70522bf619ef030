/**
 * The bridge alone, with a table of its own (not the fleet's): a value is structured content plus its JSON as
 * text, a typed failure an `isError` result that names it (with advice only for the fleet's known errors), and
 * a defect an internal error that says it is a bug, never a thrown error at the SDK. In process, both eras.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Flotta } from "@flotta/core/Flotta"
import { createMcpHandler, McpServer as SdkServer } from "@modelcontextprotocol/server"
import { Effect, Schema } from "effect"
import * as Tool from "../src/Tool.js"
import * as ToolBridge from "../src/ToolBridge.js"
import { call, connect, ERAS, fleet, text } from "./support.js"

const HINTS = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const

const table = [
  Tool.make({
    name: "double",
    title: "Double",
    description: "Doubles a number",
    annotations: HINTS,
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Struct({ doubled: Schema.Number }),
    run: ({ n }) => Effect.succeed({ doubled: 2 * n })
  }),
  Tool.make({
    name: "refuse",
    title: "Refuse",
    description: "Fails with a typed error",
    annotations: HINTS,
    input: Schema.Struct({ known: Schema.Boolean }),
    output: Schema.Struct({}),
    run: ({ known }) =>
      Effect.fail(known ? { _tag: "AgentNotFound", message: "no agent named \"x\"" } : { _tag: "Odd", message: "odd" })
  }),
  Tool.make({
    name: "crash",
    title: "Crash",
    description: "Dies: a bug",
    annotations: HINTS,
    input: Schema.Struct({}),
    output: Schema.Struct({}),
    run: () => Effect.dieMessage("boom")
  })
]

/** An in-process endpoint serving only `table`, on the runtime of the fleet in context. */
const endpoint = Effect.gen(function*() {
  const execute = ToolBridge.execute(yield* Effect.runtime<Flotta>())
  const handler = createMcpHandler(() => {
    const server = new SdkServer({ name: "bridge-test", version: "0" }, { capabilities: { tools: {} } })
    ToolBridge.register(server, execute, table)
    return server
  })
  yield* Effect.addFinalizer(() => Effect.promise(() => handler.close().catch(() => undefined)))
  return handler
})

for (const era of ERAS) {
  describe(`the tool bridge, ${era.era} era`, () => {
    it.scoped("declares the table, and answers values, typed failures and defects as tool results", () =>
      Effect.gen(function*() {
        const client = yield* connect((yield* endpoint).fetch, era)
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.deepStrictEqual(tools.map((t) => [t.name, t.title, t.annotations?.title]), [
          ["double", "Double", "Double"],
          ["refuse", "Refuse", "Refuse"],
          ["crash", "Crash", "Crash"]
        ])

        const doubled = yield* call(client, "double", { n: 21 })
        assert.isNotTrue(doubled.isError)
        assert.deepStrictEqual(doubled.structuredContent, { doubled: 42 })
        assert.deepStrictEqual(JSON.parse(text(doubled)), { doubled: 42 })

        const known = yield* call(client, "refuse", { known: true })
        assert.isTrue(known.isError)
        assert.deepStrictEqual(known.structuredContent, {
          error: { _tag: "AgentNotFound", message: "no agent named \"x\"" }
        })
        assert.strictEqual(
          text(known),
          "AgentNotFound: no agent named \"x\". Call flotta_list to see the live agents, or flotta_spawn to start one."
        )
        const odd = yield* call(client, "refuse", { known: false })
        assert.strictEqual(text(odd), "Odd: odd.")

        const crashed = yield* call(client, "crash")
        assert.isTrue(crashed.isError)
        assert.strictEqual((crashed.structuredContent as { error: { _tag: string } }).error._tag, "InternalError")
        assert.match(text(crashed), /^InternalError: crash failed unexpectedly: .*boom.*This is a bug in flotta/)

        // Arguments are validated against the input schema before a handler runs.
        const invalid = yield* call(client, "double", { n: "two" })
        assert.isTrue(invalid.isError)
        assert.match(text(invalid), /Invalid arguments for tool double: .*\bn\b/)
      }).pipe(Effect.provide(fleet())))
  })
}
