/**
 * Usage limits against the real pinned `claude` binary, offline, with the simulator answering as the usage
 * limiter does (LIMIT: a 429 with its headers; NEAR_LIMIT: a 200 with `allowed_warning`). The CLI reads those
 * headers only for a subscription login, so these agents log in with `CLAUDE_CODE_OAUTH_TOKEN` and no API key.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as Flotta from "../packages/core/src/Flotta.js"
import { CONTINUATION } from "../packages/core/src/Parking.js"
import type { RecordedRequest } from "./support/FakeMessagesApi.js"
import { CLAUDE, useOfflineApi } from "./support/realCli.js"
import { waitFor } from "./support/waiting.js"

const offline = useOfflineApi("flotta-parking", { login: "subscription" })

const realFleet = (options: Flotta.FleetOptions = {}) =>
  Flotta.layer({ claudePath: CLAUDE, parkJitter: 0, parkStagger: "400 millis", ...options }).pipe(
    Layer.provide(NodeContext.layer)
  )

/** The user texts of a request's last user message (the CLI merges queued and kept prompts into it). */
const lastUserTexts = (request: RecordedRequest): ReadonlyArray<string> => {
  const messages = (request.body as { messages?: ReadonlyArray<{ role: string; content: unknown }> }).messages ?? []
  const last = [...messages].reverse().find((m) => m.role === "user")
  const content = Array.isArray(last?.content) ? last.content as ReadonlyArray<{ type: string; text?: string }> : []
  return content.flatMap((b) => (b.type === "text" && b.text !== undefined ? [b.text] : []))
}

