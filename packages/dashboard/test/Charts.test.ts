/**
 * The charts' data: hour buckets of the last 24 hours, a series per busy agent and "others" for the rest, turn
 * durations aligned on one x axis; and the same from a live in-memory fleet's report log under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Flotta } from "@flotta/core/Flotta"
import * as Testing from "@flotta/core/Testing"
import { Effect, Fiber, TestClock } from "effect"
import type { TurnPoint } from "../src/Charts.js"
import { build, chartData, HOUR, MAX_SERIES, OTHERS, pointOf } from "../src/Charts.js"

const NOW = Date.parse("2025-03-03T10:30:00Z")
const at = (iso: string) => Date.parse(iso)
const point = (agent: string, iso: string, costUsd: number, durationMs = 1000): TurnPoint => ({
  agent,
  at: at(iso),
  costUsd,
  durationMs
})

describe("chart data", () => {
  it("cost per hour: 24 hour buckets up to now, summed per agent; older turns left out", () => {
    const charts = build([
      point("a", "2025-03-03T10:05:00Z", 0.1),
      point("a", "2025-03-03T10:20:00Z", 0.2),
      point("b", "2025-03-03T09:59:59Z", 0.05),
      point("a", "2025-03-02T11:00:00Z", 1), // the first hour of the window
      point("b", "2025-03-02T10:59:59Z", 7) // just before it
    ], NOW)
    const [hours, a, b] = charts.costPerHour.data
    assert.deepStrictEqual(charts.costPerHour.series, ["a", "b"])
    assert.strictEqual(hours!.length, 24)
    assert.strictEqual(hours![0], at("2025-03-02T11:00:00Z") / 1000)
    assert.strictEqual(hours![23], at("2025-03-03T10:00:00Z") / 1000)
    assert.strictEqual(a![23], 0.3) // rounded: not 0.30000000000000004
    assert.strictEqual(a![0], 1)
    assert.strictEqual(b![22], 0.05)
    assert.strictEqual(b!.reduce((s, v) => s! + v!, 0), 0.05)
    assert.strictEqual(charts.from, "2025-03-02T11:00:00.000Z")
    assert.strictEqual(charts.to, "2025-03-03T10:30:00.000Z")
  })

  it("turn duration: every turn on one time axis, each series null where another has the point", () => {
    const charts = build([
      point("b", "2025-03-03T10:02:00Z", 0.01, 250),
      point("a", "2025-03-03T10:01:00Z", 0.02, 1200),
      point("a", "2025-03-03T10:03:00Z", 0.02, 900)
    ], NOW)
    assert.deepStrictEqual(charts.turnDuration.series, ["a", "b"])
    assert.deepStrictEqual(charts.turnDuration.data, [
      [at("2025-03-03T10:01:00Z") / 1000, at("2025-03-03T10:02:00Z") / 1000, at("2025-03-03T10:03:00Z") / 1000],
      [1200, null, 900],
      [null, 250, null]
    ])
  })

  it("the busiest agents get a series each, by spend, and the rest share \"others\"", () => {
    const agents = Array.from({ length: MAX_SERIES + 3 }, (_, i) => `agent-${String(i).padStart(2, "0")}`)
    const charts = build(agents.map((name, i) => point(name, "2025-03-03T10:10:00Z", (i + 1) / 100)), NOW)
    const series = charts.costPerHour.series
    assert.strictEqual(series.length, MAX_SERIES + 1)
    assert.strictEqual(series[0], agents.at(-1))
    assert.strictEqual(series.at(-1), OTHERS)
    assert.strictEqual(charts.costPerHour.data.at(-1)![23], 0.06) // the three cheapest: 0.01 + 0.02 + 0.03
    assert.deepStrictEqual(charts.turnDuration.series, series)
    // One more agent than the cap needs no "others": it gets its own series.
    assert.notInclude(
      build(agents.slice(0, MAX_SERIES + 1).map((n) => point(n, "2025-03-03T10:00:00Z", 1)), NOW)
        .costPerHour.series,
      OTHERS
    )
  })

  it("no turns: the hours, and no series", () => {
    const charts = build([], NOW)
    assert.deepStrictEqual(charts.costPerHour.series, [])
    assert.strictEqual(charts.costPerHour.data.length, 1)
    assert.deepStrictEqual(charts.turnDuration.data, [[]])
  })

  it("pointOf: a turn's result entry; a verify's result (no cost) and other kinds are none", () => {
    const entry = { seq: 1, at: "2025-03-03T10:00:00.000Z", agent: "a", kind: "result" }
    assert.deepStrictEqual(pointOf({ ...entry, data: { text: "x", costUsd: 0.5, durationMs: 10, modelCalls: 1 } }), {
      agent: "a",
      at: at("2025-03-03T10:00:00Z"),
      costUsd: 0.5,
      durationMs: 10
    })
    assert.isUndefined(pointOf({ ...entry, data: { passed: true, commit: "abc", checks: [] } }))
    assert.isUndefined(pointOf({ ...entry, kind: "error", data: { costUsd: 1, durationMs: 1 } }))
    assert.isUndefined(pointOf({ ...entry, data: null }))
  })

  it.effect("from the fleet: each finished turn's cost in its hour, and its duration", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW - HOUR)
      const fleet = yield* Flotta
      yield* fleet.spawn("a")
      yield* fleet.spawn("b")
      yield* fleet.ask("a", "one")
      yield* TestClock.adjust("1 hour")
      const slow = yield* Effect.fork(fleet.ask("b", "slow"))
      yield* TestClock.adjust("1500 millis")
      yield* Fiber.join(slow)
      yield* fleet.ask("a", "two")
      const charts = yield* chartData
      assert.deepStrictEqual(charts.costPerHour.series, ["a", "b"])
      const [, a, b] = charts.costPerHour.data
      assert.deepStrictEqual([a![22], a![23], b![22], b![23]], [0.001, 0.001, 0, 0.001])
      const [xs, aMs, bMs] = charts.turnDuration.data
      assert.strictEqual(xs!.length, 3)
      assert.deepStrictEqual(bMs, [null, 1500, null])
      assert.deepStrictEqual(aMs!.map((v) => v === null), [false, true, false])
    }).pipe(
      Effect.provide(
        Testing.layer({
          model: ({ prompt }) => (prompt === "slow" ? Testing.delay("1500 millis", "done") : `echo: ${prompt}`)
        })
      )
    ))
})
