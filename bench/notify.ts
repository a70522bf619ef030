/**
 * Webhook notifications (issue 24): how fast the notifier delivers the report log, in order, to a receiver on
 * 127.0.0.1 that answers 200 at once, against plain sequential `fetch` of the same bodies to the same receiver
 * (the floor for in-order delivery over HTTP), unsigned and signed; and what a notifier that follows every entry
 * adds to a turn of the in-memory fleet, against the same turns with no webhooks layer. Live clock throughout.
 *   npx tsx bench/notify.ts        (BENCH_ENTRIES=2000, BENCH_ROUNDS=4, BENCH_TURNS=1500, BENCH_BLOCK=250)
 */
import { Context, Effect, Layer } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Flotta } from "../packages/core/src/Flotta.js"
import { ReportLog } from "../packages/core/src/ReportLog.js"
import type { ReportEntry } from "../packages/core/src/ReportLog.js"
import * as Testing from "../packages/core/src/Testing.js"
import * as Delivery from "../packages/webhooks/src/Delivery.js"
import * as Webhooks from "../packages/webhooks/src/Webhooks.js"
import type { NotifyTarget } from "../packages/webhooks/src/WebhooksConfig.js"
import { targetOf } from "../packages/webhooks/src/WebhooksConfig.js"
import {
  fmtInt,
  fmtMs,
  fmtRate,
  fmtRatio,
  fmtUs,
  isMain,
  main,
  median,
  percentile,
  row,
  sortedCopy,
  sum
} from "./lib.js"

const ENTRIES = Number(process.env["BENCH_ENTRIES"] ?? 2000)
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 4)
const TURNS = Number(process.env["BENCH_TURNS"] ?? 1500)
const BLOCK = Number(process.env["BENCH_BLOCK"] ?? 250)
const WARMUP_TURNS = 300
const AGENTS = 10
const SECRET = "bench-notify-secret-0123456789"

// ------------------------------------------------------------------------------------------------ the receiver

/**
 * A webhook receiver on 127.0.0.1 in this process: reads each body, answers 200 at once, and keeps the sequence
 * number each delivery id ends in (`<target>-<seq>`), so the order can be checked.
 */
