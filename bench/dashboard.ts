/**
 * What watching costs the fleet: turns over the in-memory Claude with no dashboard (the baseline) against the
 * same turns with the dashboard on a loopback port and browsers' event streams open on it (each gets every
 * report entry as it is posted). And what the pages cost: rendering `/` for 100 agents, and a reconnecting
 * client's replay of 10,000 missed entries from the store.
 *   npx tsx bench/dashboard.ts        (BENCH_TURNS=2000, BENCH_ROUNDS=5, BENCH_STREAMS=10)
 */
import { Context, Effect, Layer, Option, TestContext } from "effect"
import * as http from "node:http"
import { Flotta } from "../packages/core/src/Flotta.js"
import * as Testing from "../packages/core/src/Testing.js"
import * as Dashboard from "../packages/dashboard/src/Dashboard.js"
import { fmtInt, fmtMs, fmtRatio, fmtUs, isMain, main, median, row } from "./lib.js"

const TURNS = Number(process.env["BENCH_TURNS"] ?? 2000)
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 5)
const STREAMS = Number(process.env["BENCH_STREAMS"] ?? 10)
const AGENTS = 20
const REPLAYED = 10_000

/** An event stream read until its `count`-th entry. */
const follow = (url: string, count: number) => {
  let seen = 0
  let resolve: () => void = () => undefined
  const done = new Promise<void>((r) => (resolve = r))
  const request = http.get(url, { agent: false }, (response) => {
    response.setEncoding("utf8")
    let partial = ""
    response.on("data", (chunk: string) => {
      // Counted by whole lines: a chunk may end in the middle of one.
      const lines = (partial + chunk).split("\n")
      partial = lines.pop()!
      for (const line of lines) if (line === "event: entry") seen++
      if (seen >= count) {
        request.destroy()
        resolve()
      }
    })
  })
  request.on("error", () => resolve())
  return { done, seen: () => seen }
}

const withFleet = <A, E>(dashboard: boolean, body: (fleet: Flotta, base: string) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const context = yield* Layer.build(
        (dashboard ? Dashboard.layer({ port: 0 }) : Layer.empty).pipe(
          Layer.provideMerge(Testing.layer({ model: ({ prompt }) => `ok ${prompt}` }))
        )
      )
      const base = Option.match(Context.getOption(context, Dashboard.Dashboard), {
        onNone: () => "",
        onSome: (d) => Option.getOrElse(d.url, () => "").replace(/\/$/, "")
      })
      return yield* body(Context.get(context, Flotta), base)
    }).pipe(Effect.scoped, Effect.provide(TestContext.TestContext))
  )

/** TURNS turns over AGENTS agents; with `streams`, that many event streams follow the log meanwhile. */
const turns = (streams: number) =>
  withFleet(streams > 0, (fleet, base) =>
    Effect.gen(function*() {
      const names = Array.from({ length: AGENTS }, (_, i) => `a${i}`)
      yield* Effect.forEach(names, (name) => fleet.spawn(name), { discard: true })
      const cursor = (yield* fleet.reports({ last: 1 })).next
      // Each turn posts two entries (turn_started, result).
      const followers = Array.from({ length: streams }, () => follow(`${base}/events?since=${cursor}`, TURNS * 2))
      const started = performance.now()
      yield* Effect.forEach(Array.from({ length: TURNS }, (_, i) => i), (i) => fleet.ask(names[i % AGENTS]!, `${i}`), {
        concurrency: AGENTS
      })
      yield* Effect.promise(() => Promise.all(followers.map((f) => f.done)))
      const ms = performance.now() - started
      const short = followers.find((f) => f.seen() < TURNS * 2)
      if (short !== undefined) throw new Error(`a stream saw ${short.seen()} of ${TURNS * 2} entries`)
      return ms
    }))

/** `/` for 100 agents with a turn each, rendered 50 times; and one client's replay of REPLAYED entries. */
const pages = () =>
  withFleet(true, (fleet, base) =>
    Effect.gen(function*() {
      const names = Array.from({ length: 100 }, (_, i) => `p${i}`)
      yield* Effect.forEach(names, (name) => fleet.spawn(name), { discard: true })
      yield* Effect.forEach(names, (name) => fleet.ask(name, "hello"), { concurrency: 10, discard: true })
      const fetchPage = () => Effect.promise(() => fetch(`${base}/`).then((r) => r.text()))
      yield* fetchPage()
      let started = performance.now()
      for (let i = 0; i < 50; i++) yield* fetchPage()
      const pageMs = (performance.now() - started) / 50
      started = performance.now()
      for (let i = 0; i < 50; i++) yield* fleet.list()
      const listMs = (performance.now() - started) / 50
      const cursor = (yield* fleet.reports({ last: 1 })).next
      for (let i = 0; i < REPLAYED / 2; i++) yield* fleet.ask(names[i % names.length]!, `${i}`)
      started = performance.now()
      const replay = follow(`${base}/events?since=${cursor}`, REPLAYED)
      yield* Effect.promise(() => replay.done)
      return { pageMs, listMs, replayMs: performance.now() - started, replayed: replay.seen() }
    }))

export const run = () =>
  main("dashboard", "The dashboard: what watching costs the fleet", async () => {
    const plain: Array<number> = []
    const watched: Array<number> = []
    await turns(0) // warm-up
    await turns(STREAMS)
    for (let i = 0; i < ROUNDS; i++) {
      plain.push(await turns(0))
      watched.push(await turns(STREAMS))
    }
    const page = await pages()
    if (page.replayed < REPLAYED) throw new Error(`the replay delivered ${page.replayed} of ${REPLAYED}`)
    const plainMs = median(plain)
    const watchedMs = median(watched)
    return {
      method: `Medians of ${ROUNDS} rounds. ${fmtInt(TURNS)} turns over ${AGENTS} agents of the in-memory Claude ` +
        `(\`Testing.layer\`, TestContext). Baseline: no dashboard. Measured: the dashboard on a loopback port with ` +
        `${STREAMS} event streams open (node:http clients), each reading all ${fmtInt(TURNS * 2)} entries before ` +
        `the clock stops. Pages: \`/\` for 100 agents fetched over the socket, against \`list\` alone; a client ` +
        `reconnecting ${fmtInt(REPLAYED)} entries behind, until it has read them all.`,
      rows: [
        row(`${fmtInt(TURNS)} turns, no dashboard (baseline)`, fmtMs(plainMs, 1), "", "1.00×"),
        row(
          `${fmtInt(TURNS)} turns, ${STREAMS} event streams open`,
          fmtMs(watchedMs, 1),
          `${fmtMs(plainMs, 1)} without`,
          fmtRatio(watchedMs, plainMs)
        ),
        row(
          "per entry per stream, added",
          fmtUs((watchedMs - plainMs) / (TURNS * 2 * STREAMS)),
          `${fmtUs(plainMs / TURNS)} per turn without`
        ),
        row(
          "`/` with 100 agents, over HTTP",
          fmtMs(page.pageMs, 2),
          `${fmtMs(page.listMs, 2)} for list`,
          fmtRatio(page.pageMs, page.listMs)
        ),
        row(`replay of ${fmtInt(REPLAYED)} missed entries`, fmtMs(page.replayMs, 1), "", "")
      ],
      notes: []
    }
  })

if (isMain(import.meta.url)) await run()
