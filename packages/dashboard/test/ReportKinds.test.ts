/**
 * The reports page and the live rows over entries this version cannot read: a newer host's kind, or a known kind
 * whose data does not fit. Each is a row like any other, its data shown raw; the pages that need typed fields (the
 * charts, an agent's last reason) skip it.
 */
import { assert, describe, it } from "@effect/vitest"
import { ReportLog } from "@flotta/core/ReportLog"
import * as Testing from "@flotta/core/Testing"
import { Effect } from "effect"
import * as Charts from "../src/Charts.js"
import type { PageRequest } from "../src/Pages.js"
import { render } from "../src/Pages.js"

const fleet = Testing.layer({ model: () => "ok" })

const page = (p: PageRequest["page"], options: Partial<PageRequest> = {}) =>
  render({ page: p, fragment: false, query: new URLSearchParams(), ...options })

const replayed = (kind: string, data: unknown) => ({ at: "2026-01-01T00:00:00.000Z", agent: "alpha", kind, data })

describe("entries the dashboard cannot read", () => {
  it.effect("the reports page shows a newer host's kind and a malformed entry raw, beside the known ones", () =>
    Effect.gen(function*() {
      const log = yield* ReportLog
      log.unsafeReplay([replayed("teleported", { to: "mars" }), replayed("result", { text: 42 })])
      yield* log.post("alpha", "closed", { reason: "done here" })
      const { html } = yield* page("reports")
      assert.include(html, `<span class="kind">teleported</span>`)
      assert.include(html, `{&quot;to&quot;:&quot;mars&quot;}`)
      assert.include(html, `{&quot;text&quot;:42}`)
      assert.include(html, "done here")
    }).pipe(Effect.provide(fleet)))

  it("the charts skip a result they cannot read, and a run's result (no turn)", () => {
    const at = "2026-01-01T00:00:00.000Z"
    const base = { seq: 1, at, agent: "alpha", kind: "result" }
    assert.isUndefined(Charts.pointOf({ ...base, data: { text: 42 } }))
    assert.isUndefined(Charts.pointOf({ ...base, data: { passed: true, commit: "abc", checks: [] } }))
    assert.isUndefined(Charts.pointOf({ ...base, kind: "teleported", data: { costUsd: 1, durationMs: 2 } }))
    assert.deepStrictEqual(
      Charts.pointOf({ ...base, data: { text: "ok", costUsd: 0.5, durationMs: 2000, modelCalls: 1 } }),
      { agent: "alpha", at: Date.parse(at), costUsd: 0.5, durationMs: 2000 }
    )
  })

  it.effect("a closed agent's page says its last report's reason, and nothing for a kind it cannot read", () =>
    Effect.gen(function*() {
      const log = yield* ReportLog
      yield* log.post("gone", "closed", { reason: "asked to" })
      log.unsafeReplay([{ ...replayed("teleported", { reason: "not to be read" }), agent: "later" }])
      const gone = yield* page("agent", { name: "gone" })
      assert.include(gone.html, "(asked to)")
      const later = yield* page("agent", { name: "later" })
      assert.include(later.html, "<strong>teleported</strong>")
      assert.notInclude(later.html, "not to be read")
    }).pipe(Effect.provide(fleet)))
})
