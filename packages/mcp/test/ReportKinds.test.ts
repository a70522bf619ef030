/**
 * An entry of a kind this version does not know (a newer host's, in a shared store) comes through `flotta_reports`
 * as it was written, beside the known ones: the tool's output Schema keeps any kind and any data.
 */
import { assert, describe, it } from "@effect/vitest"
import { ReportLog } from "@flotta/core/ReportLog"
import { Effect } from "effect"
import { call, connect, ERAS, fleet, handler, structured } from "./support.js"

describe("flotta_reports and a newer host's kinds", () => {
  for (const era of ERAS) {
    it.scoped(`${era.era}: an unknown kind and a malformed known one are kept and shown raw`, () =>
      Effect.gen(function*() {
        const log = yield* ReportLog
        log.unsafeReplay([
          { at: "2026-01-01T00:00:00.000Z", agent: "alpha", kind: "teleported", data: { to: "mars", hops: [1, 2] } },
          { at: "2026-01-01T00:00:01.000Z", agent: "alpha", kind: "result", data: "not a result" }
        ])
        yield* log.post("alpha", "closed", { reason: "done" })
        const client = yield* connect((yield* handler()).fetch, era)
        type Page = { entries: Array<{ agent: string; kind: string; data: unknown }>; next: number }
        const page = structured<Page>(yield* call(client, "flotta_reports", { agent: "alpha" }))
        assert.deepStrictEqual(page.entries.map((e) => [e.kind, e.data]), [
          ["teleported", { to: "mars", hops: [1, 2] }],
          ["result", "not a result"],
          ["closed", { reason: "done" }]
        ])
      }).pipe(Effect.provide(fleet())))
  }
})
