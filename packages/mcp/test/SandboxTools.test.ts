/**
 * The sandbox over MCP: flotta_spawn and flotta_run take it (checked by their input schemas, a bad host named),
 * the agent's info shows it, and a machine where it cannot run answers SandboxUnavailable with what to do. In
 * process, over the in-memory Claude (no process starts, the machine is never looked at).
 */
import { assert, describe, it } from "@effect/vitest"
import type { CallToolResult } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import { call, connect, ERAS, fleet, handler, structured, text } from "./support.js"

const errorOf = (result: CallToolResult) => {
  assert.isTrue(result.isError, "expected an isError result")
  return (result.structuredContent as { error: { _tag: string; message: string } }).error
}

const session = Effect.flatMap(handler(), (h) => connect(h.fetch, ERAS[1]))

describe("the sandbox over MCP", () => {
  it.scoped("flotta_spawn takes it and flotta_info shows it; a bad host is refused by name", () =>
    Effect.gen(function*() {
      const client = yield* session
      const spawned = structured<{ sandbox?: unknown }>(
        yield* call(client, "flotta_spawn", {
          name: "boxed",
          cwd: "/w",
          sandbox: { network: { allow: ["github.com"] }, writable: ["out"] }
        })
      )
      const sandbox = { network: { allow: ["github.com"] }, writable: ["/w/out"] }
      assert.deepStrictEqual(spawned.sandbox, sandbox)
      assert.deepStrictEqual(
        structured<{ sandbox?: unknown }>(yield* call(client, "flotta_info", { name: "boxed" })).sandbox,
        sandbox
      )
      const bad = yield* call(client, "flotta_spawn", { name: "bad", sandbox: { network: { allow: ["https://x.y"] } } })
      assert.isTrue(bad.isError)
      assert.match(text(bad), /is a URL or a path, not a host/)
      const schema = (yield* Effect.promise(() => client.listTools())).tools.find((t) => t.name === "flotta_run")!
      assert.property(schema.inputSchema.properties, "sandbox")
    }).pipe(Effect.provide(fleet())))

  it.scoped("where the sandbox cannot run, spawn and run answer SandboxUnavailable with what to do", () =>
    Effect.gen(function*() {
      const client = yield* session
      const spawned = errorOf(yield* call(client, "flotta_spawn", { name: "boxed", sandbox: true }))
      assert.strictEqual(spawned._tag, "SandboxUnavailable")
      const result = yield* call(client, "flotta_spawn", { name: "boxed", sandbox: true })
      assert.match(text(result), /apt-get install -y bubblewrap socat/)
      assert.match(text(result), /flotta doctor/)
      const started = structured<{ name: string }>(
        yield* call(client, "flotta_run", { prompt: "hi", name: "boxed-run", sandbox: true })
      )
      const waited = yield* call(client, "flotta_wait", { name: started.name, run: true })
      assert.match(text(waited), /SandboxUnavailable/)
    }).pipe(Effect.provide(fleet({ sandbox: "unavailable" }))))
})