const receiver = async () => {
  let seqs: Array<number> = []
  let signed = 0
  let waiter: { readonly done: () => boolean; readonly resolve: () => void } | undefined
  const server = http.createServer((request, response) => {
    request.resume()
    request.on("end", () => {
      const id = String(request.headers["x-flotta-delivery"] ?? "")
      seqs.push(Number(id.slice(id.lastIndexOf("-") + 1)))
      if (request.headers["x-flotta-signature"] !== undefined) signed++
      response.writeHead(200, { "content-type": "text/plain" }).end("ok")
      if (waiter !== undefined && waiter.done()) {
        const { resolve } = waiter
        waiter = undefined
        resolve()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const hook = {
    url: `http://127.0.0.1:${port}/hook/secret-path`,
    seqs: () => seqs,
    signed: () => signed,
    reset: () => {
      seqs = []
      signed = 0
    },
    /** Resolves once `done` holds (checked after each request taken). */
    until: (done: () => boolean) =>
      done() ? Promise.resolve() : new Promise<void>((resolve) => (waiter = { done, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  return hook
}
type Receiver = Awaited<ReturnType<typeof receiver>>

/** The in-memory fleet, with the webhooks layer above it when there are targets (composed as the tests do). */
const fleetLayer = (notify: ReadonlyArray<NotifyTarget> | undefined) => {
  const fleet = Testing.layer({ model: () => "ok" })
  return notify === undefined ? fleet : Webhooks.layer({ notify }).pipe(Layer.provideMerge(fleet))
}

const targetFor = (url: string, signed: boolean): NotifyTarget => ({
  url,
  events: ["*"],
  ...(signed ? { secret: SECRET } : {})
})

const inOrder = (got: ReadonlyArray<number>, expected: ReadonlyArray<number>, what: string) => {
  if (got.length !== expected.length || got.some((seq, i) => seq !== expected[i])) {
    throw new Error(
      `${what}: the receiver took ${got.length} deliveries, not the ${expected.length} expected in the log's order`
    )
  }
}

/** Wall time and this process's CPU time (user + system; the receiver's share is in both sides alike), in ms. */
interface Elapsed {
  readonly ms: number
  readonly cpuMs: number
}

const mark = () => {
  const cpu = process.cpuUsage()
  return { wall: performance.now(), cpu: (cpu.user + cpu.system) / 1000 }
}

const elapsed = (start: ReturnType<typeof mark>): Elapsed => {
  const end = mark()
  return { ms: end.wall - start.wall, cpuMs: end.cpu - start.cpu }
}

// ------------------------------------------------------------------------------------------------ throughput

/** `count` `closed` entries posted to the log; the time from the first post until the receiver has taken them all. */
const notifierRound = (hook: Receiver, signed: boolean, count = ENTRIES): Promise<Elapsed> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const context = yield* Layer.build(fleetLayer([targetFor(hook.url, signed)]))
      const log = Context.get(context, ReportLog)
      hook.reset()
      const done = hook.until(() => hook.seqs().length >= count)
      const posted: Array<number> = []
      const started = mark()
      for (let i = 0; i < count; i++) {
        posted.push((yield* log.post(`agent-${i % AGENTS}`, "closed", { reason: "closed" })).seq)
      }
      yield* Effect.promise(() => done)
      const time = elapsed(started)
      inOrder(hook.seqs(), posted, "notifier")
      if (hook.signed() !== (signed ? count : 0)) throw new Error(`${hook.signed()} signed deliveries`)
      return time
    }).pipe(Effect.scoped)
  )

interface Body {
  readonly seq: number
  readonly id: string
  readonly body: string
}

/** The bodies the notifier sends for ENTRIES such entries (the same function makes them). */
const bodiesFor = (url: string): Array<Body> => {
  const target = targetOf(targetFor(url, false))
  const at = new Date().toISOString()
  return Array.from({ length: ENTRIES }, (_, i) => {
    const entry: ReportEntry = {
      seq: i + 1,
      at,
      agent: `agent-${i % AGENTS}`,
      kind: "closed",
      data: { reason: "closed" }
    }
    return { seq: entry.seq, id: Delivery.deliveryId(target, entry), body: Delivery.bodyOf(target, entry) }
  })
}

/** The same bodies POSTed one after another with plain `fetch`, each answer read before the next is sent. */
const rawRound = async (hook: Receiver, bodies: ReadonlyArray<Body>, signed: boolean): Promise<Elapsed> => {
  hook.reset()
  const started = mark()
  for (const { body, id } of bodies) {
    const response = await fetch(hook.url, {
      method: "POST",
      body,
      headers: {
        "content-type": "application/json",
        "user-agent": "flotta-webhooks",
        "x-flotta-delivery": id,
        ...(signed ? { "x-flotta-signature": Delivery.signature(SECRET, body) } : {})
      }
    })
    await response.arrayBuffer()
    if (response.status !== 200) throw new Error(`the receiver answered ${response.status}`)
  }
  const time = elapsed(started)
  inOrder(hook.seqs(), bodies.map((b) => b.seq), "raw fetch")
  return time
}

// ------------------------------------------------------------------------------------------------ turns

interface Driver {
  readonly fleet: Flotta
  readonly log: ReportLog
  /** Per-turn wall times of the measured blocks. */
  readonly times: Array<number>
  /** Each measured block as a whole. */
  readonly blocks: Array<Elapsed>
}

const driverOf = (context: Context.Context<Flotta | ReportLog>): Driver => ({
  fleet: Context.get(context, Flotta),
  log: Context.get(context, ReportLog),
  times: [],
  blocks: []
})

/** One pass of the event loop: I/O that is ready (the receiver, the notifier's fetch) is handled. */
const loopPass = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/**
 * `count` sequential turns over the driver's agents, each followed by one pass of the event loop (as turns driven
 * by a child's output are), which is timed with it; then `between`, untimed. The times are kept when `keep`; the
 * block's own time includes `between`.
 */
const block = (driver: Driver, count: number, keep: boolean, between: Effect.Effect<unknown, unknown> = Effect.void) =>
  Effect.gen(function*() {
    const first = mark()
    for (let i = 0; i < count; i++) {
      const started = performance.now()
      yield* driver.fleet.ask(`a${i % AGENTS}`, "hello")
      yield* loopPass
      if (keep) driver.times.push(performance.now() - started)
      yield* between
    }
    if (keep) driver.blocks.push(elapsed(first))
  })

/** A fleet under a notifier that sends every entry to its own receiver. */
const notifiedDriver = (hook: Receiver) =>
  Effect.gen(function*() {
    const driver = driverOf(yield* Layer.build(fleetLayer([targetFor(hook.url, false)])))
    const newest = Effect.map(driver.log.reports({ last: 1 }), (page) => page.next)
    /** Until the receiver has everything posted so far (every entry of the fleet's is wanted by `*`). */
    const drained = Effect.gen(function*() {
      const last = yield* newest
      const started = mark()
      yield* Effect.promise(() => hook.until(() => (hook.seqs().at(-1) ?? 0) >= last))
      return elapsed(started)
    })
    /** The entries after `from`, checked taken once each in the log's order; how many. */
    const check = (from: number, what: string) =>
      Effect.gen(function*() {
        const all: Array<number> = []
        for (let since = from;;) {
          const page = yield* driver.log.reports({ since, limit: 10_000 })
          if (page.entries.length === 0) break
          all.push(...page.entries.map((e) => e.seq))
          since = page.next
        }
        // Entries the agents posted after their spawn may arrive after the reset: only what came after counts.
        const delivered = hook.seqs().filter((seq) => seq > from)
        inOrder(delivered, all, what)
        return delivered.length
      })
    return { ...driver, hook, newest, drained, check }
  })

/**
 * Three fleets in alternating blocks: no webhooks; a notifier left behind (turns back to back, the receiver let
 * catch up after the block); a notifier kept up with (each turn's entries taken before the next turn starts).
 */
const turnsRun = (hooks: readonly [Receiver, Receiver]) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const plain = driverOf(yield* Layer.build(fleetLayer(undefined)))
      const behind = yield* notifiedDriver(hooks[0])
      const paced = yield* notifiedDriver(hooks[1])
      for (const { fleet } of [plain, behind, paced]) {
        for (let i = 0; i < AGENTS; i++) yield* fleet.spawn(`a${i}`, {})
      }
      const from: Array<number> = []
      for (const notified of [behind, paced]) {
        yield* notified.drained
        notified.hook.reset()
        from.push(yield* notified.newest)
      }
      const keepUp = Effect.asVoid(paced.drained)
      yield* block(plain, WARMUP_TURNS, false)
      yield* block(behind, WARMUP_TURNS, false)
      yield* behind.drained
      yield* block(paced, WARMUP_TURNS, false, keepUp)
      const backlogs: Array<number> = []
      const catchUps: Array<Elapsed> = []
      for (let done = 0; done < TURNS; done += BLOCK) {
        const size = Math.min(BLOCK, TURNS - done)
        yield* block(plain, size, true)
        const before = yield* behind.newest
        yield* block(behind, size, true)
        const after = yield* behind.newest
        // Entries are numbered one after another and taken in order: what is left is after the last one taken.
        backlogs.push((after - (behind.hook.seqs().at(-1) ?? from[0]!)) / (after - before))
        catchUps.push(yield* behind.drained)
        yield* block(paced, size, true, keepUp)
      }
      const delivered = (yield* behind.check(from[0]!, "notifier left behind")) +
        (yield* paced.check(from[1]!, "notifier kept up with"))
      return { plain, behind, paced, backlogs, catchUps, entriesPerTurn: delivered / (2 * (TURNS + WARMUP_TURNS)) }
    }).pipe(Effect.scoped)
  )

// ------------------------------------------------------------------------------------------------ the benchmark

const stats = (times: ReadonlyArray<number>) => {
  const sorted = sortedCopy(times)
  return { mean: sum(times) / times.length, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) }
}

export const run = () =>
  main("notify", "Webhook notifications: delivery throughput and what a notifier adds to a turn", async () => {
    const hook = await receiver()
    const bodies = bodiesFor(hook.url)
    const driver = (name: string, round: (count: number) => Promise<Elapsed>) => ({
      name,
      round,
      times: [] as Array<Elapsed>
    })
    const variants = [
      driver("raw", (count) => rawRound(hook, bodies.slice(0, count), false)),
      driver("notifier", (count) => notifierRound(hook, false, count)),
      driver("raw signed", (count) => rawRound(hook, bodies.slice(0, count), true)),
      driver("notifier signed", (count) => notifierRound(hook, true, count))
    ]
    // Warm-up: a quarter round of each.
    for (const variant of variants) await variant.round(Math.ceil(ENTRIES / 4))
    // The order turns by one each round, so none always runs first or after the same one.
    for (let i = 0; i < ROUNDS; i++) {
      for (let k = 0; k < variants.length; k++) {
        const variant = variants[(i + k) % variants.length]!
        variant.times.push(await variant.round(ENTRIES))
      }
    }
    const second = await receiver()
    const turns = await turnsRun([hook, second])
    await hook.close()
    await second.close()

    const perEntry = (ms: number) => ms / ENTRIES
    const wall = variants.map((v) => median(v.times.map((t) => t.ms))) as [number, number, number, number]
    const cpu = variants.map((v) => median(v.times.map((t) => t.cpuMs))) as [number, number, number, number]
    const delivery = (ms: number) => `${fmtMs(perEntry(ms))} per entry (${fmtRate(ENTRIES / (ms / 1000))})`
    const cpuEach = (ms: number) => `${fmtUs(perEntry(ms))} per entry`
    const plain = stats(turns.plain.times)
    const behind = stats(turns.behind.times)
    const paced = stats(turns.paced.times)
    const perTurn = (blocks: ReadonlyArray<Elapsed>, key: keyof Elapsed) => sum(blocks.map((b) => b[key])) / TURNS
    const against = (figure: string, value: number, baseline: number, format = fmtMs) =>
      row(figure, format(value), `${format(baseline)} without`, fmtRatio(value, baseline))
    const [r, n, rs, ns] = wall
    const [rc, nc, rsc, nsc] = cpu
    const plainWall = perTurn(turns.plain.blocks, "ms")
    const plainCpu = perTurn(turns.plain.blocks, "cpuMs")
    const behindWhole = [...turns.behind.blocks, ...turns.catchUps]
    return {
      method: `Delivery: ${fmtInt(ENTRIES)} \`closed\` entries posted straight to the report log (\`log.post\`, ` +
        `${AGENTS} agents in turn) of a fresh in-memory fleet (\`Testing.layer\`) under \`Webhooks.layer({ notify: ` +
        `[{ url, events: ["*"] }] })\`, timed from the first post until the receiver has taken all of them; each ` +
        `round checks they arrived once each, in the log's order. Baseline: the same bodies (made by ` +
        `\`Delivery.bodyOf\`, with the same headers) POSTed one after another with plain \`fetch\`, each answer ` +
        `read before the next is sent: the floor for in-order delivery over HTTP. Signed: the target has a ` +
        `\`secret\` (an HMAC-SHA256 per body; the signed baseline computes it too). Medians of ${ROUNDS} rounds ` +
        `of the four, their order turned by one each round, after a warm-up of a quarter round each. The ` +
        `receiver is a node:http server on 127.0.0.1 in this process that reads each body and answers 200 at ` +
        `once; host CPU = this process's user + system time (the receiver's included, alike on both sides). ` +
        `Turns: three in-memory fleets on the live clock (\`Testing.layer({ model: () => "ok" })\`, ${AGENTS} ` +
        `agents each): one with no webhooks layer (the baseline) and two under \`Webhooks.layer\` with one ` +
        `target, \`events: ["*"]\`, each at a receiver of its own; ${fmtInt(TURNS)} sequential \`fleet.ask\` per ` +
        `fleet after ${WARMUP_TURNS} warm-up turns each, in alternating blocks of ${BLOCK}. A turn is timed from ` +
        `the ask to the end of one pass of the event loop after its answer (as a turn driven by a child's output ` +
        `leaves the loop to other I/O), alike in all three, so what the notifier does meanwhile is in the ` +
        `notified turns' time. Kept up with: after each turn, outside its time, the receiver is let take that ` +
        `turn's entries, so every turn starts with the notifier idle. Left behind: turns back to back; the ` +
        `receiver is let catch up after the block, before the next fleet's block, so no other fleet's turns ` +
        `share the loop with its deliveries. "With its entries delivered" = the block's whole time (the ` +
        `waits, or the catch-up, included) ÷ its turns.`,
      rows: [
        row(`raw \`fetch\`, ${fmtInt(ENTRIES)} POSTs in sequence (baseline)`, delivery(r), "", "1.00×"),
        row(
          `notifier, ${fmtInt(ENTRIES)} entries delivered in order`,
          delivery(n),
          `${fmtMs(perEntry(r))} raw`,
          fmtRatio(n, r)
        ),
        row("raw `fetch`, signed", delivery(rs), `${fmtMs(perEntry(r))} raw unsigned`, fmtRatio(rs, r)),
        row("notifier, signed", delivery(ns), `${fmtMs(perEntry(rs))} raw signed`, fmtRatio(ns, rs)),
        row("  notifier, signed ÷ unsigned", fmtMs(perEntry(ns)), `${fmtMs(perEntry(n))} unsigned`, fmtRatio(ns, n)),
        row("host CPU, raw `fetch` (baseline)", cpuEach(rc), "", "1.00×"),
        row("host CPU, notifier", cpuEach(nc), `${fmtUs(perEntry(rc))} raw`, fmtRatio(nc, rc)),
        row("host CPU, raw `fetch`, signed", cpuEach(rsc), `${fmtUs(perEntry(rc))} raw unsigned`, fmtRatio(rsc, rc)),
        row("host CPU, notifier, signed", cpuEach(nsc), `${fmtUs(perEntry(rsc))} raw signed`, fmtRatio(nsc, rsc)),
        row(
          "  host CPU, notifier, signed ÷ unsigned",
          cpuEach(nsc),
          `${fmtUs(perEntry(nc))} unsigned`,
          fmtRatio(nsc, nc)
        ),
        row("turn, no webhooks: mean (baseline)", fmtMs(plain.mean), "", "1.00×"),
        row("turn, no webhooks: median (baseline)", fmtMs(plain.p50), "", "1.00×"),
        row("turn, no webhooks: p99 (baseline)", fmtMs(plain.p99), "", "1.00×"),
        against("turn, notifier kept up with: mean", paced.mean, plain.mean),
        against("turn, notifier kept up with: median", paced.p50, plain.p50),
        against("turn, notifier kept up with: p99", paced.p99, plain.p99),
        against("turn, notifier left behind: mean", behind.mean, plain.mean),
        against("turn, notifier left behind: median", behind.p50, plain.p50),
        against("turn, notifier left behind: p99", behind.p99, plain.p99),
        row(
          "  added per turn (mean), kept up with / left behind",
          `${fmtUs(paced.mean - plain.mean)} / ${fmtUs(behind.mean - plain.mean)}`,
          `${fmtUs(plain.mean)} per turn without`
        ),
        against("turn with its entries delivered, kept up with", perTurn(turns.paced.blocks, "ms"), plainWall),
        against("turn with its entries delivered, left behind", perTurn(behindWhole, "ms"), plainWall),
        row("host CPU per turn, no webhooks (baseline)", fmtUs(plainCpu), "", "1.00×"),
        against(
          "host CPU per turn with its entries delivered, kept up with",
          perTurn(turns.paced.blocks, "cpuMs"),
          plainCpu,
          fmtUs
        ),
        against(
          "host CPU per turn with its entries delivered, left behind",
          perTurn(behindWhole, "cpuMs"),
          plainCpu,
          fmtUs
        ),
        row("  entries delivered per turn", turns.entriesPerTurn.toFixed(2)),
        row(
          `  left behind: of a block's entries, still to deliver when its ${BLOCK} turns end (median)`,
          `${Math.round(median(turns.backlogs) * 100)} %`
        ),
        row(
          "  left behind: time the receiver then takes to catch up (median)",
          fmtMs(median(turns.catchUps.map((d) => d.ms)), 1)
        )
      ],
      notes: [
        `Per round, ms for ${fmtInt(ENTRIES)} entries (wall / host CPU): ${
          variants.map((v) =>
            `${v.name} ${v.times.map((t) => `${t.ms.toFixed(0)} / ${t.cpuMs.toFixed(0)}`).join(", ")}`
          ).join("; ")
        }.`,
        "What the notifier does for each entry beyond the POST (from Notifier.ts and Delivery.ts): it reads the " +
        "log in pages of 100 after its cursor, makes the delivery id and body, wraps the request in its retry " +
        "schedule with an `AbortSignal.any` of the fiber's signal and a 10 s timeout, and once the 2xx is in, " +
        "updates the target's state (cursor, count, last delivered) and saves it to the store: the cursor that " +
        "lets a restarted host resume. It delivers strictly one at a time, as the raw baseline does.",
        "Signing is an HMAC-SHA256 of a body of ~100 bytes: a few µs, under the noise here (signed ÷ unsigned " +
        "moves either side of 1.00×).",
        "Left behind: an in-memory turn takes ~0.2 ms and posts 2 entries, each about a millisecond's " +
        "delivery here, so a notifier fed turns back to back cannot keep up (most of a block's entries " +
        "are still queued when it ends) and every turn's pass of the loop carries delivery work: the worst case. " +
        "Real turns last seconds, so kept up with is the usual case: the notifier is woken by the turn's " +
        "`turn_started`, and what lands in the turn's time is its wake and the part of its POSTs done in the " +
        "loop pass that ends the turn. With its entries delivered, a kept-up turn costs more than a left-behind " +
        "one: its entries go out a turn's worth at a time, so the notifier wakes, reads the log and waits on " +
        "the loop for each pair instead of working through a backlog in pages of 100 (the likely reason; not " +
        "profiled).",
        "The machine was shared with other work while these ran: wall times on this 2-core machine move by up " +
        "to 2× between rounds (see the rounds above). In four earlier runs on 2026-12-05 the notifier's wall " +
        "time came out at 1.03×, 1.66×, 1.70× and 1.97× the raw fetch's, and its host CPU at 1.21×, 1.72× and " +
        "2.03× (three runs); the medians' ratio is the figure to read, not the absolute times."
      ]
    }
  })

if (isMain(import.meta.url)) await run()
