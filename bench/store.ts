/**
 * The durable store: report-log appends per second, committed (the clock stops when `flush` says everything is
 * on disk), and cursor reads out of a million entries, on SQLite and on Postgres, against the memory store
 * measured in the same run. SQLite runs on the driver this Node uses (node:sqlite on 22.13 and later,
 * better-sqlite3 on 20); beside node:sqlite the appends are measured on better-sqlite3 too, in a child process
 * (on Node 24.19 and later better-sqlite3 12 can abort it: that is reported), from the repository's own or from
 * the copy BENCH_STORE_BETTER_SQLITE3 names (a directory to resolve it from).
 *   npx tsx bench/store.ts        (BENCH_STORE_APPENDS=200000, BENCH_STORE_ENTRIES=1000000)
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as PostgresStore from "../packages/core/src/PostgresStore.js"
import { ReportLog } from "../packages/core/src/ReportLog.js"
import * as Sqlite from "../packages/core/src/Sqlite.js"
import * as SqliteStore from "../packages/core/src/SqliteStore.js"
import { Store } from "../packages/core/src/Store.js"
import { makeMemory } from "../packages/core/src/Store.js"
import type { StoreShape } from "../packages/core/src/Store.js"
import { findPostgresBinaries, startPostgres } from "../test/support/postgres.js"
import { fmtInt, fmtMs, fmtRate, fmtRatio, fmtUs, isMain, main, median, ROOT, row, targetRow } from "./lib.js"

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

/** The store on one SQLite driver, for the append comparison. */
const sqliteOn = (file: string, driver: Sqlite.DriverChoice) => Layer.scoped(Store, SqliteStore.make(file, { driver }))

const APPENDS_ON = "--appends-on"

/**
 * The appends on better-sqlite3, in a child process (this file with `--appends-on <driver>`): its rate, or why
 * there is none (it does not load here, or it aborted the child).
 */
const betterSqlite3Appends = (dir: string) => {
  const driver = process.env["BENCH_STORE_BETTER_SQLITE3"] ?? "better-sqlite3"
  const child = spawnSync(
    process.execPath,
    ["--import", "tsx", fileURLToPath(import.meta.url), APPENDS_ON, driver, path.join(dir, "better-sqlite3.db")],
    { cwd: ROOT, encoding: "utf8", env: process.env }
  )
  const last = child.stdout.trim().split("\n").at(-1) ?? ""
  const aborted = child.signal === "SIGABRT"
    ? `better-sqlite3 12 aborted the process (SIGABRT${
      child.stderr.includes("RemoveEnvironmentCleanupHook") ? ", the RemoveEnvironmentCleanupHook assertion" : ""
    }) on Node ${process.versions.node}`
    : undefined
  try {
    const measured = JSON.parse(last) as { readonly name: string; readonly rate: number } | string
    if (typeof measured !== "string") return { ...measured, aborted }
  } catch {
    // no figure: it died first
  }
  if (aborted !== undefined) return `${aborted} before its appends were committed`
  return `better-sqlite3 not measured: ${last || child.stderr.slice(-500)}`
}

const appendsOnly = (layer: Layer.Layer<Store, unknown>) =>
  Effect.gen(function*() {
    const appends = yield* open(layer)
    const appendMs = yield* appendCommitted(appends, APPENDS)
    yield* appends.close
    return APPENDS / (appendMs / 1000)
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
    const sqlite = await Effect.runPromise(measure(SqliteStore.layer(path.join(dir, "state.db"))))
    const sizeMiB = fs.statSync(path.join(dir, "state.db")).size / 1024 / 1024
    const driver = await Effect.runPromise(Sqlite.driver(dir))
    const other = driver === "node:sqlite"
      ? betterSqlite3Appends(dir)
      : `Node ${process.versions.node} has no node:sqlite`
    if (typeof other === "string") notes.push(`Only ${driver} measured: ${other}.`)
    else if (other.aborted !== undefined) notes.push(`${other.aborted} after its appends were measured.`)
    let postgres: Effect.Effect.Success<ReturnType<typeof measure>> | undefined
    const found = findPostgresBinaries()
    if ("missing" in found) notes.push(`Postgres skipped: ${found.missing}.`)
    else {
      const server = await startPostgres()
      try {
        postgres = await Effect.runPromise(measure(PostgresStore.layer(await server.createDatabase("bench"))))
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
          `SQLite (${driver}): committed appends`,
          fmtRate(sqlite.appendRate),
          `${fmtRate(memory.appendRate)} memory`,
          fmtRatio(sqlite.appendRate, memory.appendRate),
          "≥ 50,000/s",
          appendPass
        ),
        ...(typeof other === "string" ? [] : [
          row(
            `SQLite (${other.name}): committed appends`,
            fmtRate(other.rate),
            `${fmtRate(sqlite.appendRate)} ${driver}`,
            fmtRatio(other.rate, sqlite.appendRate)
          )
        ]),
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
          `SQLite (${driver}): read ${LIMIT} of ${fmtInt(ENTRIES)}`,
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

const appendsOn = process.argv.indexOf(APPENDS_ON)
if (appendsOn >= 0) {
  const [text, file] = process.argv.slice(appendsOn + 1) as [string, string]
  const choice: Sqlite.DriverChoice = text === "better-sqlite3" ? text : { betterSqlite3From: text }
  const measured = await Effect.runPromise(
    Effect.gen(function*() {
      const name = yield* Sqlite.driver(file, choice)
      return { name, rate: yield* appendsOnly(sqliteOn(file, choice)) }
    }).pipe(Effect.catchAll((e) => Effect.succeed(e.message)))
  )
  process.stdout.write(JSON.stringify(measured) + "\n")
  process.exitCode = typeof measured === "string" ? 3 : 0
} else if (isMain(import.meta.url)) void run()
