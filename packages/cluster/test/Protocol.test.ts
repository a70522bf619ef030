/**
 * What crosses between hosts: an agent's options as data (core's `AgentOptions` Schema), as a placement keeps them
 * (JSON in the shared store, the same fields as ever) and as another host decodes them to start the agent after a
 * move.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AgentOptions as Options } from "@flotta/core/Agent"
import { AgentOptions, dataOf } from "@flotta/core/AgentOptions"
import { Duration, Schema } from "effect"

const Placed = Schema.parseJson(AgentOptions)
const place = (options: Options) => Schema.encodeSync(Placed)(dataOf(options))
const move = (json: string) => Schema.decodeUnknownSync(Placed)(json)

describe("Protocol: options over the wire", () => {
  it("a sandbox survives a placement and a move, with the rest of the options", () => {
    const options: Options = {
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

  it("every data option survives a placement and a move", () => {
    const options = {
      cwd: "/srv/repo",
      model: "opus",
      permission: "read_only",
      systemPrompt: "be brief",
      appendSystemPrompt: "and kind",
      timeout: 42_000,
      env: { TEAM: "a" },
      role: "manager",
      resume: "session-1",
      extraArgs: ["--verbose"],
      lifecycle: "session",
      expectStructuredOutput: true,
      sandbox: true,
      autoCompactAt: 80,
      stream: true,
      maxBudgetUsd: 2.5,
      budgetPer: "day",
      labels: { team: "a", routine: "nightly" }
    } as const
    const moved = move(place(options))
    // Every key of the Schema is set above: a new option the wire drops fails here too.
    assert.deepStrictEqual(Object.keys(options).sort(), Object.keys(AgentOptions.fields).sort())
    assert.deepStrictEqual({ ...moved, timeout: Duration.toMillis(moved.timeout!) }, options)
  })

  it("a permission given as a function and the host stay behind", () => {
    const data = move(place({ cwd: "/x", host: "node-b", permission: () => ({ behavior: "allow" }) }))
    assert.deepStrictEqual(data, { cwd: "/x" })
  })
})
