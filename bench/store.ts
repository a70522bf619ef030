/**
 * The durable store: report-log appends per second, committed (the clock stops when `flush` says everything is
 * on disk), and cursor reads out of a million entries, on SQLite and on Postgres, against the memory store
 * measured in the same run.
 *   npx tsx bench/store.ts        (BENCH_STORE_APPENDS=200000, BENCH_STORE_ENTRIES=1000000)
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ReportLog } from "../packages/core/src/ReportLog.js"
import { Store } from "../packages/core/src/Store.js"
import { makeMemory } from "../packages/core/src/Store.js"
import type { StoreShape } from "../packages/core/src/Store.js"
import { findPostgresBinaries, startPostgres } from "../test/support/postgres.js"
import { fmtInt, fmtMs, fmtRate, fmtRatio, fmtUs, isMain, main, median, row, targetRow } from "./lib.js"

const APPENDS = Number(process.env["BENCH_STORE_APPENDS"] ?? 200_000)
const ENTRIES = Number(process.env["BENCH_STORE_ENTRIES"] ?? 1_000_000)
const AGENTS = Array.from({ length: 10 }, (_, i) => `agent-${i}`)
const DATA = { text: "echo: hello", costUsd: 0.001, durationMs: 3, modelCalls: 1 }
const SINCE = Math.floor(ENTRIES / 2)
const LIMIT = 100
const READS = 500

interface Open {
  readonly log: ReportLog
  readonly store: StoreShape
  readonly close: Effect.Effect<void>
}

const open = (layer: Layer.Layer<Store, unknown>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(ReportLog.Default.pipe(Layer.provideMerge(layer)), scope).pipe(
      Effect.orDie
    )
    return {
      log: Context.get(context, ReportLog),
      store: Context.get(context, Store),
      close: Scope.close(scope, Exit.void)
    } satisfies Open
  })

/** `count` posts, then waits for the store to say they are committed. Milliseconds. */
const appendCommitted = (o: Open, count: number) =>
  Effect.gen(function*() {
    const t0 = performance.now()
    for (let i = 0; i < count; i++) yield* o.log.post(AGENTS[i % AGENTS.length]!, "result", DATA, "t1")
    if (!(yield* o.store.flush(600_000))) throw new Error("the store did not commit")
    return performance.now() - t0
  })

/** Median of one read's time, after a warm-up. */
const readTime = (o: Open, agent?: string) =>
  Effect.gen(function*() {
    const query = { since: SINCE, limit: LIMIT, ...(agent === undefined ? {} : { agent }) }
    const page = yield* o.store.readReports(query)
    const ok = page.entries.length === LIMIT && (agent !== undefined || page.entries[0]!.seq === SINCE + 1)
    for (let i = 0; i < 50; i++) yield* o.store.readReports(query)
    const times: Array<number> = []
    for (let i = 0; i < READS; i++) {
      const t0 = performance.now()
      yield* o.store.readReports(query)
      times.push(performance.now() - t0)
    }
    return { ms: median(times), ok }
  })

const measure = (layer: Layer.Layer<Store, unknown>) =>
  Effect.gen(function*() {
    const appends = yield* open(layer)
    const appendMs = yield* appendCommitted(appends, APPENDS)
    yield* appends.close
    // A million entries for the reads, committed in batches of 100,000.
    const reads = yield* open(layer)
    for (let done = (yield* reads.store.readReports({ last: 1 })).next; done < ENTRIES; done += 100_000) {
      yield* appendCommitted(reads, Math.min(100_000, ENTRIES - done))
    }
    const plain = yield* readTime(reads)
    const filtered = yield* readTime(reads, "agent-3")
    yield* reads.close
    return { appendRate: APPENDS / (appendMs / 1000), plain, filtered }
  })

