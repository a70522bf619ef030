/**
 * What crosses between hosts: an agent's options as wire data, as a placement keeps them (JSON in the shared
 * store) and as another host reads them back to start the agent after a move.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AgentOptions } from "@flotta/core/Agent"
import { Duration } from "effect"
import * as Protocol from "../src/Protocol.js"

describe("Protocol: options over the wire", () => {
  it("a sandbox survives a placement and a move, with the rest of the options", () => {
    const options: AgentOptions = {
      cwd: "/srv/repo",
      model: "sonnet",
      permission: { allow: ["Read", "Bash"] },
      timeout: Duration.seconds(90),
      sandbox: { network: { allow: ["github.com", "api.github.com"] }, writable: ["/srv/cache"] }
    }
    const placed = JSON.parse(JSON.stringify(Protocol.toWire(options))) as Protocol.WireOptions
    const moved = Protocol.fromWire(placed)
    assert.deepStrictEqual(moved.sandbox, options.sandbox)
    assert.deepStrictEqual(moved.permission, options.permission)
    assert.strictEqual(Duration.toMillis(moved.timeout!), 90_000)
    assert.strictEqual(Protocol.fromWire(Protocol.toWire({ sandbox: true })).sandbox, true)
    assert.notProperty(Protocol.fromWire(Protocol.toWire({ cwd: "/x" })), "sandbox")
  })
})
