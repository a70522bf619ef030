/**
 * The report log in memory: appends per second through the Effect API (1,000,000 `post`s in one Effect loop) and
 * the cost of a cursor read from the middle of a million entries, plain and filtered by agent. The baseline is a
 * plain JS array receiving the same entry objects, and the same slice/filter done by hand on it.
 *   npx tsx bench/report-log.ts        (BENCH_ENTRIES=1000000)
 */
import { Effect, Layer } from "effect"
import { ReportLog } from "../packages/core/src/ReportLog.js"
import type { ReportEntry } from "../packages/core/src/ReportLog.js"
import { Store } from "../packages/core/src/Store.js"
import { fmtInt, fmtRate, fmtRatio, fmtUs, gc, isMain, main, median, row, targetRow } from "./lib.js"

const ENTRIES = Number(process.env["BENCH_ENTRIES"] ?? 1_000_000)
const AGENTS = Array.from({ length: 10 }, (_, i) => `agent-${i}`)
const DATA = { text: "echo: hello", costUsd: 0.001, durationMs: 3, modelCalls: 1 }
const SINCE = Math.floor(ENTRIES / 2)
const LIMIT = 100
const FILTER = "agent-3"
const READS = 2_000
const READ_ROUNDS = 7

// What variants of `post` measured (2026-11-29); kept with the miss it explains.
const CAUSE = "Cause (diagnosed 2026-11-29): `ReportLog.post` is five Effect steps per entry " +
  "(`Clock.currentTimeMillis`, `flatMap`, the store's `Effect.sync`, `tap`, another `Effect.sync`) and two object " +
  "spreads (the optional `turnId`, and `{ seq, ...entry }` in the memory store); at Effect 3's ~0.2 µs per step " +
  "on this machine that is ~2.5 µs per entry, and a fresh `toISOString()` per entry. `Effect.clockWith` + " +
  "`Effect.map`, literal entry objects and one ISO string per millisecond measured 870,000–1,030,000/s."

/** The floor: the same entry objects, built the same way (ISO time included), pushed onto an array. */
const fillArray = () => {
  const entries: Array<ReportEntry> = []
  for (let i = 0; i < ENTRIES; i++) {
    entries.push({
      seq: entries.length + 1,
      at: new Date(Date.now()).toISOString(),
      agent: AGENTS[i % AGENTS.length]!,
      kind: "result",
      turnId: "t1",
      data: DATA
    })
  }
  return entries
}

/** Median time of one call, over rounds of many calls. */
const perCall = (f: () => unknown) => {
  for (let i = 0; i < READS; i++) f()
  const rounds: Array<number> = []
  for (let r = 0; r < READ_ROUNDS; r++) {
    const t0 = performance.now()
    for (let i = 0; i < READS; i++) f()
    rounds.push((performance.now() - t0) / READS)
  }
  return median(rounds)
}

const arrayRead = (entries: ReadonlyArray<ReportEntry>, agent?: string) => {
  if (agent === undefined) return entries.slice(SINCE, SINCE + LIMIT)
  const out: Array<ReportEntry> = []
  for (let i = SINCE; i < entries.length && out.length < LIMIT; i++) {
    if (entries[i]!.agent === agent) out.push(entries[i]!)
  }
  return out
}

export const run = () =>
  main("report-log", `3. Report log (${fmtInt(ENTRIES)} entries, memory store)`, async () => {
    // Baseline append rate first; its array is dropped before the log fills, so both start from the same heap.
    gc()
    const b0 = performance.now()
    const filled = fillArray().length
    const arrayMs = performance.now() - b0
    gc()

    const layer = ReportLog.Default.pipe(Layer.provide(Store.memory))
    const measured = await Effect.runPromise(
      Effect.gen(function*() {
        const log = yield* ReportLog
        const t0 = performance.now()
        for (let i = 0; i < ENTRIES; i++) yield* log.post(AGENTS[i % AGENTS.length]!, "result", DATA, "t1")
        const postMs = performance.now() - t0

        const page = yield* log.reports({ since: SINCE, limit: LIMIT })
        const filtered = yield* log.reports({ since: SINCE, limit: LIMIT, agent: FILTER })
        const okPage = page.entries.length === LIMIT && page.entries[0]!.seq === SINCE + 1 &&
          page.next === SINCE + LIMIT
        const okFiltered = filtered.entries.length === LIMIT && filtered.entries.every((e) => e.agent === FILTER)
        // Effect.runSync per read: what a caller outside this fiber pays, run-time included.
        const readMs = perCall(() => Effect.runSync(log.reports({ since: SINCE, limit: LIMIT })))
        const filteredMs = perCall(() => Effect.runSync(log.reports({ since: SINCE, limit: LIMIT, agent: FILTER })))
        return { postMs, readMs, filteredMs, okPage, okFiltered }
      }).pipe(Effect.provide(layer))
    )

    const entries = fillArray()
    const sliceMs = perCall(() => arrayRead(entries))
    const sliceFilteredMs = perCall(() => arrayRead(entries, FILTER))

    const postRate = ENTRIES / (measured.postMs / 1000)
    const arrayRate = filled / (arrayMs / 1000)
    const pass = postRate >= 500_000
    const notes: Array<string> = [
      `Appends: ${fmtInt(ENTRIES)} in ${(measured.postMs / 1000).toFixed(2)} s (array: ${
        (arrayMs / 1000).toFixed(2)
      } s). ` +
      `Reads: median of ${READ_ROUNDS} rounds of ${fmtInt(READS)} calls; the filtered read scans ` +
      `~${LIMIT * AGENTS.length} entries (${AGENTS.length} agents posting in turn).`
    ]
    if (!pass) notes.push(`MISS: ${fmtRate(postRate)} appends (target 500,000/s).`, CAUSE)
    if (!measured.okPage || !measured.okFiltered) notes.push("MISS: a cursor read returned the wrong entries.")

    return {
      method: `\`ReportLog.Default\` over \`Store.memory\`, built with the Effect API; ${fmtInt(ENTRIES)} ` +
        `\`post(agent, "result", data, turnId)\` in one \`Effect.gen\` loop (${AGENTS.length} agents in turn). ` +
        `Cursor reads: \`reports({ since: ${fmtInt(SINCE)}, limit: ${LIMIT} })\`, then with \`agent: "${FILTER}"\`, ` +
        `each run with \`Effect.runSync\`. Baseline: the same entry objects (ISO timestamp included) pushed onto ` +
        `a plain array; \`slice\` and a hand-written filter loop on that array.`,
      rows: [
        row("array push (baseline)", fmtRate(arrayRate), "", "1.00×"),
        targetRow(
          "ReportLog.post appends",
          fmtRate(postRate),
          `${fmtRate(arrayRate)} array`,
          fmtRatio(postRate, arrayRate),
          "≥ 500,000/s",
          pass
        ),
        row(
          `cursor read of ${LIMIT} from the middle`,
          fmtUs(measured.readMs),
          `${fmtUs(sliceMs)} slice`,
          fmtRatio(measured.readMs, sliceMs)
        ),
        row(
          `  same, agent filter`,
          fmtUs(measured.filteredMs),
          `${fmtUs(sliceFilteredMs)} loop`,
          fmtRatio(measured.filteredMs, sliceFilteredMs)
        ),
        targetRow(
          "reads returned the right entries",
          measured.okPage && measured.okFiltered ? "yes" : "no",
          "",
          "",
          "yes",
          measured.okPage && measured.okFiltered
        )
      ],
      notes
    }
  })

if (isMain(import.meta.url)) await run()