export const run = () =>
  main("store", `Durable store (report log: ${fmtInt(APPENDS)} appends, reads out of ${fmtInt(ENTRIES)})`, async () => {
    const notes: Array<string> = []
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-bench-store-"))
    // One memory store for both phases (a fresh `Store.memory` per build would start the reads empty).
    const memory = await Effect.runPromise(measure(Layer.succeed(Store, makeMemory())))
    const sqlite = await Effect.runPromise(measure(Store.sqlite(path.join(dir, "state.db"))))
    const sizeMiB = fs.statSync(path.join(dir, "state.db")).size / 1024 / 1024
    let postgres: Effect.Effect.Success<ReturnType<typeof measure>> | undefined
    const found = findPostgresBinaries()
    if ("missing" in found) notes.push(`Postgres skipped: ${found.missing}.`)
    else {
      const server = await startPostgres()
      try {
        postgres = await Effect.runPromise(measure(Store.postgres(await server.createDatabase("bench"))))
      } finally {
        await server.stop()
      }
    }
    fs.rmSync(dir, { recursive: true, force: true })

    const appendPass = sqlite.appendRate >= 50_000
    const readPass = sqlite.plain.ms < 2
    if (!sqlite.plain.ok || !sqlite.filtered.ok || postgres?.plain.ok === false) {
      notes.push("MISS: a cursor read returned the wrong entries.")
    }
    notes.push(
      `SQLite file after ${fmtInt(APPENDS + ENTRIES)} entries: ${sizeMiB.toFixed(0)} MiB. Appends are ` +
        "synchronous (numbered at once) and committed behind in one transaction per batch; the figure is " +
        "the time until `flush` reports every one committed."
    )
    return {
      method: `\`ReportLog.post\` × ${fmtInt(APPENDS)} (${AGENTS.length} agents in turn), then \`Store.flush\`: ` +
        `committed appends per second. Then the store is filled to ${fmtInt(ENTRIES)} entries and ` +
        `\`readReports({ since: ${fmtInt(SINCE)}, limit: ${LIMIT} })\` is timed (median of ${READS}), plain and ` +
        `with an agent filter. Baseline: \`Store.memory\` in the same run. SQLite: WAL, synchronous=normal, ` +
        `a temp file on this machine's disk; Postgres 15: a throwaway local server (fsync off).`,
      rows: [
        row("memory: appends (baseline)", fmtRate(memory.appendRate), "", "1.00×"),
        targetRow(
          "SQLite: committed appends",
          fmtRate(sqlite.appendRate),
          `${fmtRate(memory.appendRate)} memory`,
          fmtRatio(sqlite.appendRate, memory.appendRate),
          "≥ 50,000/s",
          appendPass
        ),
        ...(postgres === undefined ? [] : [
          row(
            "Postgres: committed appends",
            fmtRate(postgres.appendRate),
            `${fmtRate(memory.appendRate)} memory`,
            fmtRatio(postgres.appendRate, memory.appendRate)
          )
        ]),
        row(`memory: read ${LIMIT} of ${fmtInt(ENTRIES)} (baseline)`, fmtUs(memory.plain.ms), "", "1.00×"),
        targetRow(
          `SQLite: read ${LIMIT} of ${fmtInt(ENTRIES)}`,
          fmtMs(sqlite.plain.ms),
          `${fmtUs(memory.plain.ms)} memory`,
          fmtRatio(sqlite.plain.ms, memory.plain.ms),
          "< 2 ms",
          readPass
        ),
        row(
          "  same, agent filter",
          fmtMs(sqlite.filtered.ms),
          `${fmtUs(memory.filtered.ms)} memory`,
          fmtRatio(sqlite.filtered.ms, memory.filtered.ms)
        ),
        ...(postgres === undefined ? [] : [
          row(
            `Postgres: read ${LIMIT} of ${fmtInt(ENTRIES)}`,
            fmtMs(postgres.plain.ms),
            `${fmtUs(memory.plain.ms)} memory`,
            fmtRatio(postgres.plain.ms, memory.plain.ms)
          ),
          row(
            "  same, agent filter",
            fmtMs(postgres.filtered.ms),
            `${fmtUs(memory.filtered.ms)} memory`,
            fmtRatio(postgres.filtered.ms, memory.filtered.ms)
          )
        ])
      ],
      notes
    }
  })

if (isMain(import.meta.url)) void run()
