/**
 * The simulator's usage-limit rules, as pure functions of a request body: LIMIT answers as the usage limiter does
 * (a 429 with its headers), THROTTLE as a throttle, NEAR_LIMIT with a warning; the fleet's continuation after a
 * kept prompt resumes it.
 */
import { assert, describe, it } from "@effect/vitest"
import { CONTINUATION } from "@flotta/core/Parking"
import { decide, defaultUsage } from "../src/SimulatorRules.js"

const NOW = 1_800_000_000_000
const options = { usage: defaultUsage, toolId: "toolu_fake_1", now: NOW }
/** A request whose last user message holds these texts (the CLI's system notes come after it). */
const request = (...texts: ReadonlyArray<string>) => ({
  messages: [
    { role: "user", content: texts.map((text) => ({ type: "text", text })) },
    { role: "system", content: "notes" }
  ]
})

describe("the simulator's usage-limit rules", () => {
  it("LIMIT <s>: a 429 with the limiter's headers, reset <s> seconds from now, claim five_hour", () => {
    const ruled = decide(request("LIMIT 30 the job"), options)
    assert.strictEqual(ruled.rule, "LIMIT")
    assert.deepStrictEqual(ruled.decision, {
      _tag: "error",
      status: 429,
      message: "usage limit reached",
      headers: {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": String(NOW / 1000 + 30),
        "anthropic-ratelimit-unified-representative-claim": "five_hour"
      }
    })
  })

  it("the kept prompt merged with the fleet's continuation is resumed, not limited again", () => {
    const ruled = decide(request("LIMIT 30 the job\n", CONTINUATION), options)
    assert.strictEqual(ruled.rule, "LIMIT:resumed")
    assert.deepStrictEqual(ruled.decision._tag === "message" ? ruled.decision.content : [], [
      { type: "text", text: "RESUMED: the job" }
    ])
    assert.strictEqual(decide(request("THROTTLE x", CONTINUATION), options).rule, "THROTTLE:resumed")
    // Any other next prompt is a prompt of its own.
    assert.strictEqual(decide(request("LIMIT 30 the job\n", "ECHO next"), options).rule, "ECHO")
  })

  it("THROTTLE: rejected with no claim (not the usage limit); NEAR_LIMIT: a text with allowed_warning headers", () => {
    const throttle = decide(request("THROTTLE x"), options).decision
    assert.strictEqual(throttle._tag === "error" ? throttle.status : 0, 429)
    assert.notProperty(
      throttle._tag === "error" ? throttle.headers : {},
      "anthropic-ratelimit-unified-representative-claim"
    )
    const near = decide(request("NEAR_LIMIT almost"), options)
    assert.strictEqual(near.rule, "NEAR_LIMIT")
    assert.include(near.decision._tag === "message" ? near.decision.headers : {}, {
      "anthropic-ratelimit-unified-5h-surpassed-threshold": "0.9",
      "anthropic-ratelimit-unified-5h-utilization": "0.92"
    })
  })
})
