/**
 * What the composition switches on for a config and a command's features: the webhooks with a `notify` section,
 * or with triggers to take (a `github` section, or routines) on a server; and where the notifications link to.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either, Option } from "effect"
import * as Composition from "../src/Composition.js"
import * as ConfigFile from "../src/ConfigFile.js"
import * as ServeCommand from "../src/ServeCommand.js"

/** The config, with the session its routines prompt. */
const decoded = (raw: Record<string, unknown>) =>
  Either.getOrThrow(ConfigFile.decode("/p/flotta.config.json", { agents: [{ name: "scout" }], ...raw }))
const SERVE = { simulate: false, mcp: true, dashboard: true, schedule: true, webhooks: true }
const NOTIFY = [{ url: "https://hooks.example.com/secret/path", events: ["*"] }]
const GITHUB = { secret: "0123456789abcdef-github", on: [] }
const SCHEDULE = { timezone: "utc", hours: {} }
const ROUTINES = [{ name: "fix-ci", action: "prompt", agent: "scout", prompt: "Fix." }]

describe("the webhooks in the composition", () => {
  it("on with notify, github or routines on a server; off for a command that does not ask", () => {
    const on = (raw: Record<string, unknown>, features: Composition.Features = SERVE) =>
      Composition.enabled(decoded(raw), features).webhooks
    assert.isFalse(on({ mcp: {} }))
    assert.isTrue(on({ notify: NOTIFY }), "notifications need no server")
    assert.isTrue(on({ mcp: {}, github: GITHUB }))
    assert.isTrue(on({ dashboard: {}, schedule: SCHEDULE, routines: ROUTINES }), "a routine can be triggered")
    assert.isFalse(on({ mcp: {}, schedule: SCHEDULE }), "no routine, nothing to trigger")
    assert.isFalse(on({ schedule: SCHEDULE, routines: ROUTINES }), "no server takes the trigger")
    assert.isFalse(on({ mcp: {}, schedule: SCHEDULE, routines: ROUTINES }, { ...SERVE, schedule: false }))
    assert.isFalse(on({ notify: NOTIFY }, { simulate: false, mcp: true }), "run and mcp compose no webhooks")
  })

  it("the notifications link to the configured dashboard: its own port, or the MCP server's it shares", () => {
    const url = (raw: Record<string, unknown>, features: Composition.Features = SERVE) => {
      const config = decoded(raw)
      return Composition.configuredDashboardUrl(config, Composition.enabled(config, features))
    }
    assert.strictEqual(url({ mcp: {}, dashboard: {} }), "http://127.0.0.1:4099/")
    assert.strictEqual(
      url({ mcp: { port: 5000, host: "10.0.0.2", token: "0123456789abcdef" }, dashboard: {} }),
      "http://10.0.0.2:5000/"
    )
    assert.strictEqual(url({ mcp: { port: 5000 }, dashboard: { port: 4100 } }), "http://127.0.0.1:4100/")
    assert.strictEqual(url({ dashboard: { port: 4100, host: "::1" } }), "http://[::1]:4100/")
    assert.strictEqual(url({ dashboard: {} }), "http://127.0.0.1:4099/")
    assert.isUndefined(url({ mcp: {} }), "no dashboard, no link")
    assert.isUndefined(url({ mcp: { port: 0 }, dashboard: {} }), "a port chosen at start is not known yet")
    assert.isUndefined(url({ mcp: {}, dashboard: {} }, { ...SERVE, dashboard: false }))
  })

  it("serve says what the webhooks do, never a target's URL", () => {
    const config = decoded({ mcp: {}, notify: NOTIFY, github: GITHUB, schedule: SCHEDULE, routines: ROUTINES })
    const on = Composition.enabled(config, SERVE)
    assert.strictEqual(
      ServeCommand.describeWebhooks(config, on, Option.some("http://127.0.0.1:4099/mcp")),
      "notifications to 1 target, triggers at http://127.0.0.1:4099/hooks/{routines/NAME,github}"
    )
    assert.strictEqual(
      ServeCommand.describeWebhooks(decoded({}), Composition.enabled(decoded({}), SERVE), Option.none()),
      "webhooks off"
    )
  })
})
