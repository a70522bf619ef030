/**
 * What crosses between hosts: an agent's options as wire data (`WireOptions`), as a placement keeps them (JSON in
 * the shared store, the same fields as ever) and as another host decodes them to start the agent after a move.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AgentOptions } from "@flotta/core/Agent"
import { Duration, Schema } from "effect"
import { WireOptions, wireOptions } from "../src/WireViews.js"

const Placed = Schema.parseJson(WireOptions)
const place = (options: AgentOptions) => Schema.encodeSync(Placed)(wireOptions(options))
const move = (json: string) => Schema.decodeUnknownSync(Placed)(json)

describe("Protocol: options over the wire", () => {
  it("a sandbox survives a placement and a move, with the rest of the options", () => {
    const options: AgentOptions = {
      cwd: "/srv/repo",
      model: "sonnet",
      permission: { allow: ["Read", "Bash"] },
      timeout: Duration.seconds(90),
      sandbox: { network: { allow: ["github.com", "api.github.com"] }, writable: ["/srv/cache"] }
    }
    const placed = place(options)
    assert.strictEqual(JSON.parse(placed).timeoutMs, 90_000)
    const moved = move(placed)
    assert.deepStrictEqual(moved.sandbox, options.sandbox)
    assert.deepStrictEqual(moved.permission, options.permission)
    assert.strictEqual(Duration.toMillis(moved.timeout!), 90_000)
    assert.strictEqual(move(place({ sandbox: true })).sandbox, true)
    assert.notProperty(move(place({ cwd: "/x" })), "sandbox")
  })

  it("a permission given as a function and the host stay behind", () => {
    const data = move(place({ cwd: "/x", host: "node-b", permission: () => ({ behavior: "allow" }) }))
    assert.deepStrictEqual(data, { cwd: "/x" })
  })
})
