/**
 * Parking at usage limits over MCP, in process (the SDK client on the handler's fetch, no socket), in both
 * protocol eras, over the in-memory Claude with every timer on the TestClock: a limit shows as status `parked`
 * with `parkedUntil` in flotta_status, flotta_info and flotta_list (their output schemas accept it), and
 * flotta_unpark resumes one agent or all, the parked turn's answer being the continuation's.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Testing from "@flotta/core/Testing"
import type { CallToolResult } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import type { Era } from "./support.js"
import { call, connect, ERAS, fleet, handler, script, structured, until } from "./support.js"

/** The shared script, plus `limit`: the usage limit, reset in an hour; a resumed prompt says so. */
const model: Testing.Model = (input) =>
  input.resumed ? `resumed: ${input.prompt}` : input.prompt === "limit" ? Testing.usageLimit() : script(input)

const ENV = { ANTHROPIC_API_KEY: "sk-mcp-secret" }

const session = (era: Era) => Effect.flatMap(handler(), (h) => connect(h.fetch, era))

interface Status {
  readonly status: string
  readonly current: string | null
  readonly queued: number
  readonly parkedUntil: string | null
}

interface Unparked {
  readonly unparked: ReadonlyArray<string>
  readonly parking: ReadonlyArray<{ readonly agents: ReadonlyArray<string>; readonly credentials: string }>
}

const errorOf = (result: CallToolResult) => {
  assert.isTrue(result.isError, "expected an isError result")
  return (result.structuredContent as { error: { _tag: string } }).error
}

for (const era of ERAS) {
  describe(`parking over MCP, ${era.era} era`, () => {
    it.scoped("status, info and list show parked with parkedUntil; flotta_unpark resumes one agent, then all", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        for (const name of ["a", "b"]) yield* call(client, "flotta_spawn", { name, env: ENV })
        yield* call(client, "flotta_prompt", { name: "a", text: "limit" })
        const status = (name: string) =>
          call(client, "flotta_status", { name }).pipe(Effect.map((r) => structured<Status>(r)))
        const a = yield* until(status("a"), (s) => s.status === "parked", "a parked")
        assert.strictEqual(a.current, "t1")
        assert.strictEqual(a.parkedUntil, new Date(3_600_000).toISOString())
        const info = structured<Status>(yield* call(client, "flotta_info", { name: "b" }))
        assert.deepStrictEqual([info.status, info.parkedUntil], ["parked", a.parkedUntil])
        const list = structured<{ agents: ReadonlyArray<Status & { name: string }> }>(
          yield* call(client, "flotta_list", {})
        )
        assert.deepStrictEqual(list.agents.map((x) => [x.name, x.status]), [["a", "parked"], ["b", "parked"]])

        yield* call(client, "flotta_prompt", { name: "b", text: "queued" })
        const one = structured<Unparked>(yield* call(client, "flotta_unpark", { agent: "b" }))
        assert.deepStrictEqual(one.unparked, ["b"])
        assert.deepStrictEqual(one.parking.map((g) => g.agents), [["a"]])
        assert.notInclude(one.parking[0]!.credentials, "secret")
        const waited = structured<{ done: boolean; result: { text: string } }>(
          yield* call(client, "flotta_wait", { name: "b", turnId: "t1" })
        )
        assert.strictEqual(waited.result.text, "echo: queued")

        const all = structured<Unparked>(yield* call(client, "flotta_unpark", {}))
        assert.deepStrictEqual(all, { unparked: ["a"], parking: [] })
        const resumed = structured<{ done: boolean; result: { text: string } }>(
          yield* call(client, "flotta_wait", { name: "a", turnId: "t1" })
        )
        assert.strictEqual(resumed.result.text, "resumed: limit")
        assert.isNull((yield* status("a")).parkedUntil)
        assert.strictEqual(errorOf(yield* call(client, "flotta_unpark", { agent: "nobody" }))._tag, "AgentNotFound")
      }).pipe(Effect.provide(fleet({ model, parkJitter: 0 }))))
  })
}