describe("usage limits with the real claude CLI", () => {
  it.scopedLive(
    "a limit parks both agents on the same credentials; after the reset the parked turn's answer is the " +
      "continuation's, the queued turns run, and the prompt was sent once",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        const env = offline.env
        yield* fleet.spawn("first", { cwd: offline.workdir("first"), env })
        yield* fleet.spawn("second", { cwd: offline.workdir("second"), env })
        const hit = yield* fleet.prompt("first", "LIMIT 5 the first job")
        const first = yield* waitFor(fleet.status("first"), (s) => s.status === "parked", "first parked")
        assert.strictEqual(first.current, hit)
        const second = yield* fleet.status("second")
        assert.deepStrictEqual([second.status, second.parkedUntil], ["parked", first.parkedUntil])
        const until = Date.parse(first.parkedUntil!)

        // Queued turns wait for the reset; they do not fail.
        const afterFirst = yield* fleet.prompt("first", "ECHO after the limit")
        const queuedSecond = yield* fleet.prompt("second", "ECHO queued behind the limit")
        assert.strictEqual((yield* fleet.status("second")).queued, 1)
        const parked = (yield* fleet.reports({ kinds: ["parked"] })).entries
        assert.deepStrictEqual(parked.map((e) => [e.agent, e.turnId ?? null]).sort(), [
          ["first", hit],
          ["second", null]
        ])
        assert.include(parked[0]!.data as object, { reason: "usage_limit", rateLimitType: "five_hour" })
        assert.match((parked[0]!.data as { message: string }).message, /^You've hit your 5-hour limit/)

        const resumed = yield* fleet.wait("first", hit)
        assert.strictEqual(resumed.text, "RESUMED: the first job")
        assert.strictEqual((yield* fleet.wait("first", afterFirst)).text, "ECHO: after the limit")
        assert.strictEqual((yield* fleet.wait("second", queuedSecond)).text, "ECHO: queued behind the limit")

        // The limit was met once; the continuation's request carries the kept prompt once (never sent again).
        const requests = offline.api.requests.filter((r) => r.rule === "LIMIT" || r.rule === "LIMIT:resumed")
        assert.deepStrictEqual(requests.map((r) => r.rule), ["LIMIT", "LIMIT:resumed"])
        const merged = lastUserTexts(requests[1]!)
        assert.strictEqual(merged.filter((t) => t.includes("the first job")).length, 1, JSON.stringify(merged))
        assert.strictEqual(merged[merged.length - 1], CONTINUATION)
        assert.isAtLeast(requests[1]!.time, until, "the continuation went out before the reset")
        // Nothing queued reached the API before the reset.
        for (const r of offline.api.requests.filter((r) => r.prompt?.includes("queued behind") === true)) {
          assert.isAtLeast(r.time, until)
        }
        // Staggered: the agent with the parked turn first, the other a stagger later.
        const unparked = (yield* fleet.reports({ kinds: ["unparked"] })).entries
        assert.deepStrictEqual(unparked.map((e) => e.agent), ["first", "second"])
        assert.isAtLeast(Date.parse(unparked[1]!.at) - Date.parse(unparked[0]!.at), 400)
        assert.deepStrictEqual(yield* fleet.parking, [])
      }).pipe(Effect.provide(realFleet())),
    120_000
  )

  it.scopedLive("unpark by hand resumes the parked turn long before its reset", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      // Its own config directory: other credentials, so the first test's group is not this one.
      const env = { ...offline.env, CLAUDE_CONFIG_DIR: `${offline.root}/manual-config` }
      fs.mkdirSync(env.CLAUDE_CONFIG_DIR, { recursive: true })
      yield* fleet.spawn("manual", { cwd: offline.workdir("manual"), env })
      const hit = yield* fleet.prompt("manual", "LIMIT 3600 the long wait")
      yield* waitFor(fleet.status("manual"), (s) => s.status === "parked", "manual parked")
      assert.deepStrictEqual(yield* fleet.unpark({ agent: "manual" }), { unparked: ["manual"] })
      assert.strictEqual((yield* fleet.wait("manual", hit)).text, "RESUMED: the long wait")
    }).pipe(Effect.provide(realFleet())), 120_000)

  it.scopedLive(
    "an API key's 429 has no reset time: the fleet's own backoff, then the continuation",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        // With an API key the CLI reads none of the limiter's headers: a plain 429.
        const env = { ...offline.env, ANTHROPIC_API_KEY: "dummy" }
        yield* fleet.spawn("keyed", { cwd: offline.workdir("keyed"), env })
        const hit = yield* fleet.prompt("keyed", "LIMIT 3600 with a key")
        const parked = yield* waitFor(fleet.status("keyed"), (s) => s.status === "parked", "keyed parked")
        const [group] = yield* fleet.parking
        assert.strictEqual(group!.reason, "rate_limited")
        assert.match(group!.message, /Request rejected \(429\)/)
        assert.isBelow(Date.parse(parked.parkedUntil!) - Date.now(), 3_000, "the backoff, not the hour's reset")
        assert.strictEqual((yield* fleet.wait("keyed", hit)).text, "RESUMED: with a key")
      }).pipe(Effect.provide(realFleet({ parkBackoff: "2 seconds" }))),
    120_000
  )

  it.scopedLive(
    "allowed_warning is recorded as usage_warning; the child is told the fleet waits, not the CLI",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        const info = yield* fleet.spawn("warned", { cwd: offline.workdir("warned"), env: offline.env })
        assert.strictEqual(yield* fleet.ask("warned", "NEAR_LIMIT almost there"), "ECHO: almost there")
        const warnings = yield* waitFor(
          Effect.map(fleet.reports({ kinds: ["usage_warning"] }), (p) => p.entries),
          (entries) => entries.length > 0,
          "a usage_warning"
        )
        assert.include(warnings[0]!.data as object, { rateLimitType: "five_hour", utilization: 0.92 })
        assert.strictEqual((yield* fleet.status("warned")).status, "idle")
        const environ = fs.readFileSync(`/proc/${info.pid}/environ`, "utf8").split("\0")
        assert.include(environ, "CLAUDE_CODE_RETRY_WATCHDOG=0")
      }).pipe(Effect.provide(realFleet())),
    120_000
  )
})
